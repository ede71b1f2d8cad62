import FoundationEssentials
import TrialCore

// Webhook endpoints' state and their pending events (database `webhooks`, since schema 8), in the
// conventions of Records.swift; read and written by StoreWebhooks.swift.
// Keys: an endpoint's name (UTF-8, 1 to 64 bytes, as `TrialPlan.validateName` allows) for its
//   state; the name, a 0 byte and the event's sequence (8 bytes big-endian) for a pending event,
//   so that an endpoint's events follow its state, in cursor order.
// State, version 1:
//   u8 version, u8 flags (bit 0: failing-since present, bit 1: last attempt present, bit 2:
//   last attempt's time present, bit 3: skip present), u8 disabled (0 no, 1 gone, 2 failing),
//   u32 consecutive failures, [date failing since], [outcome], [date last attempt],
//   [date gone at | date failing since, date disabled at], [u64 skip first, u64 skip last],
//   u8 attempt count n (at most `WebhookEndpointState.keptAttempts`), n × attempt.
// Attempt: u8 flags (bit 0: cursor present), date at, [u64 cursor's sequence], u8 message id
//   length, message id (UTF-8), u32 number, outcome, f64 duration (seconds).
// Outcome: u8 kind (0 answered, 1 answered with a Retry-After, 2 failed), then u16 status for 0;
//   u16 status, f64 retry-after (seconds) for 1; u16 reason length, reason (UTF-8) for 2.
// Pending event, version 1: u8 version, u8 flags (bit 0: next attempt present), u32 attempts,
//   [date next attempt].

enum WebhookRecords {
  static let stateVersion: UInt8 = 1
  static let eventVersion: UInt8 = 1

  /// What a key of `webhooks` holds.
  enum Key: Hashable {
    case endpoint(String)
    case event(endpoint: String, sequence: UInt64)
  }

  /// Whether `name` can be part of a key: not empty, no 0 byte, short enough for LMDB (a name
  /// that cannot is never stored).
  static func keyable(_ name: String) -> Bool {
    let bytes = name.utf8
    return !bytes.isEmpty && bytes.count <= 500 && !bytes.contains(0)
  }

  static func key(_ key: Key) -> [UInt8] {
    switch key {
    case .endpoint(let name): Array(name.utf8)
    case .event(let name, let sequence):
      eventPrefix(name) + withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
    }
  }

  /// The start of the keys of an endpoint's events: its name and a 0 byte.
  static func eventPrefix(_ name: String) -> [UInt8] { Array(name.utf8) + [0] }

