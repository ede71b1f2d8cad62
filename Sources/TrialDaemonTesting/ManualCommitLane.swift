import Foundation
import TrialCore
import TrialDaemon
import TrialEngine

/// A commit lane for tests in virtual time: writes wait, as they would behind a slow commit,
/// until the test carries them out (`commitWaiting`) or fails them (`failWaiting`). Waiting
/// writes are carried out together, in one transaction, as the daemon's lane does; `perform`
/// and `drain` carry out what waits first. An I/O error of the store stops it as it stops the
/// daemon's (see `CommitLane`).
public final class ManualCommitLane: CommitLane {
  public var hooks: CommitHooks?
  private let repository: any TrialRepository
  private let monotonicNow: () -> TimeInterval
  private var waiting = CommitBatch()
  private var submitted: [TimeInterval] = []
  /// How many transactions were carried out.
  public private(set) var transactions = 0

  /// `monotonicNow`: the test scheduler's monotonic time, for `busySince`.
  public init(repository: any TrialRepository, monotonicNow: @escaping () -> TimeInterval) {
    self.repository = repository
    self.monotonicNow = monotonicNow
  }

  /// Writes submitted and not carried out yet.
  public var waitingCount: Int { waiting.count }

  public var busySince: TimeInterval? { submitted.first }
  /// Not timed: the tests assert what is committed, not how long it took.
  public let durations = CommitDurations()

  private var closed = false
  /// The I/O error that stopped the lane, if one did.
  public private(set) var storeFailure: (any Error)?

  public func submit(_ write: any CommitWrite) {
    if let storeFailure { return CommitBatch.refusing(write, with: storeFailure).complete(hooks: nil) }
    guard !closed else { return CommitBatch.refusing(write).complete(hooks: nil) }
    waiting.append(write)
    submitted.append(monotonicNow())
  }

  public func close() { closed = true }

  /// Carries out every waiting write in one transaction, then runs their completions.
  public func commitWaiting() {
    guard !waiting.isEmpty else { return }
    var batch = take()
    if let storeFailure {
      batch.fail(storeFailure)
    } else {
      batch.commit(to: repository, hooks: hooks)
      transactions += 1
      storeFailure = batch.storeFailure
    }
    batch.complete(hooks: hooks)
  }

  /// Fails every waiting write with `error`, as a failed commit would; nothing is written.
  public func failWaiting(_ error: any Error) {
    var batch = take()
    batch.fail(error)
    batch.complete(hooks: hooks)
  }

  private func take() -> CommitBatch {
    defer {
      waiting = CommitBatch()
      submitted = []
    }
    return waiting
  }

  public func perform<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    commitWaiting()
    if let storeFailure { throw storeFailure }
    transactions += 1
    guard let hooks else { return try repository.write(body) }
    do {
      let (result, recorded) = try hooks.write(body, on: repository)
      hooks.committed(recorded)
      return result
    } catch let error where CommitBatch.stopsTheLane(error) {
      storeFailure = error
      hooks.storeFailed(error)
      throw error
    }
  }

  public func drain() {
    commitWaiting()
  }
}
