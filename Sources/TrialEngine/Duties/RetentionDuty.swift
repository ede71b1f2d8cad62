import FoundationEssentials
import Logging
import TrialCore

/// The retention of ended trials (`[Trials] Retention=`): passes over the trials in id order,
/// a step at a time on the commit lane (`TrialRetention.step`), removing those ended longer ago
/// than the retention (their removal counts as transitions, as any write's does). A pass runs a
/// minute after the daemon's start (`EngineSettings.trialRetentionStartDelay`), and when the
/// oldest ended trial left comes of age (the earliest end the last pass saw, or that of a trial
/// ended since); with nothing that can come of age, nothing is armed.
final class RetentionDuty: EngineDuty {
  private unowned let engine: Engine
  private var wake = DutyWake()
  /// Whether a pass is under way.
  private var passing = false
  /// The earliest end of an ended trial not yet of age that the pass under way knows of.
  private var earliest: Date?

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {
    guard let old else {
      if settings.trialRetention != nil {
        schedule(at: engine.clock.now().adding(settings.trialRetentionStartDelay))
      }
      return
    }
    // The retention changed: a pass looks at every trial again.
    guard old.trialRetention != settings.trialRetention, !passing else { return }
    wake.cancel()
    if settings.trialRetention != nil { schedule(at: engine.clock.now()) }
  }

  func stop() { wake.cancel() }

  /// A trial ended at `date` (converted, cancelled or expired): it comes of age then.
  func trialEnded(at date: Date) {
    guard let retention = engine.settings.trialRetention else { return }
    schedule(at: date.adding(retention))
  }

  /// Arms a pass at `date`, unless one is armed earlier; during a pass, remembers `date` for
  /// when it is done.
  private func schedule(at date: Date) {
    guard !engine.stopped, let retention = engine.settings.trialRetention else { return }
    guard !passing else {
      // A pass is under way: its end arms the next from the earliest end it knows of.
      let end = date.adding(.zero - retention)
      earliest = min(earliest ?? end, end)
      return
    }
    wake.arm(at: date, on: engine.scheduler, label: "retire") { [weak self] in
      self?.wake.fired()
      self?.step(after: nil)
    }
  }

  /// One step of a pass, after `after` (nil: the first).
  private func step(after: TrialID?) {
    guard !engine.stopped, let retention = engine.settings.trialRetention else {
      passing = false
      earliest = nil
      return
    }
    let now = engine.clock.now()
    let limit = engine.settings.pruneBatch
    let fleet = engine.fleet
    passing = true
    engine.commits.submit({ txn in
      try TrialRetention.step(
        now: now, retention: retention, after: after, limit: limit, owns: { fleet?.owns($0) ?? true }, in: txn
      )
    }) { [weak self] result in self?.stepped(result, now: now) }
  }

  private func stepped(_ result: Result<TrialRetention.Step, any Error>, now: Date) {
    let step: TrialRetention.Step
    switch result {
    case .success(let value): step = value
    case .failure(let error):
      if !error.isStoreFault {
        engine.logger.error(
          "could not remove ended trials past their retention; will retry", metadata: ["error": "\(error)"])
      }
      passing = false
      schedule(at: now.adding(engine.settings.retryDelay))
      return
    }
    if step.removed > 0 {
      engine.logger.info("removed ended trials past their retention", metadata: ["trials": "\(step.removed)"])
    }
    earliest = [earliest, step.earliestEnd].compactMap { $0 }.min()
    if let next = step.next {
      // After the wakes already due: a step never holds up a fire for long.
      wake.arm(at: now, on: engine.scheduler, label: "retire", replacing: true) { [weak self] in
        self?.wake.fired()
        self?.step(after: next)
      }
      return
    }
    passing = false
    let end = earliest
    earliest = nil
    if let end, let retention = engine.settings.trialRetention { schedule(at: end.adding(retention)) }
  }
}
