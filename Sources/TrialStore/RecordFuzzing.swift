import FoundationEssentials
import TrialCore

// The store's record coding, one record at a time, for the fuzz targets (TrialFuzzTargets):
// a key and a value of any database as a damaged or foreign file would present them, decoded
// as the store decodes them and written again as the store writes them. Not part of the public
// interface: `@_spi(Fuzzing) import TrialStore` reaches it.

/// One record of the store, decoded.
@_spi(Fuzzing)
public struct DecodedStoreRecord {
  /// What the record holds (a `Trial`, a `LedgerEntry`, a `LoggedEvent`...), for comparison.
  public var record: AnyHashable
  /// The key and value the store writes for it.
  public var key: [UInt8]
  public var value: [UInt8]
  /// The record is of the version this store writes, and holds no span read to the microsecond
  /// (a lateness and grace, a webhook attempt's duration and Retry-After, as seconds in a
  /// `Double`, are): written again, it is the same bytes.
  public var current: Bool
  /// Written again, the record reads back the same: not for such a span over 2^31 seconds (68
  /// years), which the store's `Double` of seconds keeps to the microsecond only below that
  /// (`Duration.timeInterval`).
  public var stable = true
}

@_spi(Fuzzing)
public enum StoreRecordCoding {
  /// Every database whose records are decoded, in the order of their codes (a database added
  /// later takes the next code, so that the seeds of the others keep theirs).
  public static let databases = [
    "trials", "subjects", "ledger", "outbox", "events", "consumers", "uses", "cohorts", "meta", "webhooks",
  ]

  /// The name a problem gives the record (`trials/000000000000002a`, `meta/"schema"`...).
  public static func describe(_ key: UnsafeRawBufferPointer, in database: String) -> String {
    StoreKeys.describe(key, in: database)
  }

  /// Decodes the record under `key` in `database` and writes it again. Throws the problem a
  /// store reading it reports (`RecordProblem`'s message), as a `StoreRecordProblem`.
  public static func decode(
    _ database: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
  ) throws(StoreRecordProblem) -> DecodedStoreRecord {
    do {
      return try decodeRecord(database, key: key, value: value)
    } catch let problem as RecordProblem {
      throw StoreRecordProblem(message: problem.message)
    } catch {
      // Only a `RecordProblem` is a documented outcome of decoding a record.
      fatalError("decoding a record of \(database) threw \(type(of: error)): \(error)")
    }
  }

  private static func decodeRecord(
    _ database: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
  ) throws -> DecodedStoreRecord {
    let codec = RecordCodec()
    var writer = ByteWriter()
    switch database {
    case "trials":
      let trial = try codec.decodeTrial(value, id: try StoreKeys.trialID(key))
      try codec.encode(trial, into: &writer)
      return DecodedStoreRecord(
        record: trial, key: StoreKeys.withTrialKey(trial.id) { Array($0) }, value: writer.bytes,
        current: value.first == RecordCodec.trialVersion)
    case "subjects":
      // The subject index: a subject (UTF-8), the id of its active trial.
      guard String(validating: key, as: UTF8.self) != nil else {
        throw RecordProblem("the subject is not valid UTF-8")
      }
      let id = try StoreKeys.trialID(value)
      return DecodedStoreRecord(
        record: id, key: Array(key), value: StoreKeys.withTrialKey(id) { Array($0) }, current: true)
    case "ledger":
      let entry = try codec.decodeLedgerEntry(value, key: try StoreKeys.ledgerKey(key))
      codec.encode(entry, into: &writer)
      return DecodedStoreRecord(
        record: entry, key: StoreKeys.withLedgerKey(entry.id) { Array($0) }, value: writer.bytes,
        current: !carriesSpans(entry.outcome), stable: spansStable(entry.outcome))
    case "outbox":
      // An undelivered ledger entry's key, with an empty value.
      let parsed = try StoreKeys.ledgerKey(key)
      guard value.isEmpty else { throw RecordProblem("an outbox record has a value") }
      return DecodedStoreRecord(record: parsed, key: Array(key), value: [], current: true)
    case "events":
      let cursor = try StoreKeys.eventCursor(key)
      let event = try codec.decodeEvent(value, cursor: cursor)
      try codec.encodeEvent(event.entry, attributes: event.attributes, into: &writer)
      return DecodedStoreRecord(
        record: event, key: StoreKeys.withEventKey(event.cursor) { Array($0) }, value: writer.bytes,
        current: value.first == RecordCodec.eventVersion && !carriesSpans(event.outcome),
        stable: spansStable(event.outcome))
    case "consumers":
      let consumer = try codec.decodeConsumer(value, name: try StoreKeys.consumerName(key))
      codec.encode(consumer, into: &writer)
      return DecodedStoreRecord(
        record: consumer, key: try StoreKeys.withConsumerKey(consumer.name) { Array($0) },
        value: writer.bytes, current: true)
    case "uses":
      let use = try UseRecords.decode(key: key, value: value)
      try UseRecords.encode(use, into: &writer)
      return DecodedStoreRecord(
        record: use, key: UseRecords.withKey(use.scope, use.key) { Array($0) }, value: writer.bytes,
        current: true)
    case "cohorts":
      let cohort = try CohortRecords.cohort(key)
      let counts = try CohortRecords.decode(value)
      CohortRecords.encode(counts, into: &writer)
      return DecodedStoreRecord(
        record: [AnyHashable(cohort), AnyHashable(counts)], key: CohortRecords.key(cohort),
        value: writer.bytes, current: true)
    case "meta":
      return try decodeMeta(key: key, value: value)
    case "webhooks":
      return try decodeWebhookRecord(key: key, value: value)
    default:
      throw RecordProblem("no database \"\(database)\"")
    }
  }

