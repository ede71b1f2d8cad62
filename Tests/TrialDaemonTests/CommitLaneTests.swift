import Dispatch
import Foundation
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// The engine with its writes on a lane the test carries out (`ManualCommitLane`): a commit
/// in progress, for as long as the test likes, in virtual time.
private struct LaneHarness {
  let scheduler = TestScheduler(now: epoch)
  let repository = InMemoryTrialRepository()
  let lane: ManualCommitLane
  let sink: SpySink
  let observer: SpyObserver
  let engine: Engine

  init(settings: EngineSettings = EngineSettings(), ids: [UInt64]) throws {
    let scheduler = self.scheduler
    lane = ManualCommitLane(repository: repository, monotonicNow: { scheduler.monotonicNow })
    sink = SpySink(clock: scheduler.clock)
    observer = SpyObserver(clock: scheduler.clock)
    engine = makeEngine(
      repository: repository, scheduler: scheduler, settings: settings, ids: ids, sinks: [sink],
      commits: lane,
      observer: observer)
    _ = try engine.start()
  }

  /// Starts a trial ending `seconds` from now, without reminders, and waits for its commit.
  @discardableResult
  func start(_ subject: String, endingIn seconds: TimeInterval) throws -> Trial {
    try engine.perform(
      .start(subject: subject, end: .at(scheduler.now.addingTimeInterval(seconds)), reminders: [])
    ).trial
  }

  func ledger() throws -> [LedgerEntry] {
    try repository.read { txn in
      var entries: [LedgerEntry] = []
      try txn.scanTrials(after: nil) { trial in
        entries += try txn.ledgerEntries(trial: trial.id)
        return true
      }
      return entries.sorted { $0.event.due < $1.event.due }
    }
  }
}

@Suite struct CommitLaneTests {
  @Test func aTransactionOfBookkeepingAlone_SkipsSettled_AnyOtherWriteRunsItOnce() throws {
    let repository = InMemoryTrialRepository()
    var settled = 0
    var answered: [String] = []
    let hooks = CommitHooks(
      prelude: { _ in [] }, committed: { _ in }, settled: { settled += 1 }, refused: { _, _ in })
    for writes in [[true], [true, false], [false, false]] {
      var batch = CommitBatch()
      for isBookkeeping in writes {
        batch.append(
          ClosureWrite({ _ in }, isBookkeeping: isBookkeeping) { _ in answered.append("\(isBookkeeping)") })
      }
      batch.commit(to: repository, hooks: hooks)
      batch.complete(hooks: hooks)
    }
    #expect(settled == 2, "the deliveries recorded alone change nothing the engine shows")
    #expect(answered == ["true", "true", "false", "false", "false"], "every write completes")
  }

