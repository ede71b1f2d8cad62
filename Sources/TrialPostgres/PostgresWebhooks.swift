import FoundationEssentials
import TrialCore

// Webhook endpoints' state and pending events (`trialwatch.webhook_endpoint` and
// `trialwatch.webhook_event`, since schema version 9), read and written by the transactions.
// An endpoint's state is a JSON object (`WebhookStateJSON`); a pending event is a row of its
// endpoint and cursor. Cursors are stored as their sequence and read back in the log's
// generation, as consumers' positions are.

/// The webhook writes a write transaction keeps until it sends its writes (`writeWebhooks`).
struct WebhookWrites {
  /// The states put, with their JSON.
  var endpoints: [String: (state: WebhookEndpointState, json: String)] = [:]
  /// The events put, by endpoint and sequence.
  var events: [String: [UInt64: WebhookPendingEvent]] = [:]
}

extension PostgresReadTransaction {
  func readWebhookEndpoint(named name: String) throws -> WebhookEndpointState? {
    let result = try query("SELECT state FROM trialwatch.webhook_endpoint WHERE name = $1", [name])
    guard result.rows > 0 else { return nil }
    return try stampedWebhook(try WebhookStateJSON.state(result.string(0, 0), name: name))
  }

  func readWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
    var after: String?
    while true {
      let result = try query(
        """
        SELECT name, state FROM trialwatch.webhook_endpoint WHERE $1::text IS NULL OR name COLLATE "C" > $1
        ORDER BY name COLLATE "C" LIMIT \(Self.page)
        """, [after])
      for row in 0..<result.rows {
        guard let name = result.string(row, 0) else {
          throw PostgresStoreError.damaged("a row of trialwatch.webhook_endpoint without its name")
        }
        guard try body(try stampedWebhook(try WebhookStateJSON.state(result.string(row, 1), name: name)))
        else {
          return
        }
        after = name
      }
      guard result.rows == Self.page else { return }
    }
  }

  func readWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
  {
    guard after.sequence < UInt64(Int64.max) else { return }
    var position = Int64(after.sequence)
    let generation = try logGeneration().number
    while true {
      let result = try query(
        """
        SELECT sequence, attempts, next_attempt_s FROM trialwatch.webhook_event
        WHERE endpoint = $1 AND sequence > $2 ORDER BY sequence LIMIT \(Self.page)
        """, [endpoint, String(position)])
      for row in 0..<result.rows {
        guard let sequence = result.int64(row, 0), let attempts = result.int(row, 1) else {
          throw PostgresStoreError.damaged("an unreadable row of trialwatch.webhook_event")
        }
        let event = WebhookPendingEvent(
          endpoint: endpoint, cursor: EventCursor(UInt64(bitPattern: sequence), generation: generation),
          attempts: attempts, nextAttemptAt: result.double(row, 2).map(PostgresRecords.date))
        guard try body(event) else { return }
        position = sequence
      }
      guard result.rows == Self.page else { return }
    }
  }

  /// The state with its attempts' cursors in the log's generation.
  func stampedWebhook(_ state: WebhookEndpointState) throws -> WebhookEndpointState {
    guard state.attempts.contains(where: { $0.cursor != nil }) else { return state }
    return state.inGeneration(try logGeneration().number)
  }
}

extension PostgresWriteTransaction {
  func putWebhookEndpoint(_ state: WebhookEndpointState) throws {
    try Self.checkWebhookName(state.name)
    webhookWrites.endpoints[state.name] = (state, try WebhookStateJSON.json(state))
  }

  func putWebhookEvent(_ event: WebhookPendingEvent) throws {
    try Self.checkWebhookName(event.endpoint)
    guard event.attempts >= 0, Int32(exactly: event.attempts) != nil,
      event.nextAttemptAt.map({ $0.timeIntervalSinceReferenceDate.isFinite }) != false
    else {
      throw TrialError.invalid(
        .consumer, "the event \(event.cursor) of webhook endpoint \"\(event.endpoint)\" cannot be stored")
    }
    webhookWrites.events[event.endpoint, default: [:]][event.cursor.sequence] = event
  }

