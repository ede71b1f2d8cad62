import FoundationEssentials
import Logging
import Synchronization
import TrialCore

/// A command carried out: the trial as it now is, and reminders skipped because already due.
public struct CommandResult: Hashable, Sendable {
  public var trial: Trial
  public var skipped: [DueEvent]
}

/// Where commands enter the engine from any thread: what a command needs of the engine (the
/// clock, the defaults as last reloaded, the id generator, how subjects fold) is read here, so a
/// connection's thread hands a command to the commit lane itself, with no hop to the engine's
/// context on the way in; the command comes back to that context once durable (`CommandWrite`).
/// The daemon's lane takes writes from any thread; the lanes of tests in virtual time are
/// called on the engine's context, as everything there is.
public final class CommandIntake: @unchecked Sendable {
  // @unchecked: `engine` is touched only by the writes' completions, on the engine's context;
  // the rest is immutable or behind `defaults`' lock, and the lane's `submit` is thread-safe.
  unowned let engine: Engine
  let commits: any CommitLane
  let clock: any WallClock
  let ids: any TrialIDGenerator
  let folding: SubjectFolding
  private let current: Mutex<TrialDefaults>

  init(engine: Engine, defaults: TrialDefaults) {
    self.engine = engine
    commits = engine.commits
    clock = engine.clock
    ids = engine.ids
    folding = engine.folding
    current = Mutex(defaults)
  }

  /// The defaults of plans, as last reloaded.
  var defaults: TrialDefaults {
    get { current.withLock { $0 } }
    set { current.withLock { $0 = newValue } }
  }

  /// Queues a command, from any thread; `completion` runs on the engine's context once it is
  /// durable (or failed; once the engine stopped, with `Engine.stopping`, or with the I/O error
  /// that stopped its lane).
  public func submit(
    _ command: TrialCommand, completion: @escaping (Result<CommandResult, any Error>) -> Void
  ) {
    commits.submit(CommandWrite(command, intake: self, completion: completion))
  }
}

/// Changes: each goes to the commit lane as it comes, where writes that arrive while one is in
/// progress share its next transaction (the group commit), and is answered on the engine's
/// context once durable. Nothing here waits for a commit.
extension Engine {
  /// Queues a change; `completion` runs on the engine's context once it is durable (or failed).
  public func submit(
    _ command: TrialCommand, completion: @escaping (Result<CommandResult, any Error>) -> Void
  ) {
    intake.submit(command, completion: completion)
  }

  /// Runs `body` in the lane's next transaction, behind every write submitted before it. Once it
  /// is durable, `taken` runs with its result, on the engine's context, as the transaction's
  /// writes are taken in; `completion` runs once the whole transaction is (`settled`), so that
  /// an answer is never ahead of the snapshot reads are answered from. A `TrialError` the body
  /// throws (always before it writes anything) fails this write alone; any other error is the
  /// store's, and fails every write of the transaction.
  func change<R>(
    _ body: @escaping (any TrialWriteTransaction) throws -> R, taken: @escaping (R) -> Void = { _ in },
    completion: @escaping (Result<R, any Error>) -> Void
  ) {
    guard !stopped else { return completion(.failure(storeFailure ?? Self.stopping)) }
    commits.submit(ChangeWrite(body, taken: taken, completion: completion))
  }

  public static var stopping: TrialError { .invalid(.daemon, "the daemon is stopping") }

  /// A command is durable: the planner follows it, and its events are handed on.
  func applied(_ command: TrialCommand, trial: Trial, logged: [LoggedEvent], now: Date) {
    // In a fleet, the owner of another shard plans the trial when the commit wakes it.
    let planned = fleet?.owns(trial.id) ?? true
    switch command.kind {
    case .start: if planned { planner.add(trial, now: now, reason: .alreadyDueAtStart) }
    case .extend: if planned { planner.add(trial, now: now, reason: .alreadyDueAtExtension) }
    // An ended trial's follow-ups stay planned: each is called off or fires as it falls due.
    case .end: if planned { planner.add(trial, now: now) } else { planner.cancel(trial.id) }
    case .pause: if planned { planner.add(trial, now: now) }
    case .resume: if planned { planner.add(trial, now: now, reason: .alreadyDueAtResume) }
    case .cancel(_, let atEnd, _):
      if !atEnd {
        if planned { planner.add(trial, now: now) } else { planner.cancel(trial.id) }
      } else if planned, trial.grace > .zero {
        planner.add(trial, now: now, reason: .alreadyDueAtExtension)
      }
    // A cancel at the end and its undoing change no reminder's due time: the mark is read as each
    // event is taken (`TrialBook.take`). Of a trial with a grace they change its end: with the
    // mark it is cancelled at its end, without it enters grace there (`Trial.entersGrace`).
    case .uncancel:
      if planned, trial.grace > .zero { planner.add(trial, now: now, reason: .alreadyDueAtExtension) }
    }
    published(logged)
    // Pauses and resumes go to the journal as fired events do (from the outbox, exactly once);
    // reminders skipped as trials start, move or resume are recorded delivered.
    let undelivered = logged.filter { $0.entry.event.kind.isPauseOrResume }
    if !undelivered.isEmpty {
      delivery.deliver(
        undelivered, trials: undelivered.map { _ in trial }, retryDelay: settings.retryDelay,
        nextDue: planner.nextEventDue)
    }
  }

  /// Removes, durably, the record that `subject` had the trial `plan` grants once: the record
  /// removed, nil when there was none. The journal records it with `caller` (who asked, as
  /// journal fields).
  public func grantAgain(
    subject: String, plan: String, caller: Logger.Metadata,
    completion: @escaping (Result<SubjectUse?, any Error>) -> Void
  ) {
    let defaults = settings.defaults
    let folding = self.folding
    let logger = self.logger
    change({ txn in
      try TrialBook.grantAgain(in: txn, subject: subject, plan: plan, defaults: defaults, folding: folding)
    }) { result in
      if case .success(let removed) = result {
        var metadata = caller
        metadata["subject"] = "\(subject)"
        metadata["plan"] = "\(plan)"
        if let removed {
          metadata["first_trial"] = "\(removed.trial)"
          metadata["first_started_at"] = "\(RFC3339.format(removed.firstStartedAt))"
          logger.notice("granted a trial of plan \(plan) again to subject \(subject)", metadata: metadata)
        } else {
          logger.notice(
            "grant-again of plan \(plan) for subject \(subject): it had no trial recorded", metadata: metadata
          )
        }
      }
      completion(result)
    }
  }
}
