import FoundationEssentials
import TrialCore

/// Reads of the shared store, each one statement on the transaction's connection (a
/// repeatable-read, read-only transaction for `read`; the write transaction's own for
/// `write`). Scans read in pages, so that a large table never sits in memory at once.
class PostgresReadTransaction: TrialReadTransaction {
  let connection: PGConnection
  /// The shards this node owns, with their epochs, when the transaction began: the outbox
  /// it delivers is theirs.
  let owned: [Int: Int64]
  /// This node's name: its own undelivered entries are in its outbox wherever their shard.
  let nodeName: String
  static let page = 1_000
  /// The log's generation, read once per transaction: every cursor it reads is of it.
  var generation: LogGeneration?

  init(connection: PGConnection, owned: [Int: Int64], node: String) {
    self.connection = connection
    self.owned = owned
    self.nodeName = node
  }

  @discardableResult
  func query(_ sql: String, _ parameters: [String?] = []) throws -> PGResult {
    try connection.execute(sql, parameters)
  }

  func trial(_ id: TrialID) throws -> Trial? {
    let statement = PostgresRecords.trialStatement(id)
    let result = try query(statement.sql, statement.parameters)
    return result.rows == 0 ? nil : try TrialRows(result).trial(0)
  }

  func activeTrialID(subject: String) throws -> TrialID? {
    let result = try query(
      "SELECT trial_id FROM trialwatch.trial WHERE subject = $1 AND state IN ('active', 'paused', 'grace')",
      [subject])
    return result.int64(0, 0).map(PostgresRecords.trialID)
  }

  func latestTrialID(subject: String) throws -> TrialID? {
    let result = try query(
      """
      SELECT trial_id FROM trialwatch.trial WHERE subject = $1
      ORDER BY state IN ('active', 'paused', 'grace') DESC, start_order DESC LIMIT 1
      """, [subject])
    return result.rows == 0 ? nil : result.int64(0, 0).map(PostgresRecords.trialID)
  }

  func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws {
    // Trial ids are unsigned; the table orders their signed form, so a scan runs over the
    // non-negative half first (ids below 2^63), then the negative half.
    var position = after
    while true {
      let start = position.map { Int64(bitPattern: $0.rawValue) }
      let sql: String
      if let start, start < 0 {
        sql = "trial_id < 0 AND trial_id > $1"
      } else if start != nil {
        sql = "(trial_id > $1 OR trial_id < 0)"
      } else {
        sql = "$1::bigint IS NULL"
      }
      let result = try query(
        """
        SELECT \(PostgresRecords.trialColumns) FROM trialwatch.trial WHERE \(sql)
        ORDER BY trial_id < 0, trial_id LIMIT \(Self.page)
        """, [start.map { String($0) }])
      let trials = try TrialRows(result)
      for row in 0..<result.rows {
        let trial = try trials.trial(row)
        guard try body(trial) else { return }
        position = trial.id
      }
      if result.rows < Self.page { return }
    }
  }

  func ledgerEntry(_ id: EventID) throws -> LedgerEntry? {
    let result = try query(
      """
      SELECT \(PostgresRecords.entryColumns) FROM trialwatch.ledger
      WHERE trial_id = $1 AND revision = $2 AND offset_ms = $3
      """, PostgresRecords.key(id))
    return try PostgresRecords.ledgerEntries(result).first
  }

  func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] {
    let result = try query(
      "SELECT \(PostgresRecords.entryColumns) FROM trialwatch.ledger WHERE trial_id = $1",
      [PostgresRecords.sql(trial)])
    return try PostgresRecords.ledgerEntries(result).sorted { $0.id < $1.id }
  }

  /// The outbox of this node: the undelivered entries of the shards it owns (another node's
  /// become this node's to deliver when their shard changes hands), and those it took
  /// itself, wherever their shard now is (a restarted node delivers what it took before).
  func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws {
    let result = try query(
      """
      SELECT \(PostgresRecords.entryColumns) FROM trialwatch.ledger
      WHERE delivered_s IS NULL AND (shard = ANY($1::integer[]) OR node = $2)
      """, [PGArray.literal(owned.keys.sorted()), nodeName])
    for entry in try PostgresRecords.ledgerEntries(result).sorted(by: { $0.id < $1.id }) {
      guard try body(entry) else { return }
    }
  }

  func lastSeenWallTime() throws -> Date? {
    try query("SELECT last_seen_s FROM trialwatch.log_head").double(0, 0).map(PostgresRecords.date)
  }

  func eventLogBounds() throws -> EventLogBounds {
    let result = try query(
      """
      SELECT last, pruned_through, kept, \(PostgresRecords.generationColumn) FROM trialwatch.log_head
      """)
    guard let last = result.int64(0, 0), let pruned = result.int64(0, 1), let count = result.int(0, 2) else {
      throw PostgresStoreError.damaged("trialwatch.log_head is unreadable")
    }
    let generation = try PostgresRecords.generation(result.string(0, 3))
    self.generation = generation
    return EventLogBounds(
      last: EventCursor(UInt64(bitPattern: last)), prunedThrough: EventCursor(UInt64(bitPattern: pruned)),
      count: count, generation: generation)
  }

  /// The log's generation, as the transaction read it first.
  func logGeneration() throws -> LogGeneration {
    if let generation { return generation }
    let found = try PostgresRecords.generation(
      query("SELECT \(PostgresRecords.generationColumn)").string(0, 0))
    generation = found
    return found
  }

  func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws {
    guard after.sequence < UInt64(Int64.max) else { return }
    var position = Int64(after.sequence)
    while true {
      let result = try query(
        """
        SELECT \(PostgresRecords.eventColumns)
        FROM trialwatch.event_log WHERE cursor > $1 ORDER BY cursor LIMIT \(Self.page)
        """, [String(position)])
      var events = try EventRows(result)
      events.generation = try logGeneration().number
      for row in 0..<result.rows {
        guard let event = try events.event(row) else {
          throw PostgresStoreError.damaged("a row of trialwatch.event_log without its cursor")
        }
        guard try body(event) else { return }
        position = Int64(bitPattern: event.cursor.sequence)
      }
      if result.rows < Self.page { return }
    }
  }

  func consumer(named name: String) throws -> ConsumerRecord? {
    let result = try query(
      "SELECT \(PostgresRecords.consumerColumns) FROM trialwatch.consumer WHERE name = $1", [name])
    guard result.rows > 0 else { return nil }
    var rows = try ConsumerRows(result)
    rows.generation = try logGeneration().number
    return try rows.consumer(0)
  }

  func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
    try readSubjectUse(scope: scope, key: key)
  }

  func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
    try readSubjectUses(after: after, body)
  }

  func webhookEndpoint(named name: String) throws -> WebhookEndpointState? {
    try readWebhookEndpoint(named: name)
  }

  func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
    try readWebhookEndpoints(body)
  }

  func scanWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
  {
    try readWebhookEvents(endpoint: endpoint, after: after, body)
  }

  func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws {
    let result = try query(
      "SELECT \(PostgresRecords.consumerColumns) FROM trialwatch.consumer ORDER BY name COLLATE \"C\"")
    var consumers = try ConsumerRows(result)
    consumers.generation = try logGeneration().number
    for row in 0..<result.rows {
      guard try body(try consumers.consumer(row)) else { return }
    }
  }
}
