import FoundationEssentials
import Glibc
import TrialCore

// Keys and record encodings of the store (layout: docs/store-format.md).
//
// Keys are big-endian so that LMDB's byte order is numeric order. Values start with a
// version byte; numbers in values are little-endian; dates are the bit pattern of their
// `timeIntervalSinceReferenceDate`, so every date reads back exactly as it was written.

/// A record that does not decode: what is wrong with it (the caller adds which record).
struct RecordProblem: Error {
  var message: String

  init(_ message: String) {
    self.message = message
  }
}

enum StoreKeys {
  /// Trials and the subject index's values: the trial id, 8 bytes big-endian.
  @inline(__always)
  static func withTrialKey<R>(_ id: TrialID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try withUnsafeBytes(of: id.rawValue.bigEndian, body)
  }

  static func trialID(_ key: UnsafeRawBufferPointer) throws -> TrialID {
    guard key.count == 8 else { throw RecordProblem("a trial key has \(key.count) bytes, not 8") }
    return TrialID(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
  }

  /// The ledger and outbox key of an event: trial id (8 bytes), revision (4 bytes), order
  /// (8 bytes, `EventID.order`: a pause, a resume, reminders by descending offset, then the
  /// expiry), all big-endian: one trial's entries are contiguous, by revision.
  @inline(__always)
  static func withLedgerKey<R>(_ id: EventID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    let order = id.order
    let key = (
      id.trialID.rawValue.bigEndian, id.revision.bigEndian, UInt32(truncatingIfNeeded: order >> 32).bigEndian,
      UInt32(truncatingIfNeeded: order).bigEndian
    )
    return try withUnsafeBytes(of: key) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<20])) }
  }

  struct LedgerKey: Hashable {
    var trial: UInt64
    var revision: UInt32
    var order: UInt64

    var text: String {
      guard let kind = EventID.kind(order: order) else {
        return "\(TrialID(trial))-r\(revision)-0x" + zeroPadded(order, width: 16, radix: 16)
      }
      return EventID(trialID: TrialID(trial), revision: revision, kind: kind).description
    }
  }

  static func ledgerKey(_ key: UnsafeRawBufferPointer) throws -> LedgerKey {
    guard key.count == 20 else { throw RecordProblem("a ledger key has \(key.count) bytes, not 20") }
    let high = UInt64(UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
    let low = UInt64(UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt32.self)))
    return LedgerKey(
      trial: UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)),
      revision: UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
      order: high << 32 | low)
  }
}

/// Appends little-endian numbers to a byte buffer.
struct ByteWriter {
  var bytes: [UInt8] = []

  /// Empties the buffer, keeping its capacity for the next record.
  mutating func reset() { bytes.removeAll(keepingCapacity: true) }

  mutating func u8(_ value: UInt8) { bytes.append(value) }

  mutating func u32(_ value: UInt32) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  mutating func u64(_ value: UInt64) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  mutating func f64(_ value: Double) { u64(value.bitPattern) }

  mutating func date(_ value: Date) { f64(value.timeIntervalSinceReferenceDate) }

  /// A reminder offset (whole milliseconds) as the days it spans.
  mutating func reminderOffset(_ value: Duration) { f64(value.timeInterval / ByteReader.secondsPerDay) }

  /// A lateness or grace span in seconds.
  mutating func span(_ value: Duration) { f64(value.timeInterval) }
}

/// Reads little-endian numbers from a record, failing with a `RecordProblem` past its end.
struct ByteReader {
  let buffer: UnsafeRawBufferPointer
  var offset = 0

  init(_ buffer: UnsafeRawBufferPointer) {
    self.buffer = buffer
  }

  private mutating func take(_ count: Int) throws -> Int {
    guard buffer.count - offset >= count else {
      throw RecordProblem("the record ends early (\(buffer.count) bytes)")
    }
    defer { offset += count }
    return offset
  }

  mutating func u8() throws -> UInt8 { buffer[try take(1)] }

