import FoundationEssentials

/// What happens to events found late: after downtime, suspend, or a forward clock step.
///
/// An event is *late* when it is taken more than `lateThreshold` after it fell due. Expiry
/// always fires, late or not, and carries its lateness. Late reminders follow `reminders`.
public struct CatchUpPolicy: Hashable, Sendable {
  public enum LateReminders: String, Hashable, Sendable, CaseIterable {
    /// Only the most recent late reminder of a trial fires; the ones it supersedes, and
    /// any late reminder of a trial whose expiry fires in the same wake, are skipped.
    case latest
    /// Every late reminder fires.
    case all
    /// A reminder later than `grace` is skipped; one within the grace still fires.
    case skip
  }

  public var reminders: LateReminders
  /// How late a reminder may be and still fire under `skip` (`ReminderGrace=`).
  public var grace: Duration
  /// Taken more than this after its due time, an event counts as late (`LateThreshold=`).
  public var lateThreshold: Duration

  public init(
    reminders: LateReminders = .latest, grace: Duration = .seconds(3_600),
    lateThreshold: Duration = .seconds(1)
  ) {
    self.reminders = reminders
    self.grace = grace
    self.lateThreshold = lateThreshold
  }
}

/// Why an event did not fire. Every skipped event is reported with one of these.
public enum SkipReason: Hashable, Sendable, CustomStringConvertible {
  /// It was already due when the trial started.
  case alreadyDueAtStart
  /// It was already due when the trial was extended to its new end.
  case alreadyDueAtExtension
  /// It was already due when the paused trial resumed (it fell due before the pause).
  case alreadyDueAtResume
  /// A later reminder of the same trial fired in its place (policy `latest`).
  case supersededByReminder(EventID)
  /// The trial's expiry fired in the same wake (policy `latest`).
  case supersededByExpiry
  /// It was later than the grace period allows (policy `skip`).
  case beyondGrace(lateness: Duration, grace: Duration)
  /// Its trial is cancelled at its end, and its plan said `RemindAfterCancel=no` then.
  case cancelAtEnd
  /// A follow-up of a trial that was converted (`FollowUps=`).
  case calledOffByConversion
  /// A follow-up of a trial whose subject started a later trial.
  case calledOffByNewTrial
  /// A milestone that had not come when its trial ended (`Milestones=`).
  case trialEnded
  /// A milestone that had not come when its trial was paused: none fires after a pause.
  case paused

  public var code: String {
    switch self {
    case .alreadyDueAtStart: "already-due-at-start"
    case .alreadyDueAtExtension: "already-due-at-extension"
    case .alreadyDueAtResume: "already-due-at-resume"
    case .supersededByReminder: "superseded-by-reminder"
    case .supersededByExpiry: "superseded-by-expiry"
    case .beyondGrace: "beyond-grace"
    case .cancelAtEnd: "cancel-at-end"
    case .calledOffByConversion: "called-off-by-conversion"
    case .calledOffByNewTrial: "called-off-by-new-trial"
    case .trialEnded: "trial-ended"
    case .paused: "paused"
    }
  }

  public var description: String {
    switch self {
    case .alreadyDueAtStart: "already due when the trial started"
    case .alreadyDueAtExtension: "already due when the trial was extended"
    case .alreadyDueAtResume: "already due when the trial resumed"
    case .supersededByReminder(let id): "superseded by the later reminder \(id)"
    case .supersededByExpiry: "superseded by the trial's expiry"
    case .beyondGrace(let lateness, let grace):
      "late by \(TimeSpan.format(lateness)), beyond the grace of \(TimeSpan.format(grace))"
    case .cancelAtEnd: "the trial is cancelled at its end"
    case .calledOffByConversion: "called off: the trial was converted"
    case .calledOffByNewTrial: "called off: the subject started a later trial"
    case .trialEnded: "the trial ended before the milestone"
    case .paused: "the trial was paused before the milestone"
    }
  }
}

extension SkipReason {
  /// Every code, in the order the documentation lists them.
  public static let codes = [
    "already-due-at-start", "already-due-at-extension", "already-due-at-resume", "superseded-by-reminder",
    "superseded-by-expiry", "beyond-grace", "cancel-at-end", "called-off-by-conversion",
    "called-off-by-new-trial", "trial-ended", "paused",
  ]

  /// Why a reason could not be read back from its code and details.
  public enum ReadProblem: Error, Hashable, Sendable {
    /// The code is none of `codes`.
    case unknownCode(String)
    /// The code needs this detail (`supersededBy`, `lateness`, `grace`), which is missing.
    case missing(String)
  }

  /// The reason a code names, with the details two of them carry: the one reading of a skip
  /// reason that a store or a file wrote.
  public init(
    code: String, supersededBy: EventID? = nil, lateness: Duration? = nil, grace: Duration? = nil
  ) throws(ReadProblem) {
    func required<T>(_ value: T?, _ name: String) throws(ReadProblem) -> T {
      guard let value else { throw .missing(name) }
      return value
    }
    switch code {
    case "already-due-at-start": self = .alreadyDueAtStart
    case "already-due-at-extension": self = .alreadyDueAtExtension
    case "already-due-at-resume": self = .alreadyDueAtResume
    case "superseded-by-expiry": self = .supersededByExpiry
    case "cancel-at-end": self = .cancelAtEnd
    case "called-off-by-conversion": self = .calledOffByConversion
    case "called-off-by-new-trial": self = .calledOffByNewTrial
    case "trial-ended": self = .trialEnded
    case "paused": self = .paused
    case "superseded-by-reminder": self = .supersededByReminder(try required(supersededBy, "supersededBy"))
    case "beyond-grace":
      self = .beyondGrace(lateness: try required(lateness, "lateness"), grace: try required(grace, "grace"))
    default: throw .unknownCode(code)
    }
  }
}

/// An event taken from the planner: either it fires, or it is skipped with a reason.
public struct DueEvent: Hashable, Sendable {
  public enum Disposition: Hashable, Sendable {
    case fire
    case skip(SkipReason)
  }

  public var event: TrialEvent
  /// The moment it was taken.
  public var takenAt: Date
  public var disposition: Disposition
  /// True when taken more than the policy's late threshold after it fell due.
  public var isLate: Bool

  public init(event: TrialEvent, takenAt: Date, disposition: Disposition, isLate: Bool) {
    self.event = event
    self.takenAt = takenAt
    self.disposition = disposition
    self.isLate = isLate
  }

  /// How long after its due time the event was taken, to the microsecond (zero if not after).
  public var lateness: Duration { max(.zero, takenAt.duration(since: event.due)) }

  public var fires: Bool { disposition == .fire }
}
