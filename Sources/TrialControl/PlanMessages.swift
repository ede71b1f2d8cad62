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
  /// How long a trial stays open in state `grace` after its end (`Grace=`); nil: none.
  public var grace: Span?

  public init(_ plan: TrialPlan, activeTrials: Int?) {
    name = plan.name
    description = plan.description
    length = Span(plan.length)
    reminders = plan.reminders.offsets.map(Span.init)
    labels = plan.labels.dictionary
    self.activeTrials = activeTrials
    once = plan.once == .no ? nil : plan.once.rawValue
    subjectKey = plan.subjectKey == .exact ? nil : plan.subjectKey.rawValue
    maxPause = plan.maxPause.map(Span.init)
    grace = plan.grace > .zero ? Span(plan.grace) : nil
  }
}

/// The record that a subject had the trial a plan grants once, as the wire carries it.
public struct SubjectUseObject: Codable, Hashable, Sendable {
  public var subject: String
  public var plan: String
  public var firstStartedAt: Date
  public var id: TrialID

  public init(_ use: SubjectUse) {
    subject = use.subject
    plan = use.plan
    firstStartedAt = use.firstStartedAt
    id = use.trial
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
