import Foundation
import Logging
import TrialCore

/// A fleet node's engine: it fires only the trials of the shards it owns (`owns`), and the
/// fleet tells it when shards change hands and when another node changed a trial.
extension Engine {
  /// Shards changed hands: forgets the trials this node no longer fires (`lost`), plans the
  /// trials of the shards it gained (`load`), delivers what their previous owner took but
  /// did not deliver (`outbox`), and fires what is due (late, under the catch-up policy).
  public func shardsChanged(
    lost: (TrialID) -> Bool, load: (inout Planner) throws -> Void, outbox: () throws -> [LedgerEntry]
  ) {
    guard !stopped else { return }
    for id in Array(planner.trialIDs) where lost(id) { planner.cancel(id) }
    do {
      try load(&planner)
      let entries = try outbox().filter { !delivery.isPending($0.id) }
      if !entries.isEmpty {
        let trials = try repository.read { txn in try entries.map { try txn.trial($0.event.trialID) } }
        logger.notice(
          "delivering events another node took but did not deliver", metadata: ["count": "\(entries.count)"])
        deliver(entries, trials: trials)
      }
    } catch {
      logger.error("could not load the shards this node now owns", metadata: ["error": "\(error)"])
    }
    wakeUp()
    publishStatus()
  }

  /// The fleet's trial counts, read from the shared store: the engine of a node counts only
  /// the changes it makes, so a fleet node sets them from time to time.
  public func setCounts(_ counts: [TrialState: Int]) {
    guard counts != self.counts else { return }
    self.counts = counts
    publishStatus()
  }

  /// Another node changed these trials: re-plans those this node fires from the store.
  public func refresh(_ ids: [TrialID]) {
    guard !stopped else { return }
    let mine = Set(ids.filter { owns?($0) ?? true })
    guard !mine.isEmpty else { return }
    replan(mine)
    // A trial that ended, or has nothing left to fire, leaves the planner.
    do {
      try repository.read { txn in
        for id in mine where try txn.trial(id)?.isActive != true { planner.cancel(id) }
      }
    } catch {
      logger.error("could not re-read changed trials", metadata: ["error": "\(error)"])
    }
    wakeUp()
  }
}
