import FoundationEssentials

public enum TrialState: String, Hashable, Sendable, CaseIterable {
  case active
  /// Not running: no event fires, the time left is frozen until it resumes.
  case paused
  case expired
  case converted
  case cancelled
  /// Past its end, in its plan's grace: still open (the subject keeps its trial), its expiry
  /// due at the end plus the grace.
  case grace

  public var isEnded: Bool { self != .active && self != .paused && self != .grace }
  /// Its events fire: active, or in grace (where only the expiry is left).
  public var isRunning: Bool { self == .active || self == .grace }
}

/// A paused trial's pause: since when, and when it resumes by itself (its plan's `MaxPause=`
/// after `since`; nil: only when asked).
public struct TrialPause: Hashable, Sendable {
  public var since: Date
  public var until: Date?

  public init(since: Date, until: Date? = nil) {
    self.since = since
    self.until = until
  }
}

/// How a trial can be ended early by its owner.
public enum TrialOutcome: String, Hashable, Sendable, CaseIterable {
  case converted
  case cancelled

  public var state: TrialState {
    switch self {
    case .converted: .converted
    case .cancelled: .cancelled
    }
  }
}

/// When reminders fire, as spans before the trial's end.
public struct ReminderSchedule: Hashable, Sendable, CustomStringConvertible {
  /// 3 days and 1 day before the end.
  public static let `default` = ReminderSchedule(uncheckedOffsets: [.days(3), .days(1)])
  public static let none = ReminderSchedule(uncheckedOffsets: [])
  /// The most reminders one trial may carry.
  public static let maximumCount = 32

  public struct InvalidOffsets: Error, Equatable, CustomStringConvertible {
    public var description: String
  }

  /// Offsets before the end, largest first (so in the order they fall due), without duplicates.
  public let offsets: [Duration]

  /// Offsets are rounded to whole milliseconds; each must be at least a millisecond.
  public init(_ offsets: [Duration]) throws(InvalidOffsets) {
    var seen = Set<Duration>()
    var cleaned: [Duration] = []
    for offset in offsets {
      guard offset >= .milliseconds(1) else {
        throw InvalidOffsets(
          description: "reminder offset \(TimeSpan.format(offset)) must be a positive span before the end")
      }
      let rounded = Duration.milliseconds(offset.roundedMilliseconds)
      if seen.insert(rounded).inserted { cleaned.append(rounded) }
    }
    guard cleaned.count <= ReminderSchedule.maximumCount else {
      throw InvalidOffsets(
        description: "at most \(ReminderSchedule.maximumCount) reminders per trial, got \(cleaned.count)")
    }
    self.offsets = cleaned.sorted(by: >)
  }

  private init(uncheckedOffsets: [Duration]) {
    self.offsets = uncheckedOffsets
  }

  public var description: String {
    offsets.isEmpty ? "none" : offsets.map(TimeSpan.format).joined(separator: ", ")
  }
}

/// One subject's trial: the unit trialwatch keeps and fires events for.
public struct Trial: Hashable, Sendable {
  public let id: TrialID
  /// The subject, the labels and the other attributes every event of the trial carries.
  public var attributes: TrialAttributes
  public var period: TrialPeriod
  public var state: TrialState
  public var reminders: ReminderSchedule
  /// Changes whenever the end date changes, so events of an older end can never be taken for current.
  public var revision: UInt32
  /// When the trial ended (expired, converted or cancelled).
  public var endedAt: Date?
  /// The pause of a paused trial (a trial ended while paused keeps it); nil otherwise.
  public var pause: TrialPause?
  /// Its extensions, cancel at the end, grace, follow-ups and milestones, out of line: a plain
  /// trial carries none (`TrialLifecycle.Storage`). Read and written through the properties below.
  private var lifecycleStorage: TrialLifecycle.Storage

  /// Its lifecycle beyond reminders and end; nil for a plain trial (none of the properties
  /// below set), which the hot paths read once instead of each property.
  public var lifecycle: TrialLifecycle? { lifecycleStorage.unlessPlain }

  /// How many times an extension moved its end later (`TrialBook.extendTrial`); a resume is
  /// not an extension. Its plan's `MaxExtensions=` limits it.
  public var extensions: Int {
    get { lifecycleStorage.unlessPlain?.extensions ?? 0 }
    set { lifecycleStorage.value.extensions = newValue }
  }
  /// Of a trial cancelled at its end: the mark (a trial so cancelled keeps it); nil otherwise.
  public var cancelMark: TrialCancelMark? {
    get { lifecycleStorage.unlessPlain?.cancelMark }
    set { lifecycleStorage.value.cancelMark = newValue }
  }
  /// The grace its plan gave it at its start (whole milliseconds; zero: none): at its end it
  /// enters `grace` (the event `grace-started`) and expires this long after.
  public var grace: Duration {
    get { lifecycleStorage.unlessPlain?.grace ?? .zero }
    set { lifecycleStorage.value.grace = newValue }
  }

