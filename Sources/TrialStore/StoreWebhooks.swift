import FoundationEssentials
import TrialCore

// Webhook endpoints' state and pending events in the file store (database `webhooks`, since
// schema 8; records: WebhookRecords.swift). A store of an earlier schema read as it is
// (`LMDBStoreReader`) has none. Cursors are stored as their sequence and read back in the log's
// generation, as consumers' positions are.

extension StoreReadTransaction {
  func webhookEndpoint(named name: String) throws -> WebhookEndpointState? {
    guard let webhooks = databases.webhooks, WebhookRecords.keyable(name) else { return nil }
    return try WebhookRecords.key(.endpoint(name)).withUnsafeBytes { key in
      guard let value = try txn.get(webhooks, key) else { return nil }
      let state = try decoding(key, in: "webhooks", path: path) {
        try WebhookRecords.decodeState(value, name: name)
      }
      return try stamped(state)
    }
  }

  /// In name order: each endpoint's state, then a seek past its events to the next name.
  func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
    guard let webhooks = databases.webhooks else { return }
    try txn.withCursor(webhooks) { cursor in
      var item = try cursor.first()
      while let (key, value) = item {
        let name: String
        switch try decoding(key, in: "webhooks", path: path, { try WebhookRecords.parse(key) }) {
        case .endpoint(let endpoint):
          name = endpoint
          let state = try decoding(key, in: "webhooks", path: path) {
            try WebhookRecords.decodeState(value, name: endpoint)
          }
          guard try body(try stamped(state)) else { return }
        case .event(let endpoint, _):
          // Events of an endpoint without a state.
          name = endpoint
        }
        item = try (Array(name.utf8) + [1]).withUnsafeBytes { try cursor.seek($0) }
      }
    }
  }

  func scanWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
  {
    guard let webhooks = databases.webhooks, WebhookRecords.keyable(endpoint), after.sequence < .max else {
      return
    }
    let prefix = WebhookRecords.eventPrefix(endpoint)
    let generation = try currentLogGeneration().number
    try txn.withCursor(webhooks) { cursor in
      var item = try WebhookRecords.key(.event(endpoint: endpoint, sequence: after.sequence + 1))
        .withUnsafeBytes {
          try cursor.seek($0)
        }
      while let (key, value) = item, key.starts(with: prefix) {
        let event = try decoding(key, in: "webhooks", path: path) {
          guard case .event(_, let sequence) = try WebhookRecords.parse(key) else {
            throw RecordProblem("not a pending event's key")
          }
          return try WebhookRecords.decodeEvent(value, endpoint: endpoint, sequence: sequence)
        }
        var stamped = event
        stamped.cursor = event.cursor.of(generation: generation)
        guard try body(stamped) else { return }
        item = try cursor.next()
      }
    }
  }

  /// The state with its attempts' cursors in the log's generation.
  private func stamped(_ state: WebhookEndpointState) throws -> WebhookEndpointState {
    guard state.attempts.contains(where: { $0.cursor != nil }) else { return state }
    return state.inGeneration(try currentLogGeneration().number)
  }
}

extension StoreWriteTransaction {
  func putWebhookEndpoint(_ state: WebhookEndpointState) throws {
    let webhooks = try webhooksDatabase(name: state.name)
    writer.reset()
    do {
      try WebhookRecords.encode(state, into: &writer)
    } catch let problem as RecordProblem {
      throw TrialError.invalid(
        .consumer, "the state of webhook endpoint \"\(state.name)\": \(problem.message)")
    }
    try WebhookRecords.key(.endpoint(state.name)).withUnsafeBytes { key in
      try writer.bytes.withUnsafeBytes { try txn.put(webhooks, key, $0) }
    }
  }

  func removeWebhookEndpoint(named name: String) throws -> Bool {
    guard let webhooks = databases.webhooks, WebhookRecords.keyable(name) else { return false }
    let state = try WebhookRecords.key(.endpoint(name)).withUnsafeBytes { try txn.delete(webhooks, $0) }
    let events = try removeEvents(of: name, in: webhooks) { _ in true }
    return state || events > 0
  }

  func putWebhookEvent(_ event: WebhookPendingEvent) throws {
    let webhooks = try webhooksDatabase(name: event.endpoint)
    writer.reset()
    do {
      try WebhookRecords.encode(event, into: &writer)
    } catch let problem as RecordProblem {
      throw TrialError.invalid(
        .consumer, "the event \(event.cursor) of webhook endpoint \"\(event.endpoint)\": \(problem.message)")
    }
    try WebhookRecords.key(.event(endpoint: event.endpoint, sequence: event.cursor.sequence)).withUnsafeBytes
    {
      key in
      try writer.bytes.withUnsafeBytes { try txn.put(webhooks, key, $0) }
    }
  }

  func removeWebhookEvents(endpoint: String, through: EventCursor) throws -> Int {
    guard let webhooks = databases.webhooks, WebhookRecords.keyable(endpoint) else { return 0 }
    return try removeEvents(of: endpoint, in: webhooks) { $0 <= through.sequence }
  }

  /// Removes the endpoint's events from its first on, while `removes` takes their sequence;
  /// returns how many.
  private func removeEvents(of endpoint: String, in webhooks: LMDBDatabase, while removes: (UInt64) -> Bool)
    throws -> Int
  {
    let prefix = WebhookRecords.eventPrefix(endpoint)
    var removed = 0
    try txn.withCursor(webhooks) { cursor in
      while let (key, _) = try prefix.withUnsafeBytes({ try cursor.seek($0) }), key.starts(with: prefix) {
        let parsed = try decoding(key, in: "webhooks", path: path) { try WebhookRecords.parse(key) }
        guard case .event(_, let sequence) = parsed, removes(sequence) else { break }
        try cursor.deleteCurrent()
        removed += 1
      }
    }
    return removed
  }

  /// The database, for a write of endpoint `name`, which must be one as a plan's name is.
  private func webhooksDatabase(name: String) throws -> LMDBDatabase {
    if let problem = TrialPlan.validateName(name) {
      throw TrialError.invalid(.consumer, "a webhook endpoint's name \(problem)")
    }
    guard let webhooks = databases.webhooks else {
      throw StoreError(.damaged, path: path, problem: "the store has no \"webhooks\" database")
    }
    return webhooks
  }
}

extension StoreVerifier {
  /// Each record of `webhooks` has a well-formed key (an endpoint's name as a plan's, or such a
  /// name, a 0 byte and a cursor) and decodes; no pending event is after the log's last cursor.
  /// (An endpoint's events may outlive its state: the contract allows it.)
  func checkWebhooks() throws {
    guard let webhooks = databases.webhooks else { return }
    try txn.forEach(webhooks) { key, value in
      guard let parsed = try readable("webhooks", key, { try WebhookRecords.parse(key) }) else { return }
      switch parsed {
      case .endpoint(let name):
        if let problem = TrialPlan.validateName(name) {
          report.add("webhooks", key, "invalid webhook endpoint name: it \(problem)")
        }
        _ = try readable("webhooks", key) { try WebhookRecords.decodeState(value, name: name) }
      case .event(let name, let sequence):
        if let problem = TrialPlan.validateName(name) {
          report.add("webhooks", key, "invalid webhook endpoint name: it \(problem)")
        }
        _ = try readable("webhooks", key) {
          try WebhookRecords.decodeEvent(value, endpoint: name, sequence: sequence)
        }
        if sequence > report.logLast.sequence {
          report.add(
            "webhooks", key,
            "the pending event \(EventCursor(sequence)) is after the event log's last cursor \(report.logLast)"
          )
        }
      }
    }
  }
}
