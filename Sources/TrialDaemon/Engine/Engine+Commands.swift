import FoundationEssentials
import Logging
import TrialCore

/// A command carried out: the trial as it now is, and reminders skipped because already due.
public struct CommandResult: Hashable, Sendable {
  public var trial: Trial
  public var skipped: [DueEvent]
}

/// Commands (group commit): the changes queued before the engine's context next runs are
/// committed together, in one durable transaction of the commit lane, then answered in order.
extension Engine {
  /// Queues a change; `completion` runs on the engine's context once it is durable (or failed).
  public func submit(
    _ command: TrialCommand, completion: @escaping (Result<CommandResult, any Error>) -> Void
  ) {
    guard !stopped else {
      completion(.failure(TrialError.invalid(.daemon, "the daemon is stopping")))
      return
    }
    pendingCommands.append((command, completion))
    guard flushWake == nil else { return }
    flushWake = scheduler.schedule(after: 0, label: "commit") { [weak self] in
      self?.flushWake = nil
      self?.flushCommands()
    }
  }

  /// Carries out one command at once and waits for its commit.
  public func perform(_ command: TrialCommand) throws -> CommandResult {
    var outcome: Result<CommandResult, any Error>?
    pendingCommands.append((command, { outcome = $0 }))
    flushCommands()
    commits.drain()
    return try outcome!.get()
  }

  /// Hands the queued commands to the commit lane as one write.
  func flushCommands() {
    flushWake?.cancel()
    flushWake = nil
    guard !pendingCommands.isEmpty else { return }
    // The next batch starts with room for one as large as this one.
    var batch: [(TrialCommand, (Result<CommandResult, any Error>) -> Void)] = []
    batch.reserveCapacity(pendingCommands.count)
    swap(&batch, &pendingCommands)
    let now = clock.now()
    let defaults = settings.defaults
    let ids = self.ids
    let folding = self.folding
    let commands = batch.map(\.0)
    commits.submit(
      { txn in
        // Each command's result, and the events it logged (reminders skipped as trials start or
        // move; pauses and resumes), as the event log holds them.
        var logged: [LoggedEvent] = []
        var trials: [Trial] = []
        let results = try commands.map { command -> Result<CommandResult, any Error> in
          do {
            let done = try TrialBook.apply(
              command, in: txn, now: now, defaults: defaults, ids: ids, folding: folding)
            logged += done.logged
            trials += done.logged.map { _ in done.trial }
            return .success(CommandResult(trial: done.trial, skipped: done.skipped))
          } catch let error as TrialError {
            return .failure(error)
          }
        }
        return (results, logged, trials)
      },
      completion: { [weak self] outcome in self?.commandsCommitted(batch, outcome, now: now) })
  }

  private func commandsCommitted(
    _ batch: [(TrialCommand, (Result<CommandResult, any Error>) -> Void)],
    _ outcome: Result<([Result<CommandResult, any Error>], [LoggedEvent], [Trial]), any Error>, now: Date
  ) {
    let results: [Result<CommandResult, any Error>]
    switch outcome {
    case .success(let (done, logged, trials)):
      results = done
      for (command, result) in zip(batch.map(\.0), results) {
        guard case .success(let done) = result else { continue }
        // In a fleet, the owner of another shard plans the trial when the commit wakes it.
        let planned = fleet?.owns(done.trial.id) ?? true
        let plan = done.trial.plan
        switch command.kind {
        case .start:
          if planned { planner.add(done.trial, now: now, reason: .alreadyDueAtStart) }
          counts[.active, default: 0] += 1
          openByPlan.move(plan, from: nil, to: .active)
        case .extend:
          if planned { planner.add(done.trial, now: now, reason: .alreadyDueAtExtension) }
        case .end:
          planner.cancel(done.trial.id)
          // A trial ended while paused keeps its pause.
          let was: TrialState = done.trial.pause == nil ? .active : .paused
          counts[was, default: 0] -= 1
          counts[done.trial.state, default: 0] += 1
          openByPlan.move(plan, from: was, to: nil)
          trialEnded(at: now)
        case .pause:
          if planned { planner.add(done.trial, now: now) }
          counts[.active, default: 0] -= 1
          counts[.paused, default: 0] += 1
          openByPlan.move(plan, from: .active, to: .paused)
        case .resume:
          if planned { planner.add(done.trial, now: now, reason: .alreadyDueAtResume) }
          counts[.paused, default: 0] -= 1
          counts[.active, default: 0] += 1
          openByPlan.move(plan, from: .paused, to: .active)
        }
      }
      published(logged)
      // Pauses and resumes go to the journal as fired events do (from the outbox, exactly once);
      // reminders skipped as trials start, move or resume are recorded delivered.
      let undelivered = zip(logged, trials).filter { $0.0.entry.event.kind.isPauseOrResume }
      if !undelivered.isEmpty { deliver(undelivered.map(\.0.entry), trials: undelivered.map(\.1)) }
    case .failure(let error):
      logger.error("could not commit changes", metadata: ["error": "\(error)", "count": "\(batch.count)"])
      results = batch.map { _ in .failure(error) }
    }
    arm()
    publishStatus()
    for ((_, completion), result) in zip(batch, results) { completion(result) }
  }
}

extension Engine {
  /// Removes, durably, the record that `subject` had the trial `plan` grants once: the record
  /// removed, nil when there was none. The journal records it with `caller` (who asked, as
  /// journal fields).
  public func grantAgain(subject: String, plan: String, caller: Logger.Metadata) throws -> SubjectUse? {
    let defaults = settings.defaults
    let folding = self.folding
    let removed = try write { txn in
      try TrialBook.grantAgain(in: txn, subject: subject, plan: plan, defaults: defaults, folding: folding)
    }
    var metadata = caller
    metadata["subject"] = "\(subject)"
    metadata["plan"] = "\(plan)"
    if let removed {
      metadata["first_trial"] = "\(removed.trial)"
      metadata["first_started_at"] = "\(RFC3339.format(removed.firstStartedAt))"
      logger.notice("granted a trial of plan \(plan) again to subject \(subject)", metadata: metadata)
    } else {
      logger.notice(
        "grant-again of plan \(plan) for subject \(subject): it had no trial recorded", metadata: metadata)
    }
    return removed
  }
}
