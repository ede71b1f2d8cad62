import FoundationEssentials

public enum EventKind: Hashable, Sendable {
  /// A reminder, the given span before the trial's end (whole milliseconds, as
  /// `ReminderSchedule` keeps them).
  case reminder(before: Duration)
  case expiry
  /// The trial reached its end and entered its plan's grace (`Grace=`): the expiry follows at
  /// the end plus the grace.
  case graceStarted
  /// The trial was paused with `left` to run (whole milliseconds): its end frozen `left` after
  /// the pause.
  case paused(left: Duration)
  /// The paused trial resumed with `left` to run: its new end `left` after the resume.
  case resumed(left: Duration)
  /// A follow-up of a trial that ended by its expiry, `after` it (whole milliseconds): due at
  /// the end plus the grace plus `after` (`FollowUpSchedule`).
  case followUp(after: Duration)
  /// A milestone of a running trial, `after` its start (whole milliseconds): due at the start
  /// plus `after` (`MilestoneSchedule`), whatever its end.
  case milestone(after: Duration)

  public var name: String {
    switch self {
    case .reminder: "reminder"
    case .expiry: "expiry"
    case .graceStarted: "grace-started"
    case .paused: "paused"
    case .resumed: "resumed"
    case .followUp: "follow-up"
    case .milestone: "milestone"
    }
  }

  /// Every kind's name, in the order the documentation lists them.
  public static let names = [
    "reminder", "milestone", "grace-started", "expiry", "follow-up", "paused", "resumed",
  ]

  /// The span the kind carries: a reminder's offset, a pause's or resume's time left, a
  /// follow-up's span after the expiry; zero for the expiry and the start of grace.
  public var span: Duration {
    switch self {
    case .reminder(let span), .paused(let span), .resumed(let span), .followUp(let span),
      .milestone(let span):
      span
    case .expiry, .graceStarted: .zero
    }
  }

  /// The span after the expiry of a follow-up; nil for any other kind.
  public var followUpSpan: Duration? {
    if case .followUp(let span) = self { span } else { nil }
  }

  /// The span after the start of a milestone; nil for any other kind.
  public var milestoneSpan: Duration? {
    if case .milestone(let span) = self { span } else { nil }
  }

  public var reminderOffset: Duration? {
    if case .reminder(let offset) = self { offset } else { nil }
  }

  /// The time left to run of a pause or resume.
  public var timeLeft: Duration? {
    switch self {
    case .paused(let left), .resumed(let left): left
    case .reminder, .expiry, .graceStarted, .followUp, .milestone: nil
    }
  }

  /// How long before the trial's end the event falls due: a reminder's offset, the time left of
  /// a pause or resume, zero for the start of grace and the expiry (which falls due the trial's
  /// grace after the end); a follow-up's span after the expiry, negated (so that `trialEnd` is
  /// its expiry's due time).
  public var beforeEnd: Duration {
    switch self {
    case .reminder(let span), .paused(let span), .resumed(let span): span
    case .followUp(let span): .zero - span
    // A milestone's due time follows from the start: its event does not tell the end.
    case .expiry, .graceStarted, .milestone: .zero
    }
  }

  /// Whether the kind carries a span (a reminder's offset, a pause's or resume's time left, a
  /// follow-up's span).
  public var hasSpan: Bool { self != .expiry && self != .graceStarted }

  /// A pause or a resume: an event of a command (or of a pause running out), not of the
  /// trial's reminder plan.
  public var isPauseOrResume: Bool { timeLeft != nil }
}

