import FoundationEssentials
import TrialCore

// Keys and records of the event log and its consumers (since schema 2; layout:
// docs/store-format.md), in the conventions of Records.swift.

extension StoreKeys {
  /// An event's key in `events`: its cursor, 8 bytes big-endian, so that the log is in
  /// cursor order.
  @inline(__always)
  static func withEventKey<R>(_ cursor: EventCursor, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows
    -> R
  {
    try withUnsafeBytes(of: cursor.sequence.bigEndian, body)
  }

  static func eventCursor(_ key: UnsafeRawBufferPointer) throws -> EventCursor {
    guard key.count == 8 else { throw RecordProblem("an event key has \(key.count) bytes, not 8") }
    return EventCursor(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
  }

  /// A consumer's key in `consumers`: its name, UTF-8 (1 to 100 bytes, as
  /// `ConsumerRecord.validateName` allows; a name LMDB cannot take as a key is refused).
  static func withConsumerKey<R>(_ name: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
    guard !name.isEmpty, name.utf8.count <= 511 else {
      throw TrialError.invalid(.consumer, ConsumerRecord.validateName(name) ?? "cannot name a consumer")
    }
    var name = name
    return try name.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
  }

  /// The name a consumer key holds.
  static func consumerName(_ key: UnsafeRawBufferPointer) throws -> String {
    guard let name = String(validating: key, as: UTF8.self) else {
      throw RecordProblem("the consumer's name is not valid UTF-8")
    }
    return name
  }
}

extension RecordCodec {
  /// Event records of version 1 (schema 3 and earlier) have no attribute section; this version
  /// writes version 2 and reads both.
  static let eventVersion: UInt8 = 2
  static let consumerVersion: UInt8 = 1

  // MARK: Logged events

  // Version 2 (the cursor is the key; the delivery time is not kept, the ledger has it;
  // version 1 the same without the attribute section):
  //   u8 version, u8 kind (as in a ledger entry), u8 outcome, u8 flags (bit 0: late),
  //   u64 trial id, u32 revision, [f64 reminder offset or time left (days)], date due, date taken,
  //   outcome payload (as in a ledger entry), u8 subject length, subject bytes (UTF-8),
  //   attribute section (the trial's as the event was taken; AttributeRecords.swift).

  func encodeEvent(_ entry: LedgerEntry, attributes: TrialAttributes, into writer: inout ByteWriter) throws {
    let subjectBytes = attributes.subject.utf8
    guard subjectBytes.count <= 255 else { throw RecordProblem("the subject is longer than 255 bytes") }
    let id = entry.id
    writer.u8(Self.eventVersion)
    writer.u8(Self.kindCode(id.kind))
    writer.u8(Self.outcomeCode(entry.outcome))
    writer.u8(entry.isLate ? 1 : 0)
    writer.u64(id.trialID.rawValue)
    writer.u32(id.revision)
    if id.kind.hasSpan { writer.reminderOffset(id.kind.span) }
    writer.date(entry.event.due)
    writer.date(entry.takenAt)
    encodeOutcomePayload(entry.outcome, into: &writer)
    writer.u8(UInt8(subjectBytes.count))
    writer.bytes.append(contentsOf: subjectBytes)
    try writer.attributeSection(attributes)
  }

  func decodeEvent(_ value: UnsafeRawBufferPointer, cursor: EventCursor) throws -> LoggedEvent {
    var reader = ByteReader(value)
    let version = try reader.u8()
    try Self.checkVersion(version, reads: 1...Self.eventVersion)
    let kindCode = try reader.u8()
    let outcomeCode = try reader.u8()
    let flags = try reader.u8()
    guard flags & ~1 == 0 else { throw RecordProblem("unknown flags \(flags)") }
    let trial = TrialID(try reader.u64())
    let revision = try reader.u32()
    let kind = try decodeKind(code: kindCode, &reader)
    let due = try reader.date()
    let takenAt = try reader.date()
    let outcome = try decodeOutcome(code: outcomeCode, &reader)
    let subjectBytes = try reader.bytes(Int(try reader.u8()))
    guard let subject = String(validating: subjectBytes, as: UTF8.self) else {
      throw RecordProblem("the subject is not valid UTF-8")
    }
    let attributes =
      version >= 2 ? try reader.attributeSection(subject: subject) : TrialAttributes(subject: subject)
    try reader.expectEnd()
    let entry = LedgerEntry(
      event: TrialEvent(id: EventID(trialID: trial, revision: revision, kind: kind), due: due),
      outcome: outcome,
      takenAt: takenAt, isLate: flags & 1 != 0)
    return LoggedEvent(cursor: cursor, entry: entry, attributes: attributes)
  }

  // MARK: Consumers

  // Version 1 (the name is the key):
  //   u8 version, u8 flags (bit 0: acknowledged-at present, bit 1: lost-at present),
  //   u64 acknowledged cursor, date created, [date acknowledged-at], u64 lost, [date lost-at].

  func encode(_ consumer: ConsumerRecord, into writer: inout ByteWriter) {
    writer.u8(Self.consumerVersion)
    writer.u8((consumer.acknowledgedAt == nil ? 0 : 1) | (consumer.lostAt == nil ? 0 : 2))
    writer.u64(consumer.acknowledged.sequence)
    writer.date(consumer.createdAt)
    if let acknowledgedAt = consumer.acknowledgedAt { writer.date(acknowledgedAt) }
    writer.u64(consumer.lost)
    if let lostAt = consumer.lostAt { writer.date(lostAt) }
  }

  func decodeConsumer(_ value: UnsafeRawBufferPointer, name: String) throws -> ConsumerRecord {
    var reader = ByteReader(value)
    try Self.checkVersion(try reader.u8(), expected: Self.consumerVersion)
    let flags = try reader.u8()
    guard flags & ~3 == 0 else { throw RecordProblem("unknown flags \(flags)") }
    let acknowledged = EventCursor(try reader.u64())
    let createdAt = try reader.date()
    let acknowledgedAt = flags & 1 != 0 ? try reader.date() : nil
    let lost = try reader.u64()
    let lostAt = flags & 2 != 0 ? try reader.date() : nil
    try reader.expectEnd()
    return ConsumerRecord(
      name: name, acknowledged: acknowledged, createdAt: createdAt, acknowledgedAt: acknowledgedAt,
      lost: lost,
      lostAt: lostAt)
  }
}
