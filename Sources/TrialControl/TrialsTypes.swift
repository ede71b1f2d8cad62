import FoundationEssentials
import TrialCore

/// A trial as the wire carries it (`io.trialwatch.Trials.Trial`).
public struct TrialObject: Codable, Hashable, Sendable {
  public var id: TrialID
  public var subject: String
  /// The trial's labels: always sent (an empty object when it has none); nil only in the reply
  /// of a daemon from before labels.
  public var labels: [String: String]?
  /// The plan the trial was started with; absent for a trial started without one.
  public var plan: String?
  public var state: TrialState
  public var startedAt: Date
  public var endsAt: Date
  /// When the trial ended (expired, converted or cancelled).
  public var endedAt: Date?
  /// Spans before the end, in the order they fall due.
  public var reminders: [Span]
  public var revision: UInt32
  /// How many days until the end as of the reply, negative once past (to the microsecond); of
  /// a paused trial, the days its pause froze.
  public var daysLeft: Double
  /// Of a paused trial (or one ended while paused): since when.
  public var pausedAt: Date?
  /// Of a paused trial whose pause runs out (its plan's `MaxPause=`): when it resumes by itself.
  public var resumesAt: Date?
  /// Of a paused trial: the time left its pause froze, which a resume adds to its moment.
  public var timeLeft: Span?

  public init(
    id: TrialID, subject: String, labels: [String: String]? = [:], state: TrialState, startedAt: Date,
    endsAt: Date,
    endedAt: Date? = nil, reminders: [Duration], revision: UInt32, daysLeft: Double
  ) {
    self.id = id
    self.subject = subject
    self.labels = labels
    self.state = state
    self.startedAt = startedAt
    self.endsAt = endsAt
    self.endedAt = endedAt
    self.reminders = reminders.map(Span.init)
    self.revision = revision
    self.daysLeft = (daysLeft * 1e6).rounded() / 1e6
  }

  /// The trial as of `now`.
  public init(_ trial: Trial, now: Date) {
    id = trial.id
    subject = trial.subject
    labels = trial.labels.dictionary
    plan = trial.attributes.plan
    state = trial.state
    startedAt = trial.period.startDate
    endsAt = trial.period.endDate
    endedAt = trial.endedAt
    reminders = trial.reminders.offsets.map(Span.init)
    revision = trial.revision
    pausedAt = trial.pause?.since
    resumesAt = trial.state == .paused ? trial.pause?.until : nil
    timeLeft = trial.state == .paused ? trial.timeLeft.map(Span.init) : nil
    let asOf = trial.state == .paused ? trial.pause?.since ?? now : now
    daysLeft = (trial.period.daysLeft(clock: FixedInstant(asOf)).amount * 1e6).rounded() / 1e6
  }
}

/// A clock stopped at one instant, to evaluate domain questions "as of" a given time.
struct FixedInstant: WallClock {
  let date: Date
  init(_ date: Date) { self.date = date }
  func now() -> Date { date }
}

/// A reminder or expiry as the wire carries it (`io.trialwatch.Trials.Event`).
public struct EventObject: Codable, Hashable, Sendable {
  public enum Kind: String, WireChoice {
    case reminder
    case expiry
    case paused
    case resumed
  }

  public enum State: String, WireChoice {
    /// Not yet taken.
    case pending
    /// Taken and fired, not yet delivered.
    case fired
    /// Fired and delivered.
    case delivered
    /// Taken without firing; `reason` says why.
    case skipped
  }

  /// `<trial id>-r<revision>-expiry`, `<trial id>-r<revision>-reminder-<ms>ms`, or
  /// `<trial id>-r<revision>-paused-<ms>ms` / `-resumed-<ms>ms` (the time left).
  public var id: EventID
  public var trialId: TrialID
  public var subject: String?
  /// The trial's labels as the event was taken (events of the log), or as they are now;
  /// present where the subject is.
  public var labels: [String: String]?
  /// The trial's plan, where the subject is present and the trial has one.
  public var plan: String?
  public var revision: UInt32
  public var kind: Kind
  /// For a reminder: the span before the end.
  public var offset: Span?
  /// For a pause or a resume: the time left to run.
  public var left: Span?
  public var due: Date
  public var state: State
  /// A code for why a skipped event did not fire (`already-due-at-start`).
  public var reason: String?
  /// The reason in words.
  public var detail: String?
  /// When it was fired or skipped.
  public var takenAt: Date?
  /// How late it was taken, when it was late.
  public var lateness: Span?
  /// The trial's end as of the event: in its revision; of a pause, the end it froze; of a
  /// resume, the new end.
  public var endsAt: Date?
  /// Its place in the event log (events taken; from Watch, always).
  public var cursor: EventCursor?

