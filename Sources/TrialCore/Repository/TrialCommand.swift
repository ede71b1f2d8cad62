import FoundationEssentials

/// What a refusal names as wrong: a value of a trial or of a command. The control layer gives
/// each the name its callers use (`length` is StartTrial's `duration`).
public enum TrialField: String, Hashable, Sendable {
  case subject, plan, length, end, reminders, labels, consumer, trial, daemon
  /// The variant of its plan a start names.
  case variant
  /// How far an extension moves the end.
  case `extension`
}

/// A change to trials. Its values are checked once, as it is made (the constructors throw the
/// refusal naming the value); what depends on the store or the time (the end in the future, a
/// subject already active, the limits of the labels as changed) is checked where it is applied.
public struct TrialCommand: Hashable, Sendable {
  public enum Kind: Hashable, Sendable {
    case start(TrialStart)
    /// Moves the end of a trial and makes label changes (nil removes).
    case extend(TrialID, TrialEndChange, labels: [String: String?])
    /// Ends a trial early, with label changes.
    case end(TrialID, TrialOutcome, labels: [String: String?])
    /// Pauses an active trial: its time left frozen, no event fires until it resumes.
    case pause(TrialTarget)
    /// Resumes a paused trial: its end moved to now plus the time left.
    case resume(TrialTarget)
    /// Cancels an open trial now (`atEnd` false, as `end` with `cancelled`), or at its end, with
    /// label changes.
    case cancel(TrialTarget, atEnd: Bool, labels: [String: String?])
    /// Takes back a cancel at the end.
    case uncancel(TrialTarget)
  }

  public let kind: Kind

  private init(_ kind: Kind) {
    self.kind = kind
  }

  /// Starts a trial of `subject` with `labels`, of `plan` if given, ending as `end` says (the
  /// default: the plan's length, else the configured one); nil `reminders`: the plan's, else
  /// the configured ones; `variant` names one of its plan's variants (nil: the subject's).
  public static func start(
    subject: String, plan: String? = nil, labels: [String: String] = [:],
    end: TrialStart.End = .defaultLength,
    reminders: [Duration]? = nil, variant: String? = nil
  ) throws(TrialError) -> Self {
    if let problem = Trial.validateSubject(subject) { throw .invalid(.subject, problem) }
    if let plan, let problem = TrialPlan.validateName(plan) { throw .invalid(.plan, problem) }
    if let variant, let problem = TrialPlan.validateName(variant) { throw .invalid(.variant, problem) }
    if case .after(let length) = end, length <= .zero { throw .invalid(.length, "must be a positive span") }
    let schedule: ReminderSchedule?
    do {
      schedule = try reminders.map(ReminderSchedule.init)
    } catch {
      throw .invalid(.reminders, error.description)
    }
    let checked: TrialLabels
    do {
      checked = try TrialLabels(labels)
    } catch {
      throw .invalid(.labels, error.description)
    }
    var attributes = TrialAttributes(subject: subject, plan: plan, labels: checked)
    if let variant { attributes.variant = variant }
    return Self(.start(TrialStart(attributes: attributes, end: end, reminders: schedule)))
  }

  /// Moves the end of trial `id`: later by a positive span, or to a date.
  public static func extend(_ id: TrialID, _ change: TrialEndChange, labels: [String: String?] = [:])
    throws(TrialError) -> Self
  {
    if case .by(let span) = change, span <= .zero { throw .invalid(.extension, "must be a positive span") }
    return Self(.extend(id, change, labels: labels))
  }

  /// Ends trial `id` early: converted or cancelled.
  public static func end(_ id: TrialID, _ outcome: TrialOutcome, labels: [String: String?] = [:]) -> Self {
    Self(.end(id, outcome, labels: labels))
  }

  /// Pauses a trial, by id or by its subject.
  public static func pause(_ target: TrialTarget) throws(TrialError) -> Self {
    try target.validate()
    return Self(.pause(target))
  }

  /// Resumes a trial, by id or by its subject.
  public static func resume(_ target: TrialTarget) throws(TrialError) -> Self {
    try target.validate()
    return Self(.resume(target))
  }

  /// Cancels a trial, by id or by its subject: now, or at its end.
  public static func cancel(_ target: TrialTarget, atEnd: Bool, labels: [String: String?] = [:])
    throws(TrialError) -> Self
  {
    try target.validate()
    return Self(.cancel(target, atEnd: atEnd, labels: labels))
  }

  /// Takes back a cancel at the end, by id or by subject.
  public static func uncancel(_ target: TrialTarget) throws(TrialError) -> Self {
    try target.validate()
    return Self(.uncancel(target))
  }
}