  @Test func slowCommit_DoesNotHoldUpTheNextWake_EachEventIsTakenAtItsDueTime() throws {
    let h = try LaneHarness(ids: [1, 2, 3])
    for (index, subject) in ["a", "b", "c"].enumerated() {
      try h.start(subject, endingIn: 1 + Double(index) / 100)
    }
    // The first commit does not end while the others fall due.
    h.scheduler.advance(by: 1.05)
    #expect(h.lane.waitingCount == 3, "each wake handed its events to the lane at once")
    #expect(h.sink.delivered.isEmpty, "nothing is delivered before its commit")
    h.lane.commitWaiting()
    #expect(h.sink.delivered.map(\.attributes.subject) == ["a", "b", "c"])
    let ledger = try h.ledger()
    #expect(ledger.count == 3)
    #expect(ledger.allSatisfy { $0.takenAt == $0.event.due && $0.lateness == .zero })
    #expect(h.engine.counts[.expired] == 3 && h.engine.counts[.active] == 0)
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  @Test func writesWaitingBehindACommit_AreCarriedOutInOneTransaction() throws {
    let h = try LaneHarness(ids: [1, 2, 3])
    let before = h.lane.transactions
    try h.start("a", endingIn: 1)
    h.scheduler.advance(by: 1)
    var answers: [String] = []
    for subject in ["b", "c"] {
      h.engine.submit(try .start(subject: subject, reminders: [])) {
        answers.append((try? $0.get().trial.subject) ?? "failed")
      }
      h.scheduler.advance(by: 0)
    }
    #expect(h.lane.waitingCount == 3)
    h.lane.commitWaiting()
    #expect(h.lane.transactions == before + 2, "the start of a, then one transaction for the rest")
    #expect(answers == ["b", "c"])
    #expect(h.sink.delivered.map(\.attributes.subject) == ["a"])
    h.engine.stop()
  }

  @Test func failedCommit_PutsTheEventsBack_AndTheRetryTakesThemOnce() throws {
    let h = try LaneHarness(settings: EngineSettings(retryDelay: .seconds(5)), ids: [1])
    try h.start("a", endingIn: 1)
    h.scheduler.advance(by: 1)
    struct DiskFull: Error {}
    h.lane.failWaiting(DiskFull())
    #expect(h.engine.planner.pendingEventCount == 1, "the expiry is planned again")
    h.scheduler.advance(by: 4.9)
    #expect(h.lane.waitingCount == 0, "no wake before the retry")
    h.scheduler.advance(by: 0.1)
    #expect(h.lane.waitingCount == 1)
    h.lane.commitWaiting()
    #expect(h.sink.delivered.count == 1)
    #expect(try h.ledger().map(\.lateness) == [.seconds(5)])
    h.engine.stop()
  }

  @Test func endWhileTheExpiryIsBeingCommitted_FindsTheTrialExpired() throws {
    let h = try LaneHarness(ids: [1])
    let trial = try h.start("a", endingIn: 1)
    h.scheduler.advance(by: 1)
    var answer: Result<CommandResult, any Error>?
    h.engine.submit(.end(trial.id, .converted)) { answer = $0 }
    h.scheduler.advance(by: 0)
    h.lane.commitWaiting()
    #expect(h.sink.delivered.map(\.entry.event.kind) == [.expiry])
    let error = try #require(throws: TrialError.self) { try answer?.get() }
    #expect(error.code == .notActive(trial.id, .expired))
    #expect(h.engine.counts[.expired] == 1 && h.engine.counts[.converted, default: 0] == 0)
    h.engine.stop()
  }

  @Test func stop_CarriesOutTheWritesInProgress_AndDeliversTheirEvents() throws {
    let h = try LaneHarness(ids: [1])
    try h.start("a", endingIn: 1)
    h.scheduler.advance(by: 1)
    #expect(h.sink.delivered.isEmpty)
    h.engine.stop()
    #expect(h.sink.delivered.count == 1)
    #expect(try h.repository.outbox().isEmpty, "the delivery was recorded by the last write")
  }

  @Test func afterStop_ACommandIsRefused_AndNothingIsWritten() throws {
    let h = try LaneHarness(ids: [1, 2])
    try h.start("a", endingIn: 60)
    h.engine.stop()
    #expect(throws: TrialError.self) { try h.start("late", endingIn: 60) }
    #expect(try h.repository.read { try $0.activeTrialID(subject: "late") } == nil)
    #expect(h.lane.waitingCount == 0)
  }

  @Test func watchdog_IsWithheldWhileACommitIsStuck_AndResumesAfter() throws {
    let h = try LaneHarness(settings: EngineSettings(watchdogInterval: .seconds(1)), ids: [1])
    try h.start("a", endingIn: 0.5)
    // Pings at 1 s (the commit is 0.5 s old), none at 2 s and 3 s (stuck for longer than the
    // interval), and at 4 s once it is done.
    h.scheduler.advance(by: 3.5)
    h.lane.commitWaiting()
    h.scheduler.advance(by: 0.5)
    #expect(h.observer.pings == [1, 4].map { epoch.addingTimeInterval($0) })
    h.engine.stop()
  }
}

/// The daemon's lane, on real queues: a commit in progress does not hold the engine's queue.
@Suite struct DispatchCommitLaneTests {
  /// An engine on a queue of its own with the daemon's lane over `repository`, started.
  static func started(on repository: any TrialRepository) throws -> (
    DispatchQueue, DispatchCommitLane, Engine
  ) {
    let queue = DispatchQueue(label: "test.engine")
    let scheduler = DispatchWakeScheduler(queue: queue)
    let lane = DispatchCommitLane(
      repository: repository, engineQueue: queue, monotonicNow: { scheduler.monotonicNow })
    let engine = makeEngine(repository: repository, scheduler: scheduler, commits: lane)
    _ = try queue.sync { try engine.start() }
    return (queue, lane, engine)
  }

