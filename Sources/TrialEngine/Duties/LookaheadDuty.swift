import FoundationEssentials
import Logging
import TrialCore

/// The far trials' look-ahead (`Planner+Far.swift`): at each wake, reads back from the store and
/// holds in full the far trials whose events come within the planner's lookahead; and, for the
/// status, the earliest pending event, a far trial's read from the store once for as long as the
/// planner's earliest far trial stays the same.
final class LookaheadDuty: EngineDuty {
  private unowned let engine: Engine
  /// The far trial whose event comes first, as read from the store, and the planner's
  /// `nextFarTrialStamp` then.
  private var farNext: (stamp: UInt64, event: TrialEvent, trial: Trial)?

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {}

  func stop() {}

  /// The planner is new (a start): nothing read for it is kept.
  func reset() { farNext = nil }

  /// Holds in full the far trials falling due within the lookahead of `now`. When the store
  /// cannot be read they stay far, and the engine tries again after the retry delay (false).
  func holdAhead(at now: Date) -> Bool {
    let ids = engine.planner.farTrialsToHold(at: now)
    guard !ids.isEmpty else {
      engine.planner.moveHorizon(at: now, lettingGo: [])
      return true
    }
    do {
      let read = try engine.repository.read { txn in
        try ids.compactMap { id in try txn.trial(id).map { ($0, try txn.ledgerEntries(trial: id)) } }
      }
      engine.planner.moveHorizon(at: now, lettingGo: ids)
      for (trial, ledger) in read { engine.planner.restore(trial, ledger: ledger) }
      return true
    } catch {
      engine.logger.error(
        "could not read the trials falling due soon; will retry",
        metadata: ["error": "\(error)", "count": "\(ids.count)"])
      return false
    }
  }

  /// The earliest pending event, with its trial when it was read from the store.
  func nextPendingEvent() -> (event: TrialEvent, trial: Trial?)? {
    if let next = engine.planner.nextEvent { return (next, nil) }
    let held = engine.planner.nextHeldEvent
    guard let far = nextFarEvent() else { return held.map { ($0, nil) } }
    // The planner knows the far trial's second only: the event held in full may still be first.
    if let held, held.due <= far.event.due { return (held, nil) }
    return (far.event, far.trial)
  }

  private func nextFarEvent() -> (event: TrialEvent, trial: Trial)? {
    let stamp = engine.planner.nextFarTrialStamp
    if let farNext, farNext.stamp == stamp, engine.planner.nextFarTrial == farNext.trial.id {
      return (farNext.event, farNext.trial)
    }
    farNext = nil
    guard let id = engine.planner.nextFarTrial,
      let trial = (try? engine.repository.read({ try $0.trial(id) })) ?? nil,
      let event = engine.planner.farEvent(of: trial)
    else { return nil }
    farNext = (stamp, event, trial)
    return (event, trial)
  }
}
