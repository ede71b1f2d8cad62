import FoundationEssentials
import TrialCore

/// A plan as the wire carries it (`io.trialwatch.Trials.Plan`).
public struct PlanObject: Codable, Hashable, Sendable {
  public var name: String
  public var description: String?
  public var length: Span
  /// Spans before the end, in the order they fall due.
  public var reminders: [Span]
  /// The labels each trial of the plan gets, under its own.
  public var labels: [String: String]
  /// How many active trials were started with the plan; absent when not asked for.
  public var activeTrials: Int?
  /// `TrialOnce`'s raw value; nil for `no`.
  public var once: String?
  /// `SubjectKeyRule`'s raw value; nil for `exact`.
  public var subjectKey: String?
  /// How long a trial stays paused before it resumes by itself; nil: no limit.
  public var maxPause: Span?
  /// How long after its last trial a subject may start another (`OnceFor=`); nil: never.
  public var onceFor: Span?
  /// How many extensions a trial of the plan may have; nil: no limit.
  public var maxExtensions: Int?
  /// The longest a trial of the plan may run from its start to its end; nil: no limit.
  public var maxLength: Span?
  /// Whether a trial cancelled at its end still gets its reminders; nil for no.
  public var remindAfterCancel: Bool?
  /// How long a trial stays open in state `grace` after its end (`Grace=`); nil: none.
  public var grace: Span?
  /// Its variants, in the file's order; nil: none.
  public var variants: [VariantObject]?
  /// Spans after the expiry at which a trial gets its follow-ups (`FollowUps=`); nil: none.
  public var followUps: [Span]?
  /// Spans after the start at which a trial's milestones fire (`Milestones=`); nil: none.
  public var milestones: [Span]?

  public init(_ plan: TrialPlan, activeTrials: Int?) {
    variants = plan.variants.isEmpty ? nil : plan.variants.map(VariantObject.init)
    name = plan.name
    description = plan.description
    length = Span(plan.length)
    reminders = plan.reminders.offsets.map(Span.init)
    labels = plan.labels.dictionary
    self.activeTrials = activeTrials
    once = plan.once == .no ? nil : plan.once.rawValue
    subjectKey = plan.subjectKey == .exact ? nil : plan.subjectKey.rawValue
    maxPause = plan.maxPause.map(Span.init)
    onceFor = plan.once == .no ? nil : plan.onceFor.map(Span.init)
    maxExtensions = plan.maxExtensions
    maxLength = plan.maxLength.map(Span.init)
    remindAfterCancel = plan.remindAfterCancel ? true : nil
    grace = plan.grace > .zero ? Span(plan.grace) : nil
    followUps = plan.followUps.isEmpty ? nil : plan.followUps.spans.map(Span.init)
    milestones = plan.milestones.isEmpty ? nil : plan.milestones.spans.map(Span.init)
  }
}

/// A variant of a plan as the wire carries it (`io.trialwatch.Trials.Variant`).
public struct VariantObject: Codable, Hashable, Sendable {
  public var name: String
  public var weight: Int
  public var length: Span?
  public var reminders: [Span]?
  public var grace: Span?
  public var labels: [String: String]?

  public init(_ variant: TrialVariant) {
    name = variant.name
    weight = variant.weight
    length = variant.length.map(Span.init)
    reminders = variant.reminders.map { $0.offsets.map(Span.init) }
    grace = variant.grace.map(Span.init)
    labels = variant.labels.isEmpty ? nil : variant.labels.dictionary
  }
}

/// The record that a subject had the trial a plan grants once, as the wire carries it.
public struct SubjectUseObject: Codable, Hashable, Sendable {
  public var subject: String
  public var plan: String
  public var firstStartedAt: Date
  public var id: TrialID
  /// The last trial in the scope, and when it started (the first's, unless a cooldown let
  /// another start).
  public var lastId: TrialID?
  public var lastStartedAt: Date?

  public init(_ use: SubjectUse) {
    subject = use.subject
    plan = use.plan
    firstStartedAt = use.firstStartedAt
    id = use.trial
    lastId = use.lastTrial
    lastStartedAt = use.lastStartedAt
  }
}

public struct GrantAgainParameters: VarlinkParameters, Hashable {
  public var subject: String
  public var plan: String

  public init(subject: String, plan: String) {
    self.subject = subject
    self.plan = plan
  }
}

/// The reply of GrantAgain: the record removed; nil when the subject had none.
public struct GrantAgainReply: Codable, Hashable, Sendable {
  public var used: SubjectUseObject?

  public init(used: SubjectUseObject?) {
    self.used = used
  }
}

public struct ListPlansParameters: VarlinkParameters, Hashable {
  /// False: leave out the counts of active trials (which may take a scan of the store).
  public var activeTrials: Bool?

  public init(activeTrials: Bool? = nil) {
    self.activeTrials = activeTrials
  }
}

/// The reply of ListPlans: the plans configured, by name.
public struct ListPlansReply: Codable, Hashable, Sendable {
  public var plans: [PlanObject]

  public init(plans: [PlanObject]) {
    self.plans = plans
  }
}
