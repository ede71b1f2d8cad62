/// A named kind of trial (`pro`, `enterprise`): its length, reminders and default labels, as
/// one plan file gives them. A trial started with a plan takes these values at its start and
/// keeps them: a plan changed later changes only trials started after.
public struct TrialPlan: Hashable, Sendable {
  public var name: String
  public var length: Duration
  public var reminders: ReminderSchedule
  /// Labels every trial of the plan gets, under those its start gives (which win).
  public var labels: TrialLabels
  public var description: String?
  /// Whether a subject gets this plan's trial once.
  public var once: TrialOnce
  /// How subjects are told apart when `once` is not `no`.
  public var subjectKey: SubjectKeyRule
  /// With `once` not `no`, how long after its last trial in the scope started a subject may
  /// start one again (`OnceFor=`); nil: never.
  public var onceFor: Duration?
  /// How long a trial of the plan stays paused before it resumes by itself; nil: no limit.
  public var maxPause: Duration?
  /// How many extensions a trial of the plan may have; nil: no limit (`ExtensionLimits`).
  public var maxExtensions: Int?
  /// The longest a trial of the plan may run from its start to its end; nil: no limit.
  public var maxLength: Duration?
  /// Whether a trial of the plan cancelled at its end still gets its reminders (taken when the
  /// cancel is asked, `TrialCancelMark.remindAfterCancel`).
  public var remindAfterCancel: Bool
  /// How long a trial of the plan stays open after its end, in state `grace`, before it
  /// expires (`Grace=`); zero: none.
  public var grace: Duration
  /// Its variants (`[Variant]` sections), in the file's order; empty: none.
  public var variants: [TrialVariant]
  /// Spans after the expiry at which a trial of the plan gets its follow-ups (`FollowUps=`),
  /// taken at its start.
  public var followUps: FollowUpSchedule = .none
  /// Spans after the start at which the event `milestone` fires (`Milestones=`).
  public var milestones: MilestoneSchedule = .none

  public init(
    name: String, length: Duration, reminders: ReminderSchedule, labels: TrialLabels = .none,
    description: String? = nil, once: TrialOnce = .no, subjectKey: SubjectKeyRule = .exact,
    maxPause: Duration? = nil, onceFor: Duration? = nil, maxExtensions: Int? = nil,
    maxLength: Duration? = nil,
    remindAfterCancel: Bool = false, grace: Duration = .zero, variants: [TrialVariant] = []
  ) {
    self.variants = variants
    self.maxPause = maxPause
    self.onceFor = onceFor
    self.maxExtensions = maxExtensions
    self.maxLength = maxLength
    self.remindAfterCancel = remindAfterCancel
    self.grace = grace
    self.name = name
    self.length = length
    self.reminders = reminders
    self.labels = labels
    self.description = description
    self.once = once
    self.subjectKey = subjectKey
  }

  /// The longest plan name.
  public static let maximumNameBytes = 64

  /// Why `name` cannot name a plan; nil when it can. A name is 1 to 64 of `a-z`, `0-9`, `_`,
  /// `-` and `.`, starting with a letter or digit: it is a file name and a journal value.
  public static func validateName(_ name: String) -> String? {
    let bytes = Array(name.utf8)
    guard let first = bytes.first else { return "must not be empty" }
    if bytes.count > maximumNameBytes { return "is longer than \(maximumNameBytes) bytes" }
    func isAlphanumeric(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
    guard isAlphanumeric(first) else { return "must start with a lower-case letter or a digit" }
    guard
      bytes.allSatisfy({
        isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
      })
    else { return "may hold only a-z, 0-9, _, - and ." }
    return nil
  }

  /// The labels of a trial of this plan started with `own`: the plan's, with the trial's own
  /// put over them.
  public func labels(under own: TrialLabels) throws(TrialLabels.Invalid) -> TrialLabels {
    try Self.over(labels, own)
  }

  /// `below` with `above` put over it.
  public static func over(_ below: TrialLabels, _ above: TrialLabels) throws(TrialLabels.Invalid)
    -> TrialLabels
  {
    guard !below.pairs.isEmpty else { return above }
    return try below.applying(
      Dictionary(uniqueKeysWithValues: above.pairs.map { ($0.key, Optional($0.value)) }))
  }

  /// The card networks' rule for free trials that convert to paid: Visa (since April 2020) and
  /// Mastercard want a reminder at least 7 days before the end of a trial longer than 7 days.
  public static let cardNetworkNotice = Duration.days(7)

  /// Whether trials of `length` with `reminders` meet the card networks' rule: not longer than
  /// `cardNetworkNotice`, or with a reminder at least that long before the end that can fire
  /// (one as long as the trial or longer is already due at its start, and skipped).
  public static func meetsCardNetworkRule(length: Duration, reminders: ReminderSchedule) -> Bool {
    length <= cardNetworkNotice
      || reminders.offsets.contains { $0 >= cardNetworkNotice && $0 < length }
  }
}