/// The trial a command is about: by id, or by subject (its open trial, found in the command's
/// transaction).
public enum TrialTarget: Hashable, Sendable {
  case id(TrialID)
  case subject(String)

  func validate() throws(TrialError) {
    if case .subject(let subject) = self, let problem = Trial.validateSubject(subject) {
      throw .invalid(.subject, problem)
    }
  }

  /// The trial's id: the subject's open (active, paused or in grace) trial.
  func id(in txn: any TrialReadTransaction) throws -> TrialID {
    switch self {
    case .id(let id): return id
    case .subject(let subject):
      guard let id = try txn.activeTrialID(subject: subject) else {
        throw TrialError.notFound(subject: subject)
      }
      return id
    }
  }
}

/// A trial to start, checked.
public struct TrialStart: Hashable, Sendable {
  /// Where the trial ends.
  public enum End: Hashable, Sendable {
    /// After the configured default length.
    case defaultLength
    /// After a positive span from its start.
    case after(Duration)
    /// At a date (which must lie in the future when it starts).
    case at(Date)
  }

  /// The trial's attributes as asked for: its own labels, without its plan's yet.
  public var attributes: TrialAttributes
  public var end: End
  /// Nil: the plan's reminders, else the configured ones.
  public var reminders: ReminderSchedule?
}

/// How an extension moves a trial's end.
public enum TrialEndChange: Hashable, Sendable {
  /// Later by a positive span.
  case by(Duration)
  /// To a date.
  case to(Date)
}

/// What a start takes when its command leaves it open: the configured length and reminders,
/// and the plans it may name.
public struct TrialDefaults: Hashable, Sendable {
  /// The seed's five days.
  public static let standard = TrialDefaults(length: .days(5), reminders: .default)

  public var length: Duration
  public var reminders: ReminderSchedule
  /// By name.
  public var plans: [String: TrialPlan]

  public init(length: Duration, reminders: ReminderSchedule, plans: [String: TrialPlan] = [:]) {
    self.length = length
    self.reminders = reminders
    self.plans = plans
  }

  /// `start` with what it leaves open filled in, from its plan's variant and its plan first:
  /// its attributes (the plan's labels, the variant's over them, its own over both; the variant
  /// it names, or the one its subject's key gets), its end as of `now`, its reminders, and its
  /// grace. `fold` folds subjects for a plan's `SubjectKey=`.
  public func resolve(
    _ start: TrialStart, now: Date, fold: (String) throws(TrialError) -> String = SubjectFolding.ascii.fold
  ) throws(TrialError) -> (
    attributes: TrialAttributes, end: Date, reminders: ReminderSchedule, grace: Duration
  ) {
    var attributes = start.attributes
    var length = self.length
    var reminders = self.reminders
    var grace = Duration.zero
    if let name = attributes.plan {
      guard let plan = plans[name] else { throw TrialError(.planNotFound(name: name)) }
      length = plan.length
      reminders = plan.reminders
      grace = plan.grace
      var labels = plan.labels
      if let variant = try Self.variant(of: plan, for: attributes, fold: fold) {
        attributes.variant = variant.name
        length = variant.length ?? length
        reminders = variant.reminders ?? reminders
        grace = variant.grace ?? grace
        do {
          labels = try variant.labels.pairs.isEmpty ? labels : TrialPlan.over(labels, variant.labels)
        } catch {
          throw .invalid(.labels, "of variant \"\(variant.name)\" of plan \"\(name)\": \(error.description)")
        }
      }
      do {
        attributes.labels = try TrialPlan.over(labels, attributes.labels)
      } catch {
        throw .invalid(.labels, "with those of plan \"\(name)\": \(error.description)")
      }
    } else if let variant = attributes.variant {
      throw .invalid(.variant, "\"\(variant)\" names no variant: the start names no plan")
    }
    let end =
      switch start.end {
      case .defaultLength: now.adding(length)
      case .after(let span): now.adding(span)
      case .at(let date): date
      }
    if let name = attributes.plan, let maxLength = plans[name]?.maxLength, end > now.adding(maxLength) {
      // A plan's Length= is never above its MaxLength=: only a start's own end can pass it.
      let field: TrialField = if case .at = start.end { .end } else { .length }
      throw .invalid(
        field,
        "ends \(TimeSpan.format(.milliseconds(end.duration(since: now).roundedMilliseconds))) after the start, "
          + "beyond the MaxLength=\(TimeSpan.format(maxLength)) of plan \"\(name)\"")
    }
    return (attributes, end, start.reminders ?? reminders, grace)
  }
}