  @Test func engineQueue_AnswersWhileACommitIsHeld_AndTheCommitsLandInOrder() throws {
    let repository = HeldCommitRepository()
    let (queue, lane, engine) = try Self.started(on: repository)
    let answered = DispatchSemaphore(value: 0)
    let answers = Answers()
    repository.holdNextWrite()
    for subject in ["first", "second"] {
      let command = try TrialCommand.start(subject: subject, reminders: [])
      queue.sync {
        engine.submit(command) {
          result in
          answers.append((try? result.get().trial.subject) ?? "failed")
          answered.signal()
        }
      }
      if subject == "first" { #expect(repository.waitUntilWriteHeld()) }
    }
    // The engine's queue is free while the first commit is held.
    let free = DispatchSemaphore(value: 0)
    queue.async { free.signal() }
    #expect(free.wait(timeout: .now() + 10) == .success, "the engine's queue answers during the commit")
    #expect(lane.busySince != nil)
    #expect(answers.values.isEmpty)
    repository.releaseWrite()
    for _ in 0..<2 { #expect(answered.wait(timeout: .now() + 10) == .success) }
    #expect(answers.values == ["first", "second"])
    queue.sync { engine.stop() }
    #expect(lane.busySince == nil)
    #expect(try repository.read { try $0.activeTrialID(subject: "second") } != nil)
  }
}

extension DispatchCommitLaneTests {
  /// Commands go to the lane from any thread (the connections'), each answered on the engine's
  /// queue once durable, the engine's planner and counts following; one that comes once the
  /// engine stopped is refused, with nothing written.
  @Test func commandsFromManyThreads_AreAnsweredOnTheEngineQueueOnceDurable_AndRefusedAfterStop() throws {
    let repository = InMemoryTrialRepository()
    let (queue, _, engine) = try Self.started(on: repository)
    let intake = engine.intake
    let answers = Answers()
    let answered = DispatchGroup()
    DispatchQueue.concurrentPerform(iterations: 8) { thread in
      for index in 0..<25 {
        let command = try! TrialCommand.start(subject: "s\(thread)-\(index)", reminders: [])
        answered.enter()
        intake.submit(command) { result in
          dispatchPrecondition(condition: .onQueue(queue))
          answers.append((try? result.get().trial.subject) ?? "failed")
          answered.leave()
        }
      }
    }
    #expect(answered.wait(timeout: .now() + 30) == .success)
    #expect(Set(answers.values).count == 200)
    #expect(!answers.values.contains("failed"))
    queue.sync {
      #expect(engine.counts[.active] == 200)
      #expect(engine.planner.trialCount == 200)
      engine.stop()
    }
    let refused = DispatchSemaphore(value: 0)
    let failure = Answers()
    intake.submit(try TrialCommand.start(subject: "late", reminders: [])) { result in
      if case .failure(let error) = result { failure.append("\(error)") }
      refused.signal()
    }
    #expect(refused.wait(timeout: .now() + 10) == .success)
    #expect(failure.values.first?.contains("stopping") == true)
    #expect(try repository.read { try $0.activeTrialID(subject: "late") } == nil)
  }
}

private final class Answers: @unchecked Sendable {
  private let lock = DispatchSemaphore(value: 1)
  private var list: [String] = []

  func append(_ value: String) {
    lock.wait()
    list.append(value)
    lock.signal()
  }

  var values: [String] {
    lock.wait()
    defer { lock.signal() }
    return list
  }
}
