import FoundationEssentials
import Logging
import TrialCore
import TrialEngine

/// The engine's changes, waited for: for tests, whose context is the engine's (virtual time),
/// or which run on its queue. The daemon never waits for a commit on the engine's queue.
extension Engine {
  /// Carries out one command at once and waits for its commit.
  public func perform(_ command: TrialCommand) throws -> CommandResult {
    try waited { submit(command, completion: $0) }
  }

  public func createConsumer(named name: String, after: EventCursor?) throws -> (ConsumerRecord, EventCursor)
  {
    try waited { createConsumer(named: name, after: after, completion: $0) }
  }

  public func acknowledge(consumer name: String, through cursor: EventCursor) throws -> (
    ConsumerRecord, EventCursor
  ) {
    try waited { acknowledge(consumer: name, through: cursor, completion: $0) }
  }

  public func removeConsumer(named name: String) throws {
    try waited { removeConsumer(named: name, completion: $0) }
  }

  public func grantAgain(subject: String, plan: String, caller: Logger.Metadata = [:]) throws -> SubjectUse? {
    try waited { grantAgain(subject: subject, plan: plan, caller: caller, completion: $0) }
  }

  /// What would fire from now until `date`, changing nothing, as the engine's planner has it
  /// (the daemon answers `Simulate` from the store: `StoreQueries.simulate`).
  public func simulate(through date: Date) throws -> [DueEvent] {
    guard !planner.holdsFarTrials(dueThrough: date) else {
      return try queries.simulate(now: clock.now(), through: date, policy: planner.policy)
    }
    return planner.simulate(now: clock.now(), through: date)
  }

  /// Starts a change and waits until the lane has carried it out.
  private func waited<R>(_ start: (@escaping (Result<R, any Error>) -> Void) -> Void) throws -> R {
    var outcome: Result<R, any Error>?
    start { outcome = $0 }
    commits.drain()
    return try outcome!.get()
  }
}
