import FoundationEssentials
import TrialCore

// The engine's writes through its commit lane (`CommitWrite`): each keeps its own result, so
// that nothing else is allocated for it on the way.

/// A change's write (`Engine.change`): a `TrialError` its body throws fails it alone.
final class ChangeWrite<R>: CommitWrite {
  private let body: (any TrialWriteTransaction) throws -> R
  private let taken: (R) -> Void
  private let completion: (Result<R, any Error>) -> Void
  private var result: Result<R, any Error> = .failure(CommitLaneError.notRun)

  init(
    _ body: @escaping (any TrialWriteTransaction) throws -> R, taken: @escaping (R) -> Void,
    completion: @escaping (Result<R, any Error>) -> Void
  ) {
    self.body = body
    self.taken = taken
    self.completion = completion
  }

  func run(in txn: any TrialWriteTransaction) throws {
    do {
      result = .success(try body(txn))
    } catch let error as TrialError {
      result = .failure(error)
    }
  }

  func done(failure: (any Error)?) {
    if let failure { result = .failure(failure) }
    if case .success(let value) = result { taken(value) }
  }

  func settled() {
    completion(result)
  }
}

/// A command's write (`CommandIntake.submit`): `Engine.change` for the one change every client
/// makes, in one object with no generic parameter (a start's path allocates it and nothing
/// else of its own). Made on the submitting thread, run on the lane's, completed on the
/// engine's context.
final class CommandWrite: CommitWrite {
  private let command: TrialCommand
  private let now: Date
  private let defaults: TrialDefaults
  private let ids: any TrialIDGenerator
  private let folding: SubjectFolding
  /// Held until the write completes (the lane completes every write, at stop too).
  private let engine: Engine
  private let completion: (Result<CommandResult, any Error>) -> Void
  /// What the command did, once carried out.
  private var trial: Trial?
  private var skipped: [DueEvent] = []
  private var logged: [LoggedEvent] = []
  private var failure: any Error = CommitLaneError.notRun

  init(
    _ command: TrialCommand, intake: CommandIntake,
    completion: @escaping (Result<CommandResult, any Error>) -> Void
  ) {
    self.command = command
    self.now = intake.clock.now()
    self.defaults = intake.defaults
    self.ids = intake.ids
    self.folding = intake.folding
    self.engine = intake.engine
    self.completion = completion
  }

  func run(in txn: any TrialWriteTransaction) throws {
    // A store may run a transaction's writes again (a retried conflict): only the last run counts.
    trial = nil
    do {
      let done = try TrialBook.apply(
        command, in: txn, now: now, defaults: defaults, ids: ids, folding: folding)
      (trial, skipped, logged) = (done.trial, done.skipped, done.logged)
    } catch let error as TrialError {
      failure = error
    }
  }

  func done(failure: (any Error)?) {
    if let failure {
      self.failure = failure
      trial = nil
    }
    guard let trial else { return }
    engine.applied(command, trial: trial, logged: logged, now: now)
  }

  func settled() {
    guard let trial = trial.take() else { return completion(.failure(failure)) }
    completion(.success(CommandResult(trial: trial, skipped: skipped)))
  }
}
