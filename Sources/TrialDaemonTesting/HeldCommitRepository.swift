import Dispatch
import Foundation
import Synchronization
import TrialCore
import TrialTesting

/// A repository whose next write, once `holdNextWrite()` is called, stops inside its
/// transaction until `releaseWrite()`: a commit in progress (an `fdatasync` that takes its
/// time), for tests that show what does not wait for it. Otherwise an `InMemoryTrialRepository`.
public final class HeldCommitRepository: TrialRepository, Sendable {
  private let inner = InMemoryTrialRepository()
  private let armed = Atomic<Bool>(false)
  private let entered = DispatchSemaphore(value: 0)
  private let released = DispatchSemaphore(value: 0)

  public init() {}

  /// The next write will stop until `releaseWrite()`.
  public func holdNextWrite() {
    armed.store(true, ordering: .sequentiallyConsistent)
  }

  /// Waits until the held write has begun; false when it did not within `timeout` seconds.
  public func waitUntilWriteHeld(timeout: Double = 10) -> Bool {
    entered.wait(timeout: .now() + timeout) == .success
  }

  public func releaseWrite() {
    released.signal()
  }

  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try inner.read(body)
  }

  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try inner.write { txn in
      let result = try body(txn)
      if armed.exchange(false, ordering: .sequentiallyConsistent) {
        entered.signal()
        // A test that fails before releasing must not hang the suite.
        _ = released.wait(timeout: .now() + 30)
      }
      return result
    }
  }

  public func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try inner.restore(into: &planner, progressEvery: progressEvery, progress: progress)
  }
}
