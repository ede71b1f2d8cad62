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

  public init(_ plan: TrialPlan, activeTrials: Int?) {
    name = plan.name
    description = plan.description
    length = Span(plan.length)
    reminders = plan.reminders.offsets.map(Span.init)
    labels = plan.labels.dictionary
    self.activeTrials = activeTrials
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