  /// A skip beyond the grace carries its lateness and grace, read to the microsecond.
  private static func carriesSpans(_ outcome: LedgerEntry.Outcome) -> Bool {
    if case .skipped(.beyondGrace) = outcome { true } else { false }
  }

  /// No lateness or grace of the outcome is over 2^31 seconds either way.
  private static func spansStable(_ outcome: LedgerEntry.Outcome) -> Bool {
    guard case .skipped(.beyondGrace(let lateness, let grace)) = outcome else { return true }
    let limit = Duration.seconds(1 << 31)
    return [lateness, grace].allSatisfy { $0 <= limit && $0 >= .zero - limit }
  }

  /// An endpoint's state (its spans read to the microsecond, as a lateness is), or a pending event.
  private static func decodeWebhookRecord(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws
    -> DecodedStoreRecord
  {
    var writer = ByteWriter()
    switch try WebhookRecords.parse(key) {
    case .endpoint(let name):
      let state = try WebhookRecords.decodeState(value, name: name)
      try WebhookRecords.encode(state, into: &writer)
      let spans = WebhookRecords.spans(of: state)
      let limit = Duration.seconds(1 << 31)
      return DecodedStoreRecord(
        record: state, key: WebhookRecords.key(.endpoint(name)), value: writer.bytes, current: spans.isEmpty,
        stable: spans.allSatisfy { $0 <= limit && $0 >= .zero - limit })
    case .event(let name, let sequence):
      let event = try WebhookRecords.decodeEvent(value, endpoint: name, sequence: sequence)
      try WebhookRecords.encode(event, into: &writer)
      return DecodedStoreRecord(
        record: event, key: WebhookRecords.key(.event(endpoint: name, sequence: sequence)),
        value: writer.bytes,
        current: true)
    }
  }

  /// The meta records: numbers (the schema a u32, the others u64) and the last-seen time, read
  /// with the readers the store's transactions use.
  private static func decodeMeta(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws
    -> DecodedStoreRecord
  {
    var reader = ByteReader(value)
    var writer = ByteWriter()
    let record: AnyHashable
    switch String(decoding: key, as: UTF8.self) {
    case LMDBTrialRepository.MetaKey.schema:
      let schema = try reader.u32()
      writer.u32(schema)
      record = schema
    case LMDBTrialRepository.MetaKey.lastSeen:
      let date = try reader.date()
      writer.date(date)
      record = date
    case LMDBTrialRepository.MetaKey.activeCount, LMDBTrialRepository.MetaKey.logLast,
      LMDBTrialRepository.MetaKey.logPrunedThrough:
      let number = try reader.u64()
      writer.u64(number)
      record = number
    default:
      throw RecordProblem("a meta record this version of trialwatch does not know")
    }
    try reader.expectEnd()
    return DecodedStoreRecord(record: record, key: Array(key), value: writer.bytes, current: true)
  }
}

/// What is wrong with a record, as a store reading it reports it.
@_spi(Fuzzing)
public struct StoreRecordProblem: Error, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}
