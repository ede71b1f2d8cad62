import FoundationEssentials
import TrialCore

// Ledger entry records (layout: docs/store-format.md).
extension RecordCodec {
  // Version 1 (the trial id, revision and event order are in the key):
  //   u8 version, u8 kind (0 expiry, 1 reminder, 2 paused, 3 resumed, 4 grace-started,
  //   5 follow-up, 6 milestone; 2 and 3 since schema 6, 4 to 6 since schema 9),
  //   u8 outcome, u8 flags (bit 0: late, bit 1: delivered), [f64 reminder offset or time left
  //   (days)], date due, date taken, [date delivered], outcome payload:
  //     0 fired, 1 already due at start, 2 already due at extension, 4 superseded by expiry,
  //     6 already due at resume, 7 cancel at end, 8 called off by conversion, 9 called off by
  //     new trial, 10 trial ended, 11 paused (7 to 11 since schema 9): nothing;
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
    case .followUp: 5
    case .milestone: 6
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
    case 5: return .followUp(after: try reader.reminderOffset())
    case 6: return .milestone(after: try reader.reminderOffset())
    default: throw RecordProblem("unknown event kind \(code)")
    }
  }

  /// A kind's code, then the span it carries, if any.
  func encodeKind(_ kind: EventKind, into writer: inout ByteWriter) {
    writer.u8(Self.kindCode(kind))
    if kind.hasSpan { writer.reminderOffset(kind.span) }
  }

  func encode(_ entry: LedgerEntry, into writer: inout ByteWriter) {
    writer.u8(Self.ledgerVersion)
    let kind = entry.event.kind
    writer.u8(Self.kindCode(kind))
    writer.u8(Self.outcomeCode(entry.outcome))
    writer.u8((entry.isLate ? 1 : 0) | (entry.deliveredAt == nil ? 0 : 2))
    if kind.hasSpan { writer.reminderOffset(kind.span) }
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
    case .skipped(.cancelAtEnd): 7
    case .skipped(.calledOffByConversion): 8
    case .skipped(.calledOffByNewTrial): 9
    case .skipped(.trialEnded): 10
    case .skipped(.paused): 11
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
    case 7: return .skipped(.cancelAtEnd)
    case 8: return .skipped(.calledOffByConversion)
    case 9: return .skipped(.calledOffByNewTrial)
    case 10: return .skipped(.trialEnded)
    case 11: return .skipped(.paused)
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