/// An event's identity: the same event always has the same id, and an event of an older
/// revision (an earlier end date) can never be mistaken for a current one.
///
/// Text form: `<trial id>-r<revision>-expiry`, `<trial id>-r<revision>-grace-started`,
/// `<trial id>-r<revision>-reminder-<ms>ms`, and
/// `<trial id>-r<revision>-paused-<ms>ms` / `-resumed-<ms>ms` (the time left),
/// `<trial id>-r<revision>-follow-up-<ms>ms` (the span after the expiry),
/// `<trial id>-r<revision>-milestone-<ms>ms` (the span after the start). A revision is
/// paused at most once: a resume starts the next one.
public struct EventID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var trialID: TrialID
  public var revision: UInt32
  public var kind: EventKind

  public init(trialID: TrialID, revision: UInt32, kind: EventKind) {
    self.trialID = trialID
    self.revision = revision
    self.kind = kind
  }

  /// The reminder offset, or a pause's or resume's time left, in whole milliseconds; 0 for the
  /// expiry and the start of grace.
  public var offsetMilliseconds: UInt64 {
    UInt64(clamping: kind.span.roundedMilliseconds)
  }

  public var description: String {
    switch kind {
    case .expiry: "\(trialID)-r\(revision)-expiry"
    case .graceStarted: "\(trialID)-r\(revision)-grace-started"
    case .reminder, .paused, .resumed, .followUp, .milestone:
      "\(trialID)-r\(revision)-\(kind.name)-\(offsetMilliseconds)ms"
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
    case 4 where parts[2] == "grace" && parts[3] == "started":
      self.init(trialID: trial, revision: revision, kind: .graceStarted)
    case 4 where parts[3].hasSuffix("ms"):
      guard let millis = UInt64(parts[3].dropLast(2)), millis > 0, millis < EventID.maximumMilliseconds else {
        return nil
      }
      let span = Duration.milliseconds(millis)
      switch parts[2] {
      case "reminder": self.init(trialID: trial, revision: revision, kind: .reminder(before: span))
      case "paused": self.init(trialID: trial, revision: revision, kind: .paused(left: span))
      case "resumed": self.init(trialID: trial, revision: revision, kind: .resumed(left: span))
      case "milestone" where millis < EventID.maximumFollowUpMilliseconds:
        self.init(trialID: trial, revision: revision, kind: .milestone(after: span))
      default: return nil
      }
    case 5 where parts[2] == "follow" && parts[3] == "up" && parts[4].hasSuffix("ms"):
      guard let millis = UInt64(parts[4].dropLast(2)), millis > 0,
        millis < EventID.maximumFollowUpMilliseconds
      else {
        return nil
      }
      self.init(trialID: trial, revision: revision, kind: .followUp(after: .milliseconds(millis)))
    default:
      return nil
    }
  }

  /// A span an id names is below 2^62 ms (the stores' keys keep two bits for the kind).
  public static let maximumMilliseconds: UInt64 = 1 << 62

  /// The order of `grace-started` (`order`).
  public static let graceStartedOrder: UInt64 = 1 << 60
  /// The base of a follow-up's order (`3 << 60 | ms`): a follow-up's span is below 2^60 ms.
  public static let followUpOrder: UInt64 = 3 << 60
  /// The base of a milestone's order (`2 << 60 | ms`): its span is below 2^60 ms too.
  public static let milestoneOrder: UInt64 = 2 << 60
  /// A follow-up's span is below 2^60 ms (`followUpOrder`).
  public static let maximumFollowUpMilliseconds: UInt64 = 1 << 60

  /// Ids of one trial sort together, by revision, then as the stores' keys do: the start of
  /// grace, the pause, the resume, the reminders in due order (larger offsets first), the expiry
  /// last.
  public static func < (lhs: EventID, rhs: EventID) -> Bool {
    if lhs.trialID != rhs.trialID { return lhs.trialID < rhs.trialID }
    if lhs.revision != rhs.revision { return lhs.revision < rhs.revision }
    return lhs.order < rhs.order
  }

  /// The place of the event in its revision, as the stores' keys order them: the start of grace
  /// (`1 << 60`, in the range whose top two bits are 0), a milestone (`2 << 60 | ms`) and a
  /// follow-up (`3 << 60 | ms`) in the same range, a pause (`1 << 62 | ms`), a resume
  /// (`2 << 62 | ms`), reminders by descending offset (`~ms`, which keeps its top two bits set
  /// for offsets below 2^62 ms), the expiry (`UInt64.max`).
  public var order: UInt64 {
    switch kind {
    case .expiry: UInt64.max
    case .graceStarted: EventID.graceStartedOrder
    case .followUp: EventID.followUpOrder | offsetMilliseconds
    case .milestone: EventID.milestoneOrder | offsetMilliseconds
    case .reminder: ~offsetMilliseconds
    case .paused: 1 << 62 | offsetMilliseconds
    case .resumed: 2 << 62 | offsetMilliseconds
    }
  }

  /// The kind an `order` names; nil for an order no event has.
  public static func kind(order: UInt64) -> EventKind? {
    if order == UInt64.max { return .expiry }
    if order == graceStartedOrder { return .graceStarted }
    if order >> 60 == 3, order & (maximumFollowUpMilliseconds - 1) > 0 {
      return .followUp(after: .milliseconds(order & (maximumFollowUpMilliseconds - 1)))
    }
    if order >> 60 == 2, order & (maximumFollowUpMilliseconds - 1) > 0 {
      return .milestone(after: .milliseconds(order & (maximumFollowUpMilliseconds - 1)))
    }
    let millis = order & (maximumMilliseconds - 1)
    switch order >> 62 {
    case 3 where ~order > 0: return .reminder(before: .milliseconds(~order))
    case 1 where millis > 0: return .paused(left: .milliseconds(millis))
    case 2 where millis > 0: return .resumed(left: .milliseconds(millis))
    default: return nil
    }
  }
}

/// An event of one trial revision (a reminder, the expiry, a pause or a resume), with the moment
/// it falls due.
public struct TrialEvent: Hashable, Sendable {
  public var id: EventID
  public var due: Date

  public init(id: EventID, due: Date) {
    self.id = id
    self.due = due
  }

  /// The event of a trial ending at `endDate`: the expiry falls due `grace` after it (the
  /// trial's grace, when it enters grace), the start of grace at it.
  public init(trialID: TrialID, revision: UInt32, kind: EventKind, endDate: Date, grace: Duration = .zero) {
    let due =
      switch kind {
      case .expiry: grace == .zero ? endDate : endDate.adding(grace)
      case .graceStarted: endDate
      case .followUp(let span): endDate.adding(grace).adding(span)
      default: endDate.addingTimeInterval(-kind.beforeEnd.timeInterval)
      }
    self.init(id: EventID(trialID: trialID, revision: revision, kind: kind), due: due)
  }

  public var trialID: TrialID { id.trialID }
  public var kind: EventKind { id.kind }
  public var revision: UInt32 { id.revision }
  /// The end of the trial as of the event: the expiry's due time (for a trial in grace, the end
  /// of its grace), the start of grace's due time, a reminder's due time plus its offset, a
  /// pause's or resume's time plus the time left.
  public var trialEnd: Date { kind.hasSpan ? due.adding(kind.beforeEnd) : due }
}