  public init(
    id: EventID, subject: String? = nil, labels: TrialLabels? = nil, state: State, due: Date,
    reason: String? = nil,
    detail: String? = nil,
    takenAt: Date? = nil, lateness: Duration? = nil
  ) {
    self.id = id
    self.trialId = id.trialID
    self.subject = subject
    self.labels = labels?.dictionary
    self.revision = id.revision
    self.kind = Kind(rawValue: id.kind.name) ?? .reminder
    self.offset = id.kind.reminderOffset.map(Span.init)
    self.left = id.kind.timeLeft.map(Span.init)
    self.due = due
    self.state = state
    self.reason = reason
    self.detail = detail
    self.takenAt = takenAt
    self.lateness = lateness.map(Span.init)
    self.endsAt = TrialEvent(id: id, due: due).trialEnd
    self.cursor = nil
  }

  /// The trial's named attributes the event carries (`TrialAttributes.named`), as
  /// `(variable, value)` in the table's order: `TRIAL_SUBJECT` and the others present.
  public var attributeVariables: [(name: String, value: String)] {
    let values: [String: String?] = ["subject": subject, "plan": plan]
    return TrialAttributes.named.compactMap { named in
      guard let value = values[named.name] ?? nil else { return nil }
      return (named.variable, value)
    }
  }

  /// An event of a trial with these attributes, where known.
  public init(
    id: EventID, attributes: TrialAttributes?, state: State, due: Date, reason: String? = nil,
    detail: String? = nil, takenAt: Date? = nil, lateness: Duration? = nil
  ) {
    self.init(
      id: id, subject: attributes?.subject, labels: attributes?.labels, state: state, due: due,
      reason: reason,
      detail: detail, takenAt: takenAt, lateness: lateness)
    plan = attributes?.plan
  }

  /// An event not yet taken, of a trial with these attributes, where known.
  public init(pending event: TrialEvent, attributes: TrialAttributes?) {
    self.init(id: event.id, attributes: attributes, state: .pending, due: event.due)
  }

  /// An event from the ledger, of a trial with these attributes, where known: fired (delivered
  /// or not) or skipped.
  public init(_ entry: LedgerEntry, attributes: TrialAttributes?) {
    var reason: SkipReason?
    if case .skipped(let why) = entry.outcome { reason = why }
    self.init(
      id: entry.id, attributes: attributes,
      state: reason != nil ? .skipped : entry.isDelivered ? .delivered : .fired, due: entry.event.due,
      reason: reason?.code, detail: reason?.description, takenAt: entry.takenAt,
      lateness: entry.isLate ? entry.lateness : nil)
  }

  /// An event of the log, with its cursor.
  public init(_ logged: LoggedEvent) {
    self.init(logged.entry, attributes: logged.attributes)
    cursor = logged.cursor
  }

  /// An event as the planner takes it (for Simulate): fired or skipped.
  public init(_ due: DueEvent, attributes: TrialAttributes?) {
    self.init(LedgerEntry(due), attributes: attributes)
  }
}

/// Trials by state (`io.trialwatch.Trials.TrialCounts`).
public struct TrialCounts: Codable, Hashable, Sendable {
  public var active: Int
  /// Absent from a daemon from before pauses.
  public var paused: Int?
  public var expired: Int
  public var converted: Int
  public var cancelled: Int

  public init(active: Int = 0, paused: Int = 0, expired: Int = 0, converted: Int = 0, cancelled: Int = 0) {
    self.active = active
    self.paused = paused
    self.expired = expired
    self.converted = converted
    self.cancelled = cancelled
  }

  public init(_ counts: [TrialState: Int]) {
    self.init(
      active: counts[.active, default: 0], paused: counts[.paused, default: 0],
      expired: counts[.expired, default: 0], converted: counts[.converted, default: 0],
      cancelled: counts[.cancelled, default: 0])
  }

  public var total: Int { active + (paused ?? 0) + expired + converted + cancelled }
}
