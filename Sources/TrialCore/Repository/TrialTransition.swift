/// A change of one trial's state, as a write left it: from `from` to `to` (nil: no trial
/// before, or none after), for the trial of `plan`. Every write that changes a trial's state
/// notes one in its transaction (`TrialWriteTransaction.transitions`), so that counts of trials
/// follow from what was written, never from what a command meant to do.
public struct TrialTransition: Hashable, Sendable {
  public var plan: String?
  public var from: TrialState?
  public var to: TrialState?

  public init(plan: String?, from: TrialState?, to: TrialState?) {
    self.plan = plan
    self.from = from
    self.to = to
  }
}

/// Trials by state and open trials by plan, kept by applying transitions: the one place either
/// changes as trials start, pause, resume, end, expire and are removed.
public struct TrialStateCounts: Hashable, Sendable {
  public var byState: [TrialState: Int]
  public var openByPlan: OpenTrialsByPlan

  public init(byState: [TrialState: Int] = [:], openByPlan: OpenTrialsByPlan = OpenTrialsByPlan()) {
    self.byState = byState
    self.openByPlan = openByPlan
  }

  public mutating func apply(_ transition: TrialTransition) {
    for (state, change) in [(transition.from, -1), (transition.to, 1)] {
      if let state { byState[state, default: 0] += change }
    }
    openByPlan.move(transition.plan, from: transition.from, to: transition.to)
  }

  public mutating func apply(_ transitions: some Sequence<TrialTransition>) {
    for transition in transitions { apply(transition) }
  }
}