  /// Its plan's follow-ups, taken at its start: due after its expiry (`expiryIndex`), the last
  /// events of its revision.
  public var followUps: FollowUpSchedule {
    get { lifecycleStorage.unlessPlain?.followUps ?? FollowUpSchedule.none }
    set { lifecycleStorage.value.followUps = newValue }
  }

  /// Its plan's milestones, taken at its start, less those a pause or an end cut
  /// (`cutting(_:)`): due at the start plus each span (`milestoneEvents`).
  public var milestones: MilestoneSchedule {
    get { lifecycleStorage.unlessPlain?.milestones ?? MilestoneSchedule.none }
    set { lifecycleStorage.value.milestones = newValue }
  }

  /// The longest grace a trial may have: 365 days.
  public static let maximumGrace = Duration.days(365)

  public init(
    id: TrialID, subject: String, labels: TrialLabels = .none, period: TrialPeriod,
    state: TrialState = .active,
    reminders: ReminderSchedule = .default, revision: UInt32 = 1, endedAt: Date? = nil,
    pause: TrialPause? = nil, extensions: Int = 0, cancelMark: TrialCancelMark? = nil,
    grace: Duration = .zero,
    followUps: FollowUpSchedule = .none, milestones: MilestoneSchedule = .none
  ) {
    self.init(
      id: id, attributes: TrialAttributes(subject: subject, labels: labels), period: period, state: state,
      reminders: reminders, revision: revision, endedAt: endedAt, pause: pause, extensions: extensions,
      cancelMark: cancelMark, grace: grace, followUps: followUps, milestones: milestones)
  }

  public init(
    id: TrialID, attributes: TrialAttributes, period: TrialPeriod, state: TrialState = .active,
    reminders: ReminderSchedule = .default, revision: UInt32 = 1, endedAt: Date? = nil,
    pause: TrialPause? = nil, extensions: Int = 0, cancelMark: TrialCancelMark? = nil,
    grace: Duration = .zero,
    followUps: FollowUpSchedule = .none, milestones: MilestoneSchedule = .none
  ) {
    self.lifecycleStorage = TrialLifecycle.Storage(
      extensions: extensions, cancelMark: cancelMark, grace: grace, followUps: followUps,
      milestones: milestones)
    self.id = id
    self.attributes = attributes
    self.period = period
    self.state = state
    self.reminders = reminders
    self.revision = revision
    self.endedAt = endedAt
    self.pause = pause
  }

  /// The caller's name for what is on trial, e.g. `acme-42`.
  public var subject: String {
    get { attributes.subject }
    set { attributes.subject = newValue }
  }

  public var labels: TrialLabels {
    get { attributes.labels }
    set { attributes.labels = newValue }
  }

  /// The plan it started with, if any.
  public var plan: String? { attributes.plan }

  /// Every event of the current revision, in the order they fall due: reminders, the start of
  /// its grace (when it enters grace), the expiry, then its follow-ups.
  public var events: [TrialEvent] {
    (0..<eventCount).map { event(at: $0) }
  }

  /// How many events the current revision plans: its reminders, `grace-started` when it enters
  /// grace, the expiry, its follow-ups.
  public var eventCount: Int { expiryIndex + 1 + lifecycleStorage.followUpCount }

  /// The index of the expiry among `events`: after the reminders and the start of grace.
  public var expiryIndex: Int { reminders.offsets.count + (entersGrace ? 1 : 0) }

  /// The event at `index` of the current revision's plan (`expiryIndex`: the expiry).
  public func event(at index: Int) -> TrialEvent {
    let expiry = expiryIndex
    let kind: EventKind =
      index < reminders.offsets.count
      ? .reminder(before: reminders.offsets[index])
      : index < expiry
        ? .graceStarted : index == expiry ? .expiry : .followUp(after: followUps.spans[index - expiry - 1])
    return TrialEvent(
      trialID: id, revision: revision, kind: kind, endDate: period.endDate, grace: expiryGrace)
  }

