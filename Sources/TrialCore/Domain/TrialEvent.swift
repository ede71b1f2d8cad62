import FoundationEssentials

public enum EventKind: Hashable, Sendable {
  /// A reminder, the given span before the trial's end (whole milliseconds, as
  /// `ReminderSchedule` keeps them).
  case reminder(before: Duration)
  case expiry

  public var name: String {
    switch self {
    case .reminder: "reminder"
    case .expiry: "expiry"
    }
  }

  public var reminderOffset: Duration? {
    if case .reminder(let offset) = self { offset } else { nil }
  }
}

/// An event's identity: the same event always has the same id, and an event of an older
/// revision (an earlier end date) can never be mistaken for a current one.
///
/// Text form: `<trial id>-r<revision>-expiry` or `<trial id>-r<revision>-reminder-<ms>ms`.
public struct EventID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var trialID: TrialID
  public var revision: UInt32
  public var kind: EventKind

  public init(trialID: TrialID, revision: UInt32, kind: EventKind) {
    self.trialID = trialID
    self.revision = revision
    self.kind = kind
  }

  /// The reminder offset in whole milliseconds; 0 for the expiry.
  public var offsetMilliseconds: UInt64 {
    guard let offset = kind.reminderOffset else { return 0 }
    return UInt64(clamping: offset.roundedMilliseconds)
  }

  public var description: String {
    switch kind {
    case .expiry: "\(trialID)-r\(revision)-expiry"
    case .reminder: "\(trialID)-r\(revision)-reminder-\(offsetMilliseconds)ms"
    }
  }

  public init?(_ text: some StringProtocol) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count >= 3, let trial = TrialID(parts[0]), parts[1].first == "r",
      let revision = UInt32(parts[1].dropFirst())
    else { return nil }
    switch parts.count {
    case 3 where parts[2] == "expiry":
      self.init(trialID: trial, revision: revision, kind: .expiry)
    case 4 where parts[2] == "reminder" && parts[3].hasSuffix("ms"):
      guard let millis = UInt64(parts[3].dropLast(2)), millis > 0 else { return nil }
      self.init(
        trialID: trial, revision: revision,
        kind: .reminder(before: .milliseconds(millis)))
    default:
      return nil
    }
  }

  /// Ids of one trial sort together, by revision, then by due order (larger offsets first,
  /// expiry last).
  public static func < (lhs: EventID, rhs: EventID) -> Bool {
    if lhs.trialID != rhs.trialID { return lhs.trialID < rhs.trialID }
    if lhs.revision != rhs.revision { return lhs.revision < rhs.revision }
    switch (lhs.kind, rhs.kind) {
    case (.reminder(let a), .reminder(let b)): return a > b
    case (.reminder, .expiry): return true
    default: return false
    }
  }
}

/// A reminder or expiry of one trial revision, with the moment it falls due.
public struct TrialEvent: Hashable, Sendable {
  public var id: EventID
  public var due: Date

  public init(id: EventID, due: Date) {
    self.id = id
    self.due = due
  }

  public init(trialID: TrialID, revision: UInt32, kind: EventKind, endDate: Date) {
    let due: Date
    switch kind {
    case .expiry: due = endDate
    case .reminder(let offset): due = endDate.addingTimeInterval(-offset.timeInterval)
    }
    self.init(id: EventID(trialID: trialID, revision: revision, kind: kind), due: due)
  }

  public var trialID: TrialID { id.trialID }
  public var kind: EventKind { id.kind }
  public var revision: UInt32 { id.revision }
  /// The end of the trial in the event's revision: the expiry's due time, or a reminder's
  /// due time plus its offset.
  public var trialEnd: Date { kind.reminderOffset.map { due.adding($0) } ?? due }
}
