import FoundationEssentials
import Logging
import TrialCore

/// A fleet node's part in its engine (`Engine.fleet`), the engine's one property of a fleet.
public struct FleetRole {
  /// Whether this node fires the trial's events (it owns the trial's shard).
  public var owns: (TrialID) -> Bool
  /// Wakes the reader of the shared log, which hands the observers what every node logged
  /// (`Engine.handOverFollowed`), so that the engine's queue never waits for that read; set
  /// once the reader runs.
  public var followLog: (@Sendable () -> Void)?
  /// The Watches running (told by the feed that serves them): the shared log is read only
  /// while there is one.
  public let demand = LogDemand()
  /// Deliveries ride in the next wake's commit when it comes within this time: a commit of
  /// their own is a transaction on the shared database (`DeliveryQueue.markDelay`, the longest
  /// that changes anything: deliveries are recorded within it whatever comes).
  public var deliveryRecordWindow: TimeInterval = DeliveryQueue.markDelay

  public init(owns: @escaping (TrialID) -> Bool) {
    self.owns = owns
  }
}

/// A fleet node's engine: it fires only the trials of the shards it owns (`FleetRole.owns`),
/// and the fleet tells it when shards change hands and when another node changed a trial.
extension Engine {
  /// Shards changed hands: forgets the trials this node no longer fires (`lost`), plans the
  /// trials of the shards it gained (`load`), delivers what their previous owner took but
  /// did not deliver (`outbox`), and fires what is due (late, under the catch-up policy).
  public func shardsChanged(
    lost: (TrialID) -> Bool, load: (inout Planner) throws -> Void, outbox: () throws -> [LedgerEntry]
  ) {
    guard !stopped else { return }
    for id in planner.trialIDs where lost(id) { planner.cancel(id) }
    do {
      try load(&planner)
      let entries = try outbox().filter { !delivery.isPending($0.id) }
      if !entries.isEmpty {
        logger.notice(
          "delivering events another node took but did not deliver", metadata: ["count": "\(entries.count)"])
        try delivery.redeliver(entries, retryDelay: settings.retryDelay)
      }
    } catch {
      logger.error("could not load the shards this node now owns", metadata: ["error": "\(error)"])
    }
    wakeUp()
    duties.status.publish()
  }

  /// The fleet's trial counts, read from the shared store: the engine of a node counts only
  /// the changes it makes, so a fleet node sets them from time to time.
  public func setCounts(_ counts: [TrialState: Int], byPlan: OpenTrialsByPlan? = nil) {
    let read = TrialStateCounts(byState: counts, openByPlan: byPlan ?? trials.openByPlan)
    guard read != trials else { return }
    trials = read
    duties.status.publish()
  }

  /// Another node changed these trials: re-plans those this node fires from the store.
  public func refresh(_ ids: [TrialID]) {
    guard !stopped else { return }
    let mine = Set(ids.filter { fleet?.owns($0) ?? true })
    guard !mine.isEmpty else { return }
    replan(mine)
    // A trial that ended leaves the planner (a paused one keeps the resume `replan` planned).
    do {
      try repository.read { txn in
        for id in mine {
          let trial = try txn.trial(id)
          if trial?.isOpen != true, trial?.hasFollowUps != true { planner.cancel(id) }
        }
      }
    } catch {
      logger.error("could not re-read changed trials", metadata: ["error": "\(error)"])
    }
    wakeUp()
  }
}
