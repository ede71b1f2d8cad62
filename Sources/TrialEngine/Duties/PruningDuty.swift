import FoundationEssentials
import Logging
import TrialCore

/// The event log's retention (`EventRetention`): prunes, in steps of at most `pruneBatch` events
/// each one short transaction of the commit lane, the events past their age or beyond the log's
/// size, and arms its wake for when the oldest event left comes of age.
final class PruningDuty: EngineDuty {
  private unowned let engine: Engine
  private var wake = DutyWake()

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {
    guard let old, old.retention != settings.retention else { return }
    schedule(at: engine.clock.now())
  }

  func stop() { wake.cancel() }

  /// Arms a step at `date`, unless one is armed earlier.
  func schedule(at date: Date) {
    guard !engine.stopped else { return }
    wake.arm(at: date, on: engine.scheduler, label: "prune") { [weak self] in
      self?.wake.fired()
      self?.step()
    }
  }

  /// One step, in the lane; the next is armed at once when there is more, else when the oldest
  /// event left comes of age.
  private func step() {
    let now = engine.clock.now()
    let settings = engine.settings
    engine.commits.submit({ txn in
      try EventFeed.prune(now: now, retention: settings.retention, limit: settings.pruneBatch, in: txn)
    }) { [weak self] result in self?.pruned(result, now: now) }
  }

  private func pruned(_ result: Result<EventFeed.PruneStep, any Error>, now: Date) {
    let logger = engine.logger
    let step: EventFeed.PruneStep
    switch result {
    case .success(let value): step = value
    case .failure(let error):
      if !error.isStoreFault {
        logger.error("could not prune the event log; will retry", metadata: ["error": "\(error)"])
      }
      schedule(at: now.adding(engine.settings.retryDelay))
      return
    }
    for (name, count) in step.lost.sorted(by: { $0.key < $1.key }) {
      logger.warning(
        "events pruned before the consumer acknowledged them (MaxRetention reached)",
        metadata: ["consumer": "\(name)", "events": "\(count)"])
    }
    if step.pruned > 0 { logger.debug("pruned the event log", metadata: ["events": "\(step.pruned)"]) }
    if step.more {
      // After the wakes already due: a step never holds up a fire for long.
      schedule(at: now)
    } else if let next = step.nextAt {
      schedule(at: next)
    }
  }
}