extension TrialDefaults {
  /// The variant of `plan` a start with `attributes` takes: the one it names (which must be
  /// one of the plan's), or the one its subject's key gets; nil for a plan without variants.
  static func variant(
    of plan: TrialPlan, for attributes: TrialAttributes, fold: (String) throws(TrialError) -> String
  ) throws(TrialError) -> TrialVariant? {
    if let name = attributes.variant {
      guard let variant = plan.variant(named: name) else {
        let known = plan.variants.map(\.name)
        throw .invalid(
          .variant,
          "\"\(name)\" is no variant of plan \"\(plan.name)\""
            + (known.isEmpty ? ", which has none" : " (it has \(known.joined(separator: ", ")))"))
      }
      return variant
    }
    guard !plan.variants.isEmpty else { return nil }
    return plan.variant(forKey: try plan.subjectKey.key(of: attributes.subject, fold: fold))
  }
}

extension TrialBook {
  /// Carries out `command` in `txn`: the trial as it now is, the reminders skipped because
  /// already due, and the events logged.
  public static func apply(
    _ command: TrialCommand, in txn: any TrialWriteTransaction, now: Date, defaults: TrialDefaults,
    ids: any TrialIDGenerator, folding: SubjectFolding
  ) throws -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent]) {
    switch command.kind {
    case .start(let start):
      let resolved = try defaults.resolve(start, now: now, fold: folding.fold)
      let plan = resolved.attributes.plan.flatMap { defaults.plans[$0] }
      let once = try plan.flatMap { try $0.use(of: resolved.attributes.subject, fold: folding.fold) }
      return try startTrial(
        in: txn, attributes: resolved.attributes, endDate: resolved.end, reminders: resolved.reminders,
        grace: resolved.grace, followUps: plan?.followUps ?? .none,
        milestones: plan?.milestones ?? .none, now: now, ids: ids, once: once,
        onceFor: plan?.onceFor)
    case .extend(let id, let change, let labels):
      guard let current = try txn.trial(id) else { throw TrialError.notFound(id: id) }
      let end =
        switch change {
        case .by(let span): current.period.endDate.adding(span)
        case .to(let date): date
        }
      // The limits of its plan as loaded now: they limit the operator's action, not the trial.
      let limits = current.plan.flatMap { defaults.plans[$0] }?.extensionLimits ?? .none
      return try extendTrial(in: txn, id, to: end, labels: labels, now: now, limits: limits)
    case .end(let id, let outcome, let labels):
      let ended = try ending(in: txn, id, outcome: outcome, labels: labels, now: now)
      return (ended.trial, [], ended.logged)
    case .pause(let target):
      let id = try target.id(in: txn)
      let plan = try txn.trial(id)?.attributes.plan.flatMap { defaults.plans[$0] }
      let paused = try pauseTrial(in: txn, id, maxPause: plan?.maxPause, now: now)
      return (paused.trial, [], paused.logged)
    case .resume(let target):
      return try resumeTrial(in: txn, try target.id(in: txn), now: now)
    case .cancel(let target, let atEnd, let labels):
      let id = try target.id(in: txn)
      guard atEnd else {
        let ended = try ending(in: txn, id, outcome: .cancelled, labels: labels, now: now)
        return (ended.trial, [], ended.logged)
      }
      let plan = try txn.trial(id)?.attributes.plan.flatMap { defaults.plans[$0] }
      let trial = try cancelAtEnd(
        in: txn, id, remindAfterCancel: plan?.remindAfterCancel ?? false, labels: labels, now: now)
      return (trial, [], [])
    case .uncancel(let target):
      return (try uncancel(in: txn, try target.id(in: txn)), [], [])
    }
  }
}

extension TrialBook {
  /// Removes the record that `subject` had the trial `plan` grants once, so that the subject may
  /// start one again: the record removed, nil when there was none.
  /// - Throws: `TrialError` when no such plan is configured, or the plan grants trials as often
  ///   as asked.
  public static func grantAgain(
    in txn: any TrialWriteTransaction, subject: String, plan name: String, defaults: TrialDefaults,
    folding: SubjectFolding
  ) throws -> SubjectUse? {
    if let problem = Trial.validateSubject(subject) { throw TrialError.invalid(.subject, problem) }
    guard let plan = defaults.plans[name] else { throw TrialError(.planNotFound(name: name)) }
    guard let place = try plan.use(of: subject, fold: folding.fold) else {
      throw TrialError.invalid(.plan, "plan \"\(name)\" grants trials as often as asked (Once=no)")
    }
    guard let use = try txn.subjectUse(scope: place.scope, key: place.key) else { return nil }
    _ = try txn.removeSubjectUse(scope: place.scope, key: place.key)
    return use
  }
}
