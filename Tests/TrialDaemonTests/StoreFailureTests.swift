import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A store whose writes fail with an I/O error (a failed `fdatasync`) once `failFrom` is set,
/// and which counts the writes begun: a stopped lane begins none.
private final class FailingRepository: TrialRepository, @unchecked Sendable {
  // @unchecked: the in-memory store is safe from any thread; the counters are atomic.
  private let inner = InMemoryTrialRepository()
  let attempts = Atomic(0)
  /// From this attempt on (counted from 1), every write fails.
  let failFrom = Atomic(Int.max)

  static let failure = StoreError(
    .ioError, path: "/var/lib/trialwatch/data.mdb",
    problem: "an I/O error while committing a transaction: the disk failed to write or sync")

  func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R { try inner.read(body) }

  func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    let attempt = attempts.add(1, ordering: .relaxed).newValue
    return try inner.write { txn in
      let result = try body(txn)
      // The transaction ran; its commit's sync fails: nothing of it is kept.
      if attempt >= failFrom.load(ordering: .relaxed) { throw Self.failure }
      return result
    }
  }

  func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try inner.restore(into: &planner, progressEvery: progressEvery, progress: progress)
  }

  var writesBegun: Int { attempts.load(ordering: .relaxed) }
  /// The next write fails, and every one after it.
  func failNext() { failFrom.store(writesBegun + 1, ordering: .relaxed) }
}

private final class FailureObserver: EngineObserver {
  var failures: [String] = []
  func engineStatusChanged(_ status: String) {}
  func engineWatchdogPing() {}
  func engineDetectedClockStep(from expected: Date, to actual: Date) {}
  func engineStoreFailed(_ error: any Error) { failures.append("\(error)") }
}

/// What the daemon's lane reported, from its queues.
private final class LaneReports: Sendable {
  let stops = Mutex<[String]>([])
  let outcomes = Mutex<[Int: Result<Int, any Error>]>([:])
}

private func isTheFailure(_ error: (any Error)?) -> Bool {
  (error as? StoreError) == FailingRepository.failure
}

/// A failed write or sync of the store stops the writes at once: nothing is written after it,
/// and every write from it on fails with its error (`CommitLane`).
@Suite struct StoreFailureTests {
  @Test func ioErrorOfACommit_StopsTheEngine_AndNothingIsWrittenAfterIt() throws {
    let scheduler = TestScheduler(now: epoch)
    let repository = FailingRepository()
    let lane = ManualCommitLane(repository: repository, monotonicNow: { scheduler.monotonicNow })
    let observer = FailureObserver()
    let engine = makeEngine(
      repository: repository, scheduler: scheduler, ids: [1, 2, 3, 4], commits: lane, observer: observer)
    _ = try engine.start()
    let ending = try engine.perform(.start(subject: "ending", end: .at(epoch + 10), reminders: [])).trial
    var answers: [String: Result<CommandResult, any Error>] = [:]
    for subject in ["b", "c"] {
      engine.submit(try .start(subject: subject, reminders: [])) { answers[subject] = $0 }
    }
    repository.failNext()
    lane.commitWaiting()
    let begun = repository.writesBegun

    #expect(answers.count == 2 && answers.values.allSatisfy { isTheFailure($0.error) })
    #expect(observer.failures == ["\(FailingRepository.failure)"], "told once")
    #expect(engine.stopped && isTheFailure(engine.storeFailure))
    // Later writes fail with the same error, and no transaction begins: a command, the
    // expiry falling due, the engine's stop (which records the time last seen).
    var later: Result<CommandResult, any Error>?
    engine.submit(try .start(subject: "d", reminders: [])) { later = $0 }
    lane.commitWaiting()
    #expect(isTheFailure(later?.error))
    scheduler.advance(by: 20)
    lane.commitWaiting()
    engine.stop()
    #expect(repository.writesBegun == begun)
    #expect(observer.failures.count == 1)
    #expect(try repository.read { try $0.trial(ending.id)?.state } == .active, "its expiry was not written")
    #expect(try repository.read { try $0.activeTrialID(subject: "b") } == nil)
  }

  @Test func ioErrorOnTheDaemonsLane_FailsTheWritesWaiting_AndEveryLaterOneUntried() throws {
    let repository = FailingRepository()
    let queue = DispatchQueue(label: "test.engine")
    let lane = DispatchCommitLane(repository: repository, engineQueue: queue, monotonicNow: { 0 })
    let reports = LaneReports()
    lane.hooks = CommitHooks(
      prelude: { _ in [] }, committed: { _ in }, settled: {},
      storeFailed: { error in reports.stops.withLock { $0.append("\(error)") } })
    let done = DispatchSemaphore(value: 0)
    func submit(_ number: Int) {
      lane.submit(
        ClosureWrite({ _ in number }) { result in
          reports.outcomes.withLock { $0[number] = result }
          done.signal()
        })
    }
    repository.failNext()
    for number in 1...3 { submit(number) }
    for _ in 1...3 { #expect(done.wait(timeout: .now() + patience) == .success) }
    #expect(repository.writesBegun == 1, "the writes behind the failed one were not tried")
    submit(4)
    #expect(done.wait(timeout: .now() + patience) == .success)
    let results = reports.outcomes.withLock { $0 }
    #expect(results.count == 4 && results.values.allSatisfy { isTheFailure($0.error) })
    let performed = queue.sync { Result { try lane.perform { _ in 5 } } }
    #expect(isTheFailure(performed.error))
    #expect(repository.writesBegun == 1)
    queue.sync {}
    #expect(
      reports.stops.withLock { $0 } == ["\(FailingRepository.failure)"], "told once, on the engine's queue")
  }

  @Test func anotherFailure_LeavesTheLaneWriting() throws {
    let repository = FailingRepository()
    var batch = CommitBatch()
    var answer: Result<Void, any Error>?
    batch.append(
      ClosureWrite<Void>({ _ in throw StoreError(.noSpace, path: "data.mdb", problem: "full") }) {
        answer = $0
      })
    batch.commit(to: repository, hooks: nil)
    #expect(batch.storeFailure == nil, "a full disk is not an I/O error: writes resume when space returns")
    batch.complete(hooks: nil)
    #expect(answer?.error != nil)
    #expect(CommitBatch.stopsTheLane(FailingRepository.failure))
    #expect(!CommitBatch.stopsTheLane(Engine.stopping))
  }
}

extension Result {
  fileprivate var error: Failure? {
    if case .failure(let error) = self { error } else { nil }
  }
}