  /// What happens at the trial's end: whether it enters grace (`grace-started`, the expiry
  /// `grace` later) or its expiry fires (`stateAtEnd`). The one place that decides it: a trial
  /// cancelled at its end gets no grace, it is cancelled at its end.
  public var entersGrace: Bool { lifecycleStorage.entersGrace }

  /// The span from the end to the expiry: the grace when it enters grace, else zero.
  public var expiryGrace: Duration { entersGrace ? grace : .zero }

  /// When the current revision's expiry falls due: the end, plus the grace when it enters grace.
  public var expiresAt: Date { period.endDate.adding(expiryGrace) }

  /// Moves the end date, starting a new revision.
  public mutating func reschedule(endDate: Date) {
    period.endDate = endDate
    revision &+= 1
  }

  /// Active: before its end, not paused.
  public var isActive: Bool { state == .active }
  /// Its events fire: active, or in grace (where only the expiry is left).
  public var isRunning: Bool { state.isRunning }
  /// Not ended: active, paused or in grace. The subject's one trial at a time.
  public var isOpen: Bool { !state.isEnded }

  /// A paused trial's time left: from its pause to its end, in whole milliseconds.
  public var timeLeft: Duration? {
    guard let pause else { return nil }
    return .milliseconds(period.endDate.duration(since: pause.since).roundedMilliseconds)
  }

  /// The event that resumes a paused trial at `due` (the same event whoever resumes it: the
  /// caller, or its pause running out).
  public func resumeEvent(at due: Date) -> TrialEvent? {
    guard state == .paused, let left = timeLeft else { return nil }
    return TrialEvent(id: EventID(trialID: id, revision: revision, kind: .resumed(left: left)), due: due)
  }

  /// The resume a paused trial's pause running out brings, when it has a limit.
  public var pendingResume: TrialEvent? {
    pause?.until.flatMap { resumeEvent(at: $0) }
  }

  /// The end a trial cancelled at its end is cancelled at; nil when it is not so marked.
  public var cancelsAt: Date? { cancelMark == nil ? nil : period.endDate }

  /// Whether a reminder of the trial due now is skipped (`cancel-at-end`) rather than fired.
  public var skipsReminders: Bool { cancelMark.map { !$0.remindAfterCancel } ?? false }

  /// What happens when the trial's expiry is taken at `takenAt`: the one place that decides
  /// how it ends. A trial cancelled at its end is cancelled, ended at its end, its attribute
  /// `outcome` (which its expiry event carries) `cancelled`; any other expires, ended when its
  /// expiry was taken (a trial in grace: the end plus the grace, or later).
  public func stateAtEnd(takenAt: Date) -> (state: TrialState, endedAt: Date, outcome: String?) {
    if cancelMark != nil { return (.cancelled, period.endDate, TrialState.cancelled.rawValue) }
    return (.expired, takenAt, nil)
  }

  /// The trial as its ledger leaves it: a running trial (active or in grace) whose current
  /// revision's expiry was taken (at `expiryTakenAt`) has ended as `stateAtEnd` says. The one
  /// statement of "an expiry in the ledger means ended", for the fire that records it and for
  /// the stores that read it.
  public func expired(byExpiryTakenAt expiryTakenAt: Date?) -> Trial {
    guard isRunning, let expiryTakenAt else { return self }
    var trial = self
    let end = stateAtEnd(takenAt: expiryTakenAt)
    (trial.state, trial.endedAt) = (end.state, end.endedAt)
    if let outcome = end.outcome { trial.attributes.outcome = outcome }
    return trial
  }

  /// The trial as a taken event of its current revision leaves it: `grace-started` moves an
  /// active trial into grace, the expiry expires it (`expired(byExpiryTakenAt:)`); any other
  /// event leaves it as it is. The stores write the state `grace` with the ledger entry, in one
  /// transaction, and read the expiry from the ledger.
  public func taking(_ event: TrialEvent, at takenAt: Date) -> Trial {
    switch event.kind {
    case .expiry:
      return expired(byExpiryTakenAt: takenAt)
    case .graceStarted where isActive && entersGrace:
      var trial = self
      trial.state = .grace
      return trial
    default:
      return self
    }
  }

  /// Subjects are printable names: 1 to 255 bytes, no control characters.
  public static func validateSubject(_ subject: String) -> String? {
    if subject.isEmpty { return "subject must not be empty" }
    if subject.utf8.count > 255 { return "subject is longer than 255 bytes" }
    // Printable ASCII (no C0 control, no DEL) needs no look-up of Unicode properties.
    if subject.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return nil }
    if subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
      return "subject must not contain control characters"
    }
    return nil
  }
}