  static func parse(_ key: UnsafeRawBufferPointer) throws -> Key {
    guard let zero = key.firstIndex(of: 0) else {
      guard !key.isEmpty, let name = String(validating: key, as: UTF8.self) else {
        throw RecordProblem("the endpoint's name is not valid UTF-8")
      }
      return .endpoint(name)
    }
    guard zero > 0, key.count == zero + 9, let name = String(validating: key[..<zero], as: UTF8.self) else {
      throw RecordProblem(
        "the key is neither an endpoint's name nor a name, a 0 byte and 8 bytes of a cursor")
    }
    let sequence = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: zero + 1, as: UInt64.self))
    return .event(endpoint: name, sequence: sequence)
  }

  // MARK: Endpoints' state

  static func encode(_ state: WebhookEndpointState, into writer: inout ByteWriter) throws {
    let health = state.health
    guard state.attempts.count <= WebhookEndpointState.keptAttempts else {
      throw RecordProblem(
        "an endpoint keeps at most \(WebhookEndpointState.keptAttempts) attempts, not \(state.attempts.count)"
      )
    }
    writer.u8(stateVersion)
    writer.u8(
      (health.failingSince == nil ? 0 : 1) | (health.lastAttempt == nil ? 0 : 2)
        | (health.lastAttemptAt == nil ? 0 : 4) | (state.skip == nil ? 0 : 8))
    switch health.disabled {
    case nil: writer.u8(0)
    case .gone: writer.u8(1)
    case .failing: writer.u8(2)
    }
    writer.u32(try number(health.consecutiveFailures, "consecutive failures"))
    if let since = health.failingSince { writer.date(since) }
    if let outcome = health.lastAttempt { try encode(outcome, into: &writer) }
    if let at = health.lastAttemptAt { writer.date(at) }
    switch health.disabled {
    case nil: break
    case .gone(let at): writer.date(at)
    case .failing(let since, let at):
      writer.date(since)
      writer.date(at)
    }
    if let skip = state.skip {
      writer.u64(skip.lowerBound)
      writer.u64(skip.upperBound)
    }
    writer.u8(UInt8(state.attempts.count))
    for attempt in state.attempts {
      writer.u8(attempt.cursor == nil ? 0 : 1)
      writer.date(attempt.at)
      if let cursor = attempt.cursor { writer.u64(cursor.sequence) }
      let id = Array(attempt.messageID.utf8)
      guard id.count <= Int(UInt8.max) else { throw RecordProblem("a message id is longer than 255 bytes") }
      writer.u8(UInt8(id.count))
      writer.bytes += id
      writer.u32(try number(attempt.number, "an attempt's number"))
      try encode(attempt.outcome, into: &writer)
      writer.span(attempt.duration)
    }
  }

  static func decodeState(_ value: UnsafeRawBufferPointer, name: String) throws -> WebhookEndpointState {
    var reader = ByteReader(value)
    try RecordCodec.checkVersion(try reader.u8(), expected: stateVersion)
    let flags = try reader.u8()
    guard flags & ~15 == 0 else { throw RecordProblem("unknown flags \(flags)") }
    let disabled = try reader.u8()
    guard disabled <= 2 else { throw RecordProblem("unknown disabled state \(disabled)") }
    var state = WebhookEndpointState(name: name)
    state.health.consecutiveFailures = Int(try reader.u32())
    if flags & 1 != 0 { state.health.failingSince = try reader.date() }
    if flags & 2 != 0 { state.health.lastAttempt = try decodeOutcome(&reader) }
    if flags & 4 != 0 { state.health.lastAttemptAt = try reader.date() }
    switch disabled {
    case 1: state.health.disabled = .gone(at: try reader.date())
    case 2: state.health.disabled = .failing(since: try reader.date(), at: try reader.date())
    default: break
    }
    if flags & 8 != 0 {
      let first = try reader.u64()
      let last = try reader.u64()
      guard first <= last else { throw RecordProblem("the skip ends before it starts") }
      state.skip = first...last
    }
    let count = Int(try reader.u8())
    guard count <= WebhookEndpointState.keptAttempts else {
      throw RecordProblem("\(count) attempts, more than an endpoint keeps")
    }
    for _ in 0..<count {
      let attemptFlags = try reader.u8()
      guard attemptFlags & ~1 == 0 else { throw RecordProblem("unknown flags \(attemptFlags) of an attempt") }
      let at = try reader.date()
      let cursor = attemptFlags & 1 != 0 ? EventCursor(try reader.u64()) : nil
      let id = try text(&reader, count: Int(try reader.u8()))
      let number = Int(try reader.u32())
      let outcome = try decodeOutcome(&reader)
      let duration = try reader.span()
      state.attempts.append(
        WebhookAttemptRecord(
          at: at, cursor: cursor, messageID: id, number: number, outcome: outcome, duration: duration))
    }
    try reader.expectEnd()
    return state
  }

  private static func encode(_ outcome: WebhookAttempt, into writer: inout ByteWriter) throws {
    switch outcome {
    case .answered(let status, let retryAfter):
      guard let code = UInt16(exactly: status) else {
        throw RecordProblem("the status \(status) is out of range")
      }
      writer.u8(retryAfter == nil ? 0 : 1)
      writer.u16(code)
      if let retryAfter { writer.span(retryAfter) }
    case .failed(let reason):
      let bytes = Array(reason.utf8)
      guard bytes.count <= Int(UInt16.max) else { throw RecordProblem("a failure's reason is too long") }
      writer.u8(2)
      writer.u16(UInt16(bytes.count))
      writer.bytes += bytes
    }
  }

  private static func decodeOutcome(_ reader: inout ByteReader) throws -> WebhookAttempt {
    switch try reader.u8() {
    case 0: return .answered(status: Int(try reader.u16()), retryAfter: nil)
    case 1: return .answered(status: Int(try reader.u16()), retryAfter: try reader.span())
    case 2: return .failed(try text(&reader, count: Int(try reader.u16())))
    case let kind: throw RecordProblem("unknown attempt outcome \(kind)")
    }
  }

  // MARK: Pending events

  static func encode(_ event: WebhookPendingEvent, into writer: inout ByteWriter) throws {
    writer.u8(eventVersion)
    writer.u8(event.nextAttemptAt == nil ? 0 : 1)
    writer.u32(try number(event.attempts, "an event's attempts"))
    if let next = event.nextAttemptAt { writer.date(next) }
  }

  static func decodeEvent(_ value: UnsafeRawBufferPointer, endpoint: String, sequence: UInt64) throws
    -> WebhookPendingEvent
  {
    var reader = ByteReader(value)
    try RecordCodec.checkVersion(try reader.u8(), expected: eventVersion)
    let flags = try reader.u8()
    guard flags & ~1 == 0 else { throw RecordProblem("unknown flags \(flags)") }
    let attempts = Int(try reader.u32())
    let next = flags & 1 != 0 ? try reader.date() : nil
    try reader.expectEnd()
    return WebhookPendingEvent(
      endpoint: endpoint, cursor: EventCursor(sequence), attempts: attempts, nextAttemptAt: next)
  }

  // MARK: Pieces

  private static func number(_ value: Int, _ what: String) throws -> UInt32 {
    guard let number = UInt32(exactly: value) else {
      throw RecordProblem("\(what) (\(value)) is out of range")
    }
    return number
  }

  private static func text(_ reader: inout ByteReader, count: Int) throws -> String {
    guard let text = String(validating: try reader.bytes(count), as: UTF8.self) else {
      throw RecordProblem("a text field is not UTF-8")
    }
    return text
  }

  /// The spans a state holds (attempts' durations and Retry-After waits), which the record
  /// keeps to the microsecond (`ByteWriter.span`).
  static func spans(of state: WebhookEndpointState) -> [Duration] {
    func wait(_ outcome: WebhookAttempt?) -> [Duration] {
      if case .answered(_, let retryAfter?) = outcome { [retryAfter] } else { [] }
    }
    return wait(state.health.lastAttempt) + state.attempts.flatMap { [$0.duration] + wait($0.outcome) }
  }
}
