/// Open trials (active, in grace, and paused) of each named plan, kept as trials change: what the
/// metrics report by plan without reading a trial. Started from the cohorts, which count every
/// trial ever started by plan and are never touched by retention.
public struct OpenTrialsByPlan: Hashable, Sendable {
  public struct Counts: Hashable, Sendable {
    /// Active or in grace (the cohorts count both as open and not paused).
    public var active: Int64 = 0
    public var paused: Int64 = 0
  }

  /// By plan name; trials without a plan are not counted here.
  public private(set) var plans: [String: Counts] = [:]

  public init() {}

  public init(cohorts: [(key: CohortKey, counts: CohortCounts)]) {
    for (key, counts) in cohorts where !key.plan.isEmpty {
      plans[key.plan, default: Counts()].active += counts.active
      plans[key.plan, default: Counts()].paused += counts.paused
    }
  }

  /// A trial of `plan` went from `old` to `new` (nil: not open, or not there).
  public mutating func move(_ plan: String?, from old: TrialState?, to new: TrialState?) {
    guard let plan, !plan.isEmpty, old != new else { return }
    var counts = plans[plan, default: Counts()]
    switch old {
    case .active?, .grace?: counts.active -= 1
    case .paused?: counts.paused -= 1
    default: break
    }
    switch new {
    case .active?, .grace?: counts.active += 1
    case .paused?: counts.paused += 1
    default: break
    }
    plans[plan] = counts
  }
}