  /// Removes what this transaction kept of the endpoint, and its rows, at once: the puts after
  /// it are sent with the others.
  func removeWebhookEndpoint(named name: String) throws -> Bool {
    let kept = webhookWrites.endpoints.removeValue(forKey: name) != nil
    let keptEvents = !(webhookWrites.events.removeValue(forKey: name) ?? [:]).isEmpty
    let removed = try query(
      """
      WITH s AS (DELETE FROM trialwatch.webhook_endpoint WHERE name = $1 RETURNING 1),
        e AS (DELETE FROM trialwatch.webhook_event WHERE endpoint = $1 RETURNING 1)
      SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM e)
      """, [name])
    return kept || keptEvents || (removed.int64(0, 0) ?? 0) > 0
  }

  /// Removes the events kept and the rows at once; an event both kept and in a row counts once.
  func removeWebhookEvents(endpoint: String, through: EventCursor) throws -> Int {
    var removed = Set<UInt64>()
    if let kept = webhookWrites.events[endpoint] {
      for sequence in kept.keys where sequence <= through.sequence { removed.insert(sequence) }
      webhookWrites.events[endpoint] = kept.filter { $0.key > through.sequence }
      if webhookWrites.events[endpoint]?.isEmpty == true { webhookWrites.events[endpoint] = nil }
    }
    let rows = try query(
      "DELETE FROM trialwatch.webhook_event WHERE endpoint = $1 AND sequence <= $2 RETURNING sequence",
      [endpoint, String(min(through.sequence, UInt64(Int64.max)))])
    for row in 0..<rows.rows {
      if let sequence = rows.int64(row, 0) { removed.insert(UInt64(bitPattern: sequence)) }
    }
    return removed.count
  }

  private static func checkWebhookName(_ name: String) throws {
    if let problem = TrialPlan.validateName(name) {
      throw TrialError.invalid(.consumer, "a webhook endpoint's name \(problem)")
    }
  }

  /// The states and events kept, inserted or replaced.
  func writeWebhooks(into query: inout WriteQuery) {
    let endpoints = webhookWrites.endpoints.sorted { $0.key < $1.key }
    let events = webhookWrites.events.sorted { $0.key < $1.key }.flatMap { $0.value.values }
      .sorted { ($0.endpoint, $0.cursor.sequence) < ($1.endpoint, $1.cursor.sequence) }
    webhookWrites = WebhookWrites()
    if !endpoints.isEmpty {
      let names = query.bind(PGArray.literal(endpoints.map { Optional($0.key) }))
      let states = query.bind(PGArray.literal(endpoints.map { Optional($0.value.json) }))
      query.write(
        """
        INSERT INTO trialwatch.webhook_endpoint (name, state)
        SELECT * FROM unnest(\(names)::text[], \(states)::jsonb[])
        ON CONFLICT (name) DO UPDATE SET state = excluded.state
        """)
    }
    guard !events.isEmpty else { return }
    let p = [
      PGArray.literal(events.map { Optional($0.endpoint) }),
      PGArray.literal(events.map { Int64(bitPattern: $0.cursor.sequence) }),
      PGArray.literal(events.map(\.attempts)),
      PGArray.literal(events.map { $0.nextAttemptAt.map(PostgresRecords.sql) }),
    ].map { query.bind($0) }
    query.write(
      """
      INSERT INTO trialwatch.webhook_event (endpoint, sequence, attempts, next_attempt_s)
      SELECT * FROM unnest(\(p[0])::text[], \(p[1])::bigint[], \(p[2])::integer[], \(p[3])::float8[])
      ON CONFLICT (endpoint, sequence) DO UPDATE SET attempts = excluded.attempts,
        next_attempt_s = excluded.next_attempt_s
      """)
  }
}