  mutating func u32() throws -> UInt32 {
    UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: try take(4), as: UInt32.self))
  }

  mutating func u64() throws -> UInt64 {
    UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: try take(8), as: UInt64.self))
  }

  mutating func f64() throws -> Double { Double(bitPattern: try u64()) }

  mutating func date() throws -> Date {
    let value = try f64()
    guard value.isFinite else { throw RecordProblem("a date is not a finite number") }
    return Date(timeIntervalSinceReferenceDate: value)
  }

  /// Reminder offsets are stored in days.
  static let secondsPerDay: Double = 86_400

  /// A reminder offset: days that make a positive whole number of milliseconds, written as
  /// `ByteWriter.reminderOffset(_:)` writes them.
  mutating func reminderOffset() throws -> Duration {
    let days = try f64()
    let milliseconds = days * Self.secondsPerDay * 1000
    guard days.isFinite, milliseconds >= 1, milliseconds < 9e18 else {
      throw RecordProblem("a reminder offset is not positive")
    }
    let offset = Duration.milliseconds(Int64(milliseconds.rounded()))
    guard (offset.timeInterval / Self.secondsPerDay).bitPattern == days.bitPattern else {
      throw RecordProblem("a reminder offset is not a whole number of milliseconds")
    }
    return offset
  }

  /// A span in seconds.
  mutating func span() throws -> Duration {
    let seconds = try f64()
    guard seconds.isFinite else { throw RecordProblem("a span is not a finite number") }
    return Duration(timeInterval: seconds)
  }

  mutating func bytes(_ count: Int) throws -> UnsafeRawBufferPointer {
    let start = try take(count)
    return UnsafeRawBufferPointer(rebasing: buffer[start..<start + count])
  }

  func expectEnd() throws {
    guard offset == buffer.count else {
      throw RecordProblem("the record has \(buffer.count - offset) unexpected bytes at its end")
    }
  }
}

/// Encodes and decodes trials and ledger entries. Keeps the last reminder schedules it
/// decoded, so that a scan over many trials with the same schedule shares one array.
final class RecordCodec {
  /// Trial records of version 1 (schema 3 and earlier) have no attribute section; this version
  /// writes version 2 and reads both.
  static let trialVersion: UInt8 = 2
  static let ledgerVersion: UInt8 = 1

  private var scheduleCache: [(bytes: [UInt8], schedule: ReminderSchedule)] = []

  // MARK: Trials

  // Version 2 (version 1 the same without the attribute section):
  //   u8 version, u8 state, u8 flags (bit 0: endedAt present, bit 1: paused-since present,
  //   bit 2: paused-until present; bits 1 and 2 since schema 6; bit 4: grace present, since
  //   schema 9), u8 reminder count n, u32 revision, date start, date end, [date endedAt],
  //   [date paused since], [date paused until], [u64 grace (milliseconds, positive)],
  //   n × f64 reminder offset (days), u8 subject length, subject bytes (UTF-8), attribute
  //   section (AttributeRecords.swift).

  /// The flag of a trial record's grace span (schema 9), and every flag a trial record may have.
  static let graceFlag: UInt8 = 1 << 4
  static let trialFlags: UInt8 = 7 | graceFlag

  static func stateCode(_ state: TrialState) -> UInt8 {
    switch state {
    case .active: 0
    case .expired: 1
    case .converted: 2
    case .cancelled: 3
    case .paused: 4
    case .grace: 5
    }
  }

  static func state(code: UInt8) throws -> TrialState {
    switch code {
    case 0: .active
    case 1: .expired
    case 2: .converted
    case 3: .cancelled
    case 4: .paused
    case 5: .grace
    default: throw RecordProblem("unknown trial state \(code)")
    }
  }

  func encode(_ trial: Trial, into writer: inout ByteWriter) throws {
    let subject = trial.subject.utf8
    guard subject.count <= 255 else { throw RecordProblem("the subject is longer than 255 bytes") }
    guard trial.reminders.offsets.count <= 255 else { throw RecordProblem("too many reminders") }
    writer.u8(Self.trialVersion)
    writer.u8(Self.stateCode(trial.state))
    let grace = trial.grace.roundedMilliseconds
    guard grace >= 0 else { throw RecordProblem("the grace is negative") }
    writer.u8(
      (trial.endedAt == nil ? 0 : 1) | (trial.pause == nil ? 0 : 2) | (trial.pause?.until == nil ? 0 : 4)
        | (grace == 0 ? 0 : Self.graceFlag))
    writer.u8(UInt8(trial.reminders.offsets.count))
    writer.u32(trial.revision)
    writer.date(trial.period.startDate)
    writer.date(trial.period.endDate)
    if let endedAt = trial.endedAt { writer.date(endedAt) }
    if let pause = trial.pause {
      writer.date(pause.since)
      if let until = pause.until { writer.date(until) }
    }
    if grace > 0 { writer.u64(UInt64(grace)) }
    for offset in trial.reminders.offsets { writer.reminderOffset(offset) }
    writer.u8(UInt8(subject.count))
    writer.bytes.append(contentsOf: subject)
    try writer.attributeSection(trial.attributes)
  }

  static func checkVersion(_ version: UInt8, expected: UInt8) throws {
    try checkVersion(version, reads: expected...expected)
  }

