import FoundationEssentials
import TrialCore

// The event log and the consumers in the store's transactions (since schema 2). A schema-1 store
// opened read-only has neither database: its log reads as empty, with no consumers.

extension StoreReadTransaction {
  /// The log's newest cursor (`meta/events-last`), read once per transaction.
  func currentLogLast() throws -> EventCursor {
    if let logLast { return logLast }
    let last = EventCursor(
      try metaU64(LMDBTrialRepository.MetaKey.logLast), generation: try currentLogGeneration().number)
    logLast = last
    return last
  }

  /// The log's generation (`meta/events-generation`; generation 0 without it), read once per
  /// transaction: every cursor the transaction reads is of it.
  func currentLogGeneration() throws -> LogGeneration {
    if let logGeneration { return logGeneration }
    let found = try Array(LMDBTrialRepository.MetaKey.logGeneration.utf8).withUnsafeBytes { key in
      guard let value = try txn.get(databases.meta, key) else { return LogGeneration.initial }
      return try decoding(key, in: "meta", path: path) { try Self.generation(value) }
    }
    logGeneration = found
    return found
  }

  /// Decodes the record of `meta/events-generation`.
  static func generation(_ value: UnsafeRawBufferPointer) throws -> LogGeneration {
    guard let text = String(validating: value, as: UTF8.self), let generation = LogGeneration(record: text)
    else {
      throw RecordProblem("the event log's generation is unreadable (\(value.count) bytes)")
    }
    return generation
  }

  /// The count is LMDB's entry count of `events`: constant time.
  func eventLogBounds() throws -> EventLogBounds {
    guard let events = databases.events else { return EventLogBounds(generation: try currentLogGeneration()) }
    return EventLogBounds(
      last: try currentLogLast(),
      prunedThrough: EventCursor(try metaU64(LMDBTrialRepository.MetaKey.logPrunedThrough)),
      count: try txn.entryCount(events), generation: try currentLogGeneration())
  }

  func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws {
    guard let events = databases.events, after.sequence < UInt64.max else { return }
    try txn.withCursor(events) { cursor in
      var item = try StoreKeys.withEventKey(after.next) { try cursor.seek($0) }
      while let (key, value) = item {
        let event = try decodeEvent(key: key, value: value)
        guard try body(event) else { return }
        item = try cursor.next()
      }
    }
  }

  func decodeEvent(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> LoggedEvent {
    try decoding(key, in: "events", path: path) {
      try codec.decodeEvent(
        value, cursor: try StoreKeys.eventCursor(key).of(generation: try currentLogGeneration().number))
    }
  }

  func consumer(named name: String) throws -> ConsumerRecord? {
    guard let consumers = databases.consumers, !name.isEmpty, name.utf8.count <= 511 else { return nil }
    return try StoreKeys.withConsumerKey(name) { key in
      guard let value = try txn.get(consumers, key) else { return nil }
      return try decoding(key, in: "consumers", path: path) {
        try stamped(try codec.decodeConsumer(value, name: name))
      }
    }
  }

  func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws {
    guard let consumers = databases.consumers else { return }
    try txn.withCursor(consumers) { cursor in
      var item = try cursor.first()
      while let (key, value) = item {
        let consumer = try decoding(key, in: "consumers", path: path) {
          try stamped(try codec.decodeConsumer(value, name: try StoreKeys.consumerName(key)))
        }
        guard try body(consumer) else { return }
        item = try cursor.next()
      }
    }
  }
}

extension StoreReadTransaction {
  /// The consumer with its position in the log's generation.
  private func stamped(_ consumer: ConsumerRecord) throws -> ConsumerRecord {
    var consumer = consumer
    consumer.acknowledged = consumer.acknowledged.of(generation: try currentLogGeneration().number)
    return consumer
  }
}

extension RecordCodec {
  /// Encodes the event (in `writer`) and puts it under `cursor`, at the end of `events`
  /// (LMDB's append: no search down the tree). A subject the record cannot hold throws a
  /// `RecordProblem`.
  func putEvent(
    _ entry: LedgerEntry, attributes: TrialAttributes, at cursor: EventCursor, in events: LMDBDatabase,
    _ txn: LMDBTransaction, writer: inout ByteWriter
  ) throws {
    writer.reset()
    try encodeEvent(entry, attributes: attributes, into: &writer)
    try StoreKeys.withEventKey(cursor) { key in
      try writer.bytes.withUnsafeBytes { try txn.put(events, key, $0, append: true) }
    }
  }
}

extension StoreWriteTransaction {
  /// The databases schema 2 added, which every store opened for writing has.
  private func logDatabases() throws -> (events: LMDBDatabase, consumers: LMDBDatabase) {
    guard let events = databases.events, let consumers = databases.consumers else {
      throw StoreError(
        .misuse, path: path, problem: "the store has no event log (schema \(databases.schema))")
    }
    return (events, consumers)
  }

  /// Puts the event under the cursor after the newest, at the end of `events` (LMDB's append:
  /// no search down the tree). The delivery time is not kept: it reads back as nil.
  func appendEvent(_ entry: LedgerEntry, attributes: TrialAttributes) throws -> LoggedEvent {
    let events = try logDatabases().events
    let last = try currentLogLast()
    guard last.sequence < UInt64.max else {
      throw StoreError(.tooLarge, path: path, problem: "the event log has used every cursor")
    }
    let cursor = last.next
    do {
      try codec.putEvent(entry, attributes: attributes, at: cursor, in: events, txn, writer: &writer)
    } catch let problem as RecordProblem {
      throw TrialError.invalid(.subject, problem.message)
    }
    logLast = cursor
    logLastChanged = true
    var logged = entry
    logged.deliveredAt = nil
    return LoggedEvent(cursor: cursor, entry: logged, attributes: attributes)
  }

  /// Records the log's generation (a restore, an import).
  func setLogGeneration(_ generation: LogGeneration) throws {
    try Array(LMDBTrialRepository.MetaKey.logGeneration.utf8).withUnsafeBytes { key in
      try Array(generation.record.utf8).withUnsafeBytes { try txn.put(databases.meta, key, $0) }
    }
    logGeneration = generation
    logLast = logLast?.of(generation: generation.number)
  }

  /// Deletes from the oldest end, up to `through` (or the newest event, if before), and moves
  /// `meta/events-pruned-through` there; never back.
  func pruneEvents(through: EventCursor) throws -> Int {
    let events = try logDatabases().events
    let bounds = try eventLogBounds()
    let target = min(through, bounds.last)
    guard target > bounds.prunedThrough else { return 0 }
    var removed = 0
    try txn.withCursor(events) { cursor in
      while let (key, _) = try cursor.first() {
        let position = try decoding(key, in: "events", path: path) { try StoreKeys.eventCursor(key) }
        guard position <= target else { break }
        try cursor.deleteCurrent()
        removed += 1
      }
    }
    try putMeta(LMDBTrialRepository.MetaKey.logPrunedThrough, target.sequence)
    return removed
  }

  func putConsumer(_ consumer: ConsumerRecord) throws {
    let consumers = try logDatabases().consumers
    writer.reset()
    codec.encode(consumer, into: &writer)
    try StoreKeys.withConsumerKey(consumer.name) { key in
      try writer.bytes.withUnsafeBytes { try txn.put(consumers, key, $0) }
    }
  }

  func removeConsumer(named name: String) throws -> Bool {
    let consumers = try logDatabases().consumers
    guard !name.isEmpty, name.utf8.count <= 511 else { return false }
    return try StoreKeys.withConsumerKey(name) { try txn.delete(consumers, $0) }
  }
}
