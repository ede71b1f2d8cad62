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
  //   bit 2: paused-until present, bit 3: cancel-at-end mark present, bit 4: grace present,
  //   bit 5: extension count present, bit 6: milestones present, bit 7: follow-ups present;
  //   bits 1 and 2 since schema 6, bits 3 to 7 since 9),
  //   u8 reminder count n, u32 revision, date start, date end, [date endedAt], [date paused
  //   since], [date paused until], [date cancel asked, u8 remind after cancel (0 or 1)],
  //   [u64 grace (milliseconds, positive)], [u32 extensions, written only when above 0],
  //   [u8 follow-up count m (1 to 32), m × u64 follow-up span (milliseconds, ascending)],
  //   [u8 milestone count k (1 to 32), k × u64 milestone span (milliseconds, ascending)],
  //   n × f64 reminder offset (days), u8 subject length, subject bytes (UTF-8), attribute
  //   section (AttributeRecords.swift).

  /// The flags of a trial record's cancel mark, grace span and extension count (schema 9), and
  /// every flag a trial record may have.
  static let cancelFlag: UInt8 = 1 << 3
  static let graceFlag: UInt8 = 1 << 4
  static let extensionsFlag: UInt8 = 1 << 5
  static let milestonesFlag: UInt8 = 1 << 6
  static let followUpsFlag: UInt8 = 1 << 7
  static let trialFlags: UInt8 = 7 | cancelFlag | graceFlag | extensionsFlag | milestonesFlag | followUpsFlag

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
    // A plain trial (most) has no lifecycle to write: read once, not per property.
    let lifecycle = trial.lifecycle
    let extensions = lifecycle?.extensions ?? 0
    guard (0...Int(UInt32.max)).contains(extensions) else {
      throw RecordProblem("the extension count \(extensions) is out of range")
    }
    let grace = lifecycle?.grace.roundedMilliseconds ?? 0
    guard grace >= 0 else { throw RecordProblem("the grace is negative") }
    let followUps = lifecycle?.followUps.spans ?? []
    let milestones = lifecycle?.milestones.spans ?? []
    writer.u8(
      (trial.endedAt == nil ? 0 : 1) | (trial.pause == nil ? 0 : 2) | (trial.pause?.until == nil ? 0 : 4)
        | (lifecycle?.cancelMark == nil ? 0 : Self.cancelFlag) | (grace == 0 ? 0 : Self.graceFlag)
        | (extensions == 0 ? 0 : Self.extensionsFlag)
        | (followUps.isEmpty ? 0 : Self.followUpsFlag)
        | (milestones.isEmpty ? 0 : Self.milestonesFlag))
    writer.u8(UInt8(trial.reminders.offsets.count))
    writer.u32(trial.revision)
    writer.date(trial.period.startDate)
    writer.date(trial.period.endDate)
    if let endedAt = trial.endedAt { writer.date(endedAt) }
    if let pause = trial.pause {
      writer.date(pause.since)
      if let until = pause.until { writer.date(until) }
    }
    if let mark = lifecycle?.cancelMark {
      writer.date(mark.askedAt)
      writer.u8(mark.remindAfterCancel ? 1 : 0)
    }
    if grace > 0 { writer.u64(UInt64(grace)) }
    if extensions > 0 { writer.u32(UInt32(extensions)) }
    if !followUps.isEmpty {
      writer.u8(UInt8(followUps.count))
      for span in followUps { writer.u64(UInt64(span.roundedMilliseconds)) }
    }
    if !milestones.isEmpty {
      writer.u8(UInt8(milestones.count))
      for span in milestones { writer.u64(UInt64(span.roundedMilliseconds)) }
    }
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
    let cancelMark = flags & Self.cancelFlag != 0 ? try Self.cancelMark(&reader) : nil
    var grace = Duration.zero
    if flags & Self.graceFlag != 0 {
      let milliseconds = try reader.u64()
      guard milliseconds > 0, milliseconds < EventID.maximumMilliseconds else {
        throw RecordProblem("the grace is out of range")
      }
      grace = .milliseconds(Int64(milliseconds))
    }
    let extensions = flags & Self.extensionsFlag != 0 ? Int(try reader.u32()) : 0
    if flags & Self.extensionsFlag != 0, extensions == 0 {
      throw RecordProblem("an extension count of 0 is written as none")
    }
    let followUps = flags & Self.followUpsFlag != 0 ? try Self.followUps(&reader) : .none
    let milestones = flags & Self.milestonesFlag != 0 ? try Self.milestones(&reader) : .none
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
      reminders: schedule, revision: revision, endedAt: endedAt, pause: pause, extensions: extensions,
      cancelMark: cancelMark, grace: grace, followUps: followUps, milestones: milestones)
  }

  /// Whether a trial record has follow-ups, without decoding the rest.
  func trialHasFollowUps(_ value: UnsafeRawBufferPointer) throws -> Bool {
    var reader = ByteReader(value)
    _ = try reader.u8()
    _ = try reader.u8()
    return try reader.u8() & Self.followUpsFlag != 0
  }

  private static func followUps(_ reader: inout ByteReader) throws -> FollowUpSchedule {
    let spans = try spans(&reader, item: "follow-up", maximumCount: FollowUpSchedule.maximumCount)
    do {
      return try FollowUpSchedule(spans)
    } catch {
      throw RecordProblem(error.description)
    }
  }

  private static func milestones(_ reader: inout ByteReader) throws -> MilestoneSchedule {
    let spans = try spans(&reader, item: "milestone", maximumCount: MilestoneSchedule.maximumCount)
    do {
      return try MilestoneSchedule(spans)
    } catch {
      throw RecordProblem(error.description)
    }
  }

  /// A count (1 to `maximumCount`), then as many spans in milliseconds, ascending, each at most
  /// 3,650 days.
  private static func spans(_ reader: inout ByteReader, item: String, maximumCount: Int) throws -> [Duration]
  {
    let count = Int(try reader.u8())
    guard (1...maximumCount).contains(count) else {
      throw RecordProblem("a \(item) count of \(count) is out of range")
    }
    var spans: [Duration] = []
    for _ in 0..<count {
      let milliseconds = try reader.u64()
      guard milliseconds > 0,
        Duration.milliseconds(Int64(clamping: milliseconds)) <= FollowUpSchedule.maximumSpan,
        milliseconds > UInt64(spans.last?.roundedMilliseconds ?? 0)
      else { throw RecordProblem("a \(item) span is out of range or out of order") }
      spans.append(.milliseconds(Int64(milliseconds)))
    }
    return spans
  }

  private static func cancelMark(_ reader: inout ByteReader) throws -> TrialCancelMark {
    let askedAt = try reader.date()
    let reminds = try reader.u8()
    guard reminds <= 1 else { throw RecordProblem("a cancel mark's reminder flag is \(reminds), not 0 or 1") }
    return TrialCancelMark(askedAt: askedAt, remindAfterCancel: reminds == 1)
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
}
