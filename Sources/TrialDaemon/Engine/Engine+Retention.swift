import FoundationEssentials
import Logging
import TrialCore

/// The retention of ended trials (`[Trials] Retention=`): passes over the trials in id order,
/// a step at a time on the commit lane (`TrialRetention.step`), removing those ended longer ago
/// than the retention. A pass runs a minute after the daemon's start
/// (`EngineSettings.trialRetentionStartDelay`), and when the oldest ended trial left
/// comes of age (the earliest end the last pass saw, or that of a trial ended since); with
/// nothing that can come of age, nothing is armed.
extension Engine {
  /// Arms a pass at `date`, unless one is armed earlier; during a pass, remembers `date` for
  /// when it is done.
  func scheduleRetire(at date: Date) {
    guard !stopped, let retention = settings.trialRetention else { return }
    guard !retiring else {
      // A pass is under way: its end arms the next from the earliest end it knows of.
      let end = date.adding(.zero - retention)
      retireEarliest = min(retireEarliest ?? end, end)
      return
    }
    if retireWake != nil, let armed = retireAt, armed <= date { return }
    retireWake?.cancel()
    retireAt = date
    retireWake = scheduler.schedule(at: date, label: "retire") { [weak self] in
      guard let self else { return }
      self.retireWake = nil
      self.retireAt = nil
      self.retireStep(after: nil)
    }
  }

  /// A trial ended at `date` (converted, cancelled or expired): it comes of age then.
  func trialEnded(at date: Date) {
    guard let retention = settings.trialRetention else { return }
    scheduleRetire(at: date.adding(retention))
  }

  /// The retention changed (a reload): a pass looks at every trial again.
  func restartRetention(_ retention: Duration?) {
    guard !retiring else { return }
    retireWake?.cancel()
    retireWake = nil
    retireAt = nil
    if retention != nil { scheduleRetire(at: clock.now()) }
  }

  /// One step of a pass, after `after` (nil: the first).
  private func retireStep(after: TrialID?) {
    guard !stopped, let retention = settings.trialRetention else {
      retiring = false
      retireEarliest = nil
      return
    }
    let now = clock.now()
    let limit = settings.pruneBatch
    let fleet = self.fleet
    retiring = true
    commits.submit({ txn in
      try TrialRetention.step(
        now: now, retention: retention, after: after, limit: limit, owns: { fleet?.owns($0) ?? true }, in: txn
      )
    }) { [weak self] result in self?.retired(result, now: now) }
  }

  private func retired(_ result: Result<TrialRetention.Step, any Error>, now: Date) {
    let step: TrialRetention.Step
    switch result {
    case .success(let value): step = value
    case .failure(let error):
      logger.error(
        "could not remove ended trials past their retention; will retry", metadata: ["error": "\(error)"])
      retiring = false
      scheduleRetire(at: now.adding(settings.retryDelay))
      return
    }
    if step.removed > 0 {
      for (state, count) in step.removedByState { counts[state, default: 0] -= count }
      logger.info("removed ended trials past their retention", metadata: ["trials": "\(step.removed)"])
      publishStatus()
    }
    retireEarliest = [retireEarliest, step.earliestEnd].compactMap { $0 }.min()
    if let next = step.next {
      // After the wakes already due: a step never holds up a fire for long.
      retireWake = scheduler.schedule(at: now, label: "retire") { [weak self] in
        self?.retireWake = nil
        self?.retireStep(after: next)
      }
      return
    }
    retiring = false
    let earliest = retireEarliest
    retireEarliest = nil
    if let earliest, let retention = settings.trialRetention {
      scheduleRetire(at: earliest.adding(retention))
    }
  }
}
