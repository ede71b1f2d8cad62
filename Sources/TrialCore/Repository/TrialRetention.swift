import FoundationEssentials

/// Ended trials kept no longer than `[Trials] Retention=`: removed with their ledger entries,
/// in small steps over the trials in id order, each step one short transaction. What outlives
/// them is kept elsewhere: the records of subjects granted a trial once (`SubjectUse`), and the
/// event log's own events (pruned by its own retention).
public enum TrialRetention {
  /// One step of a pass.
  public struct Step: Hashable, Sendable {
    /// Trials removed (each noted in the transaction as a transition to nothing).
    public var removed = 0
    /// Where the pass goes on: the last trial examined, when more may follow; nil when the
    /// step reached the last trial.
    public var next: TrialID?
    /// The earliest end, among the ended trials examined that are not old enough yet.
    public var earliestEnd: Date?

    public init() {}
  }

  /// Examines at most `limit` trials after `after` and removes those that ended more than
  /// `retention` before `now` (with their ledger entries), of the trials `owns` admits (a fleet
  /// node removes those of its shards).
  public static func step(
    now: Date, retention: Duration, after: TrialID?, limit: Int, owns: (TrialID) -> Bool = { _ in true },
    in txn: any TrialWriteTransaction
  ) throws -> Step {
    var step = Step()
    let cutoff = now.adding(.zero - retention)
    var old: [Trial] = []
    var examined = 0
    var last: TrialID?
    try txn.scanTrials(after: after) { trial in
      guard examined < limit else {
        step.next = last
        return false
      }
      examined += 1
      last = trial.id
      guard trial.state.isEnded, let ended = trial.endedAt, owns(trial.id) else { return true }
      if ended <= cutoff {
        old.append(trial)
      } else {
        step.earliestEnd = min(step.earliestEnd ?? ended, ended)
      }
      return true
    }
    for trial in old {
      try txn.removeTrial(trial.id)
      txn.noteTransition(TrialTransition(plan: trial.plan, from: trial.state, to: nil))
      step.removed += 1
    }
    return step
  }
}