  static func checkVersion(_ version: UInt8, reads versions: ClosedRange<UInt8>) throws {
    guard versions.contains(version) else {
      let read =
        versions.count == 1 ? "\(versions.lowerBound)" : "\(versions.lowerBound) to \(versions.upperBound)"
      throw RecordProblem(
        "record version \(version) is not one this version of trialwatch reads (it reads \(read))")
    }
  }

  /// The state alone, without decoding the rest.
  func trialState(_ value: UnsafeRawBufferPointer) throws -> TrialState {
    var reader = ByteReader(value)
    try Self.checkVersion(try reader.u8(), reads: 1...Self.trialVersion)
    return try Self.state(code: try reader.u8())
  }

  func decodeTrial(_ value: UnsafeRawBufferPointer, id: TrialID) throws -> Trial {
    var reader = ByteReader(value)
    let version = try reader.u8()
    try Self.checkVersion(version, reads: 1...Self.trialVersion)
    let state = try Self.state(code: try reader.u8())
    let flags = try reader.u8()
    guard flags & ~Self.trialFlags == 0, flags & 6 != 4 else { throw RecordProblem("unknown flags \(flags)") }
    let reminderCount = Int(try reader.u8())
    let revision = try reader.u32()
    let start = try reader.date()
    let end = try reader.date()
    let endedAt = flags & 1 != 0 ? try reader.date() : nil
    let pause =
      flags & 2 != 0
      ? TrialPause(since: try reader.date(), until: flags & 4 != 0 ? try reader.date() : nil) : nil
    var grace = Duration.zero
    if flags & Self.graceFlag != 0 {
      let milliseconds = try reader.u64()
      guard milliseconds > 0, milliseconds < EventID.maximumMilliseconds else {
        throw RecordProblem("the grace is out of range")
      }
      grace = .milliseconds(Int64(milliseconds))
    }
    let schedule = try decodeSchedule(try reader.bytes(reminderCount * 8), count: reminderCount)
    let subjectLength = Int(try reader.u8())
    let subjectBytes = try reader.bytes(subjectLength)
    guard let subject = String(validating: subjectBytes, as: UTF8.self) else {
      throw RecordProblem("the subject is not valid UTF-8")
    }
    let attributes =
      version >= 2 ? try reader.attributeSection(subject: subject) : TrialAttributes(subject: subject)
    try reader.expectEnd()
    return Trial(
      id: id, attributes: attributes, period: TrialPeriod(startDate: start, endDate: end), state: state,
      reminders: schedule, revision: revision, endedAt: endedAt, pause: pause, grace: grace)
  }

