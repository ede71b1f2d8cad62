import FoundationEssentials
import TrialCore

/// A trial as the wire carries it (`io.trialwatch.Trials.Trial`).
public struct TrialObject: Codable, Hashable, Sendable {
  public var id: TrialID
  public var subject: String
  /// The trial's labels: always sent (an empty object when it has none); nil only in the reply
  /// of a daemon from before labels.
  public var labels: [String: String]?
  /// Its named attributes beside the subject (`TrialAttributes.named`: `plan`, …), each
  /// present one a field of the object under its name.
  public var named = NamedAttributes()
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
  /// How many extensions moved its end later (0 in the reply of a daemon from before the count).
  public var extensions: Int = 0
  /// Of a trial cancelled at its end: the end it is cancelled at (of one so cancelled, its end),
  /// and when that was asked.
  public var cancelsAt: Date?
  public var cancelAskedAt: Date?
  /// Of a trial whose plan gives a grace (`Grace=`): how long it stays open in state `grace`
  /// after its end.
  public var grace: Span?
  /// Of a trial with a grace: when it expires, its end plus the grace.
  public var graceEndsAt: Date?

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
    named = NamedAttributes(trial.attributes)
    state = trial.state
    startedAt = trial.period.startDate
    endsAt = trial.period.endDate
    endedAt = trial.endedAt
    reminders = trial.reminders.offsets.map(Span.init)
    revision = trial.revision
    pausedAt = trial.pause?.since
    resumesAt = trial.state == .paused ? trial.pause?.until : nil
    timeLeft = trial.state == .paused ? trial.timeLeft.map(Span.init) : nil
    extensions = trial.extensions
    cancelsAt = trial.cancelsAt
    cancelAskedAt = trial.cancelMark?.askedAt
    grace = trial.entersGrace ? Span(trial.grace) : nil
    graceEndsAt = trial.entersGrace ? trial.expiresAt : nil
    let asOf = trial.state == .paused ? trial.pause?.since ?? now : now
    daysLeft = (trial.period.daysLeft(clock: FixedInstant(asOf)).amount * 1e6).rounded() / 1e6
  }

  private enum CodingKeys: String, CodingKey {
    case id, subject, labels, state, startedAt, endsAt, endedAt, reminders, revision, daysLeft, pausedAt
    case resumesAt, timeLeft, extensions, cancelsAt, cancelAskedAt, grace, graceEndsAt
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(TrialID.self, forKey: .id)
    subject = try container.decode(String.self, forKey: .subject)
    labels = try container.decodeIfPresent([String: String].self, forKey: .labels)
    named = try NamedAttributes(from: decoder)
    state = try container.decode(TrialState.self, forKey: .state)
    startedAt = try container.decode(Date.self, forKey: .startedAt)
    endsAt = try container.decode(Date.self, forKey: .endsAt)
    endedAt = try container.decodeIfPresent(Date.self, forKey: .endedAt)
    reminders = try container.decode([Span].self, forKey: .reminders)
    revision = try container.decode(UInt32.self, forKey: .revision)
    daysLeft = try container.decode(Double.self, forKey: .daysLeft)
    pausedAt = try container.decodeIfPresent(Date.self, forKey: .pausedAt)
    resumesAt = try container.decodeIfPresent(Date.self, forKey: .resumesAt)
    timeLeft = try container.decodeIfPresent(Span.self, forKey: .timeLeft)
    extensions = try container.decodeIfPresent(Int.self, forKey: .extensions) ?? 0
    cancelsAt = try container.decodeIfPresent(Date.self, forKey: .cancelsAt)
    cancelAskedAt = try container.decodeIfPresent(Date.self, forKey: .cancelAskedAt)
    grace = try container.decodeIfPresent(Span.self, forKey: .grace)
    graceEndsAt = try container.decodeIfPresent(Date.self, forKey: .graceEndsAt)
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(subject, forKey: .subject)
    try container.encodeIfPresent(labels, forKey: .labels)
    try named.encode(to: encoder)
    try container.encode(state, forKey: .state)
    try container.encode(startedAt, forKey: .startedAt)
    try container.encode(endsAt, forKey: .endsAt)
    try container.encodeIfPresent(endedAt, forKey: .endedAt)
    try container.encode(reminders, forKey: .reminders)
    try container.encode(revision, forKey: .revision)
    try container.encode(daysLeft, forKey: .daysLeft)
    try container.encodeIfPresent(pausedAt, forKey: .pausedAt)
    try container.encodeIfPresent(resumesAt, forKey: .resumesAt)
    try container.encodeIfPresent(timeLeft, forKey: .timeLeft)
    try container.encode(extensions, forKey: .extensions)
    try container.encodeIfPresent(cancelsAt, forKey: .cancelsAt)
    try container.encodeIfPresent(cancelAskedAt, forKey: .cancelAskedAt)
    try container.encodeIfPresent(grace, forKey: .grace)
    try container.encodeIfPresent(graceEndsAt, forKey: .graceEndsAt)
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
    /// `graceStarted` on the wire (a Varlink enum value is an identifier); `grace-started`
    /// where text names the event (`name`).
    case graceStarted
    /// `followUp` on the wire; `follow-up` where text names it.
    case followUp
    case milestone

    /// The event's name as the journal, the event ids, consumers and webhooks give it.
    public var name: String {
      switch self {
      case .graceStarted: EventKind.graceStarted.name
      case .followUp: "follow-up"
      default: rawValue
      }
    }

    init(_ kind: EventKind) {
      self =
        switch kind {
        case .reminder: .reminder
        case .expiry: .expiry
        case .paused: .paused
        case .resumed: .resumed
        case .graceStarted: .graceStarted
        case .followUp: .followUp
        case .milestone: .milestone
        }
    }
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

  /// `<trial id>-r<revision>-expiry`, `<trial id>-r<revision>-grace-started`,
  /// `<trial id>-r<revision>-reminder-<ms>ms`, or
  /// `<trial id>-r<revision>-paused-<ms>ms` / `-resumed-<ms>ms` (the time left),
  /// `<trial id>-r<revision>-follow-up-<ms>ms` (the span after the expiry),
  /// `<trial id>-r<revision>-milestone-<ms>ms` (the span after the start).
  public var id: EventID
  public var trialId: TrialID
  public var subject: String?
  /// The trial's labels as the event was taken (events of the log), or as they are now;
  /// present where the subject is.
  public var labels: [String: String]?
  /// The trial's named attributes beside the subject (`TrialAttributes.named`: `plan`, …),
  /// where the subject is present, each present one a field of the object under its name.
  public var named = NamedAttributes()
  public var revision: UInt32
  public var kind: Kind
  /// For a reminder: the span before the end.
  public var offset: Span?
  /// For a pause or a resume: the time left to run.
  public var left: Span?
  /// For a follow-up: the span after the trial's expiry; for a milestone, after its start.
  public var after: Span?
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
  /// resume, the new end; of an expiry, when it expired (after a grace, the grace's end).
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
    self.kind = Kind(id.kind)
    self.offset = id.kind.reminderOffset.map(Span.init)
    self.left = id.kind.timeLeft.map(Span.init)
    self.after = (id.kind.followUpSpan ?? id.kind.milestoneSpan).map(Span.init)
    self.due = due
    self.state = state
    self.reason = reason
    self.detail = detail
    self.takenAt = takenAt
    self.lateness = lateness.map(Span.init)
    self.endsAt = TrialEvent(id: id, due: due).trialEnd
    self.cursor = nil
  }

  /// The trial's attributes the event carries as `(variable, value)`, as the journal names
  /// them (`TrialAttributes.variables`): `TRIAL_SUBJECT` and the other named ones present, in
  /// the table's order, then `TRIAL_LABEL_<KEY>` for each label, by key.
  public var attributeVariables: [(name: String, value: String)] {
    let labels = (labels ?? [:]).sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    return TrialAttributes.variables(named: { $0.index == 0 ? subject : named[$0] }, labels: labels)
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
    named = attributes.map(NamedAttributes.init) ?? NamedAttributes()
  }

  private enum CodingKeys: String, CodingKey {
    case id, trialId, subject, labels, revision, kind, offset, left, after, due, state, reason, detail,
      takenAt
    case lateness, endsAt, cursor
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(EventID.self, forKey: .id)
    trialId = try container.decode(TrialID.self, forKey: .trialId)
    subject = try container.decodeIfPresent(String.self, forKey: .subject)
    labels = try container.decodeIfPresent([String: String].self, forKey: .labels)
    named = try NamedAttributes(from: decoder)
    revision = try container.decode(UInt32.self, forKey: .revision)
    kind = try container.decode(Kind.self, forKey: .kind)
    offset = try container.decodeIfPresent(Span.self, forKey: .offset)
    left = try container.decodeIfPresent(Span.self, forKey: .left)
    after = try container.decodeIfPresent(Span.self, forKey: .after)
    due = try container.decode(Date.self, forKey: .due)
    state = try container.decode(State.self, forKey: .state)
    reason = try container.decodeIfPresent(String.self, forKey: .reason)
    detail = try container.decodeIfPresent(String.self, forKey: .detail)
    takenAt = try container.decodeIfPresent(Date.self, forKey: .takenAt)
    lateness = try container.decodeIfPresent(Span.self, forKey: .lateness)
    endsAt = try container.decodeIfPresent(Date.self, forKey: .endsAt)
    cursor = try container.decodeIfPresent(EventCursor.self, forKey: .cursor)
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(trialId, forKey: .trialId)
    try container.encodeIfPresent(subject, forKey: .subject)
    try container.encodeIfPresent(labels, forKey: .labels)
    try named.encode(to: encoder)
    try container.encode(revision, forKey: .revision)
    try container.encode(kind, forKey: .kind)
    try container.encodeIfPresent(offset, forKey: .offset)
    try container.encodeIfPresent(left, forKey: .left)
    try container.encodeIfPresent(after, forKey: .after)
    try container.encode(due, forKey: .due)
    try container.encode(state, forKey: .state)
    try container.encodeIfPresent(reason, forKey: .reason)
    try container.encodeIfPresent(detail, forKey: .detail)
    try container.encodeIfPresent(takenAt, forKey: .takenAt)
    try container.encodeIfPresent(lateness, forKey: .lateness)
    try container.encodeIfPresent(endsAt, forKey: .endsAt)
    try container.encodeIfPresent(cursor, forKey: .cursor)
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
  /// In grace; absent from a daemon from before grace.
  public var grace: Int?
  public var expired: Int
  public var converted: Int
  public var cancelled: Int

  public init(
    active: Int = 0, paused: Int = 0, grace: Int = 0, expired: Int = 0, converted: Int = 0, cancelled: Int = 0
  ) {
    self.active = active
    self.paused = paused
    self.grace = grace
    self.expired = expired
    self.converted = converted
    self.cancelled = cancelled
  }

  public init(_ counts: [TrialState: Int]) {
    self.init(
      active: counts[.active, default: 0], paused: counts[.paused, default: 0],
      grace: counts[.grace, default: 0], expired: counts[.expired, default: 0],
      converted: counts[.converted, default: 0],
      cancelled: counts[.cancelled, default: 0])
  }

  public var total: Int { active + (paused ?? 0) + (grace ?? 0) + expired + converted + cancelled }
}
