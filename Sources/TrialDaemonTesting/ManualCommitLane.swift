import Foundation
import TrialCore
import TrialDaemon

/// A commit lane for tests in virtual time: writes wait, as they would behind a slow commit,
/// until the test carries them out (`commitWaiting`) or fails them (`failWaiting`). Waiting
/// writes are carried out together, in one transaction, as the daemon's lane does; `perform`
/// and `drain` carry out what waits first.
public final class ManualCommitLane: CommitLane {
  private struct Job {
    var body: (any TrialWriteTransaction) throws -> Any
    var completion: (Result<Any, any Error>) -> Void
    var submittedAt: TimeInterval
  }

  public var hooks: CommitHooks?
  private let repository: any TrialRepository
  private let monotonicNow: () -> TimeInterval
  private var waiting: [Job] = []
  /// How many transactions were carried out.
  public private(set) var transactions = 0

  /// `monotonicNow`: the test scheduler's monotonic time, for `busySince`.
  public init(repository: any TrialRepository, monotonicNow: @escaping () -> TimeInterval) {
    self.repository = repository
    self.monotonicNow = monotonicNow
  }

  /// Writes submitted and not carried out yet.
  public var waitingCount: Int { waiting.count }

  public var busySince: TimeInterval? { waiting.first?.submittedAt }

  public func submit(
    _ body: @escaping (any TrialWriteTransaction) throws -> Any,
    completion: @escaping (Result<Any, any Error>) -> Void
  ) {
    waiting.append(Job(body: body, completion: completion, submittedAt: monotonicNow()))
  }

  /// Carries out every waiting write in one transaction, then runs their completions.
  public func commitWaiting() {
    let jobs = waiting
    waiting = []
    guard !jobs.isEmpty else { return }
    var recorded: [EventID] = []
    let result = Result {
      try repository.write { txn in
        recorded = try hooks?.prelude(txn) ?? []
        return try jobs.map { try $0.body(txn) }
      }
    }
    transactions += 1
    switch result {
    case .success(let values):
      hooks?.committed(recorded)
      for (job, value) in zip(jobs, values) { job.completion(.success(value)) }
    case .failure(let error):
      for job in jobs { job.completion(.failure(error)) }
    }
  }

  /// Fails every waiting write with `error`, as a failed commit would; nothing is written.
  public func failWaiting(_ error: any Error) {
    let jobs = waiting
    waiting = []
    for job in jobs { job.completion(.failure(error)) }
  }

  public func perform<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    commitWaiting()
    var recorded: [EventID] = []
    let result = try repository.write { txn in
      recorded = try hooks?.prelude(txn) ?? []
      return try body(txn)
    }
    transactions += 1
    hooks?.committed(recorded)
    return result
  }

  public func drain() {
    commitWaiting()
  }
}