  private func decodeSchedule(_ bytes: UnsafeRawBufferPointer, count: Int) throws -> ReminderSchedule {
    if count == 0 { return .none }
    for cached in scheduleCache where cached.bytes.count == bytes.count {
      if cached.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
        return cached.schedule
      }
    }
    var reader = ByteReader(bytes)
    var offsets: [Duration] = []
    for _ in 0..<count { offsets.append(try reader.reminderOffset()) }
    let schedule: ReminderSchedule
    do {
      schedule = try ReminderSchedule(offsets)
    } catch {
      throw RecordProblem("invalid reminders: \(error)")
    }
    guard schedule.offsets == offsets else {
      throw RecordProblem("the reminder offsets are not in canonical form")
    }
    if scheduleCache.count == 8 { scheduleCache.removeFirst() }
    scheduleCache.append((Array(bytes), schedule))
    return schedule
  }

  // MARK: Ledger entries

  // Version 1 (the trial id, revision and event order are in the key):
  //   u8 version, u8 kind (0 expiry, 1 reminder, 2 paused, 3 resumed, 4 grace-started; 2 and 3
  //   since schema 6, 4 since schema 9),
  //   u8 outcome, u8 flags (bit 0: late, bit 1: delivered), [f64 reminder offset or time left
  //   (days)], date due, date taken, [date delivered], outcome payload:
  //     0 fired, 1 already due at start, 2 already due at extension, 4 superseded by expiry,
  //     6 already due at resume: nothing;
  //     3 superseded by reminder: u64 trial id, u32 revision, u8 kind, [f64 offset];
  //     5 beyond grace: f64 lateness, f64 grace (seconds).

  /// An event kind's code (a reminder's offset goes where the record puts it).
  static func kindCode(_ kind: EventKind) -> UInt8 {
    switch kind {
    case .expiry: 0
    case .reminder: 1
    case .paused: 2
    case .resumed: 3
    case .graceStarted: 4
    }
  }

  /// The kind whose code was read; a reminder's offset, or a pause's or resume's time left, is
  /// read from `reader`.
  func decodeKind(code: UInt8, _ reader: inout ByteReader) throws -> EventKind {
    switch code {
    case 0: return .expiry
    case 1: return .reminder(before: try reader.reminderOffset())
    case 2: return .paused(left: try reader.reminderOffset())
    case 3: return .resumed(left: try reader.reminderOffset())
    case 4: return .graceStarted
    default: throw RecordProblem("unknown event kind \(code)")
    }
  }

  /// A kind's code, then the span it carries, if any.
  func encodeKind(_ kind: EventKind, into writer: inout ByteWriter) {
    writer.u8(Self.kindCode(kind))
    if kind.hasSpan { writer.reminderOffset(kind.beforeEnd) }
  }

  func encode(_ entry: LedgerEntry, into writer: inout ByteWriter) {
    writer.u8(Self.ledgerVersion)
    let kind = entry.event.kind
    writer.u8(Self.kindCode(kind))
    writer.u8(Self.outcomeCode(entry.outcome))
    writer.u8((entry.isLate ? 1 : 0) | (entry.deliveredAt == nil ? 0 : 2))
    if kind.hasSpan { writer.reminderOffset(kind.beforeEnd) }
    writer.date(entry.event.due)
    writer.date(entry.takenAt)
    if let delivered = entry.deliveredAt { writer.date(delivered) }
    encodeOutcomePayload(entry.outcome, into: &writer)
  }

  static func outcomeCode(_ outcome: LedgerEntry.Outcome) -> UInt8 {
    switch outcome {
    case .fired: 0
    case .skipped(.alreadyDueAtStart): 1
    case .skipped(.alreadyDueAtExtension): 2
    case .skipped(.supersededByReminder): 3
    case .skipped(.supersededByExpiry): 4
    case .skipped(.beyondGrace): 5
    case .skipped(.alreadyDueAtResume): 6
    }
  }

  /// What follows the dates of a ledger or event record: the superseding event, or the
  /// lateness and grace.
  func encodeOutcomePayload(_ outcome: LedgerEntry.Outcome, into writer: inout ByteWriter) {
    switch outcome {
    case .skipped(.supersededByReminder(let by)):
      writer.u64(by.trialID.rawValue)
      writer.u32(by.revision)
      encodeKind(by.kind, into: &writer)
    case .skipped(.beyondGrace(let lateness, let grace)):
      writer.span(lateness)
      writer.span(grace)
    default:
      break
    }
  }

  func decodeOutcome(code: UInt8, _ reader: inout ByteReader) throws -> LedgerEntry.Outcome {
    switch code {
    case 0: return .fired
    case 1: return .skipped(.alreadyDueAtStart)
    case 2: return .skipped(.alreadyDueAtExtension)
    case 3:
      let trial = TrialID(try reader.u64())
      let revision = try reader.u32()
      let byKindCode = try reader.u8()
      let byKind = try decodeKind(code: byKindCode, &reader)
      return .skipped(.supersededByReminder(EventID(trialID: trial, revision: revision, kind: byKind)))
    case 4: return .skipped(.supersededByExpiry)
    case 5:
      let lateness = try reader.span()
      let grace = try reader.span()
      return .skipped(.beyondGrace(lateness: lateness, grace: grace))
    case 6: return .skipped(.alreadyDueAtResume)
    default:
      throw RecordProblem("unknown outcome \(code)")
    }
  }

  func decodeLedgerEntry(_ value: UnsafeRawBufferPointer, key: StoreKeys.LedgerKey) throws -> LedgerEntry {
    var reader = ByteReader(value)
    try Self.checkVersion(try reader.u8(), expected: Self.ledgerVersion)
    let kindCode = try reader.u8()
    let outcomeCode = try reader.u8()
    let flags = try reader.u8()
    guard flags & ~3 == 0 else { throw RecordProblem("unknown flags \(flags)") }
    let kind = try decodeKind(code: kindCode, &reader)
    let id = EventID(trialID: TrialID(key.trial), revision: key.revision, kind: kind)
    guard id.order == key.order else {
      throw RecordProblem("the event in the record does not match its key")
    }
    let due = try reader.date()
    let takenAt = try reader.date()
    let deliveredAt = flags & 2 != 0 ? try reader.date() : nil
    let outcome = try decodeOutcome(code: outcomeCode, &reader)
    try reader.expectEnd()
    return LedgerEntry(
      event: TrialEvent(id: id, due: due), outcome: outcome, takenAt: takenAt, isLate: flags & 1 != 0,
      deliveredAt: deliveredAt)
  }
}
