import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialEngine
import TrialStore
import TrialTesting

/// Reads are answered on the connection's thread, from the store's read transactions and the
/// engine's snapshot: never behind a commit in progress.
@Suite struct ReadsBesideCommitsTests {
  @Test func reads_WhileACommitIsInProgress_AreAnswered() throws {
    let repository = HeldCommitRepository()
    let fixture = try ControlFixture(ids: [1, 2], repository: repository)
    let client = try fixture.client()
    let first = try client.startTrial(StartTrialParameters(subject: "acme"))
    repository.holdNextWrite()
    let writer = try fixture.client()
    try writer.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"beta"}"#))
    try #require(repository.waitUntilWriteHeld(), "the commit of beta began")

    // Every read is answered while beta's commit is held, as of the state before it.
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).id == first.id)
    #expect(throws: VarlinkClientError.self) { try client.getTrial(GetTrialParameters(subject: "beta")) }
    #expect(try client.listTrials().trials.map(\.subject) == ["acme"])
    #expect(try client.getPlan(GetPlanParameters(id: first.id)).count == first.reminders.count + 1)
    #expect(
      try client.simulate(SimulateParameters(at: .fromNow(.days(30)))).count == first.reminders.count + 1)
    let status = try client.getStatus()
    #expect(status.trials.active == 1 && status.pendingEvents == first.reminders.count + 1)
    #expect(status.nextEvent?.subject == "acme")
    #expect(try client.call("io.trialwatch.Trials.GetEventLog").error == nil)
    #expect(try client.call("io.trialwatch.Trials.ListConsumers").error == nil)

    repository.releaseWrite()
    #expect(try writer.receive().parameters(as: TrialReply.self).trial.subject == "beta")
    #expect(try client.getStatus().trials.active == 2, "the snapshot follows the commit")
    #expect(try client.listTrials().trials.map(\.subject) == ["acme", "beta"])
  }

  /// A scan (ListTrials, Simulate) runs off the thread that reads every connection: while one
  /// is held, other connections are answered.
  @Test func reads_WhileAnotherConnectionScans_AreAnswered() throws {
    let repository = HeldCommitRepository()
    let fixture = try ControlFixture(ids: [1], repository: repository)
    let client = try fixture.client()
    let first = try client.startTrial(StartTrialParameters(subject: "acme"))
    repository.holdNextScan()
    let scanner = try fixture.client()
    try scanner.sendBytes(message("io.trialwatch.Trials.ListTrials", "{}"))
    try #require(repository.waitUntilScanHeld(), "the scan began")
    defer { repository.releaseScan() }
    for _ in 0..<3 {
      #expect(try client.getTrial(GetTrialParameters(id: first.id)).subject == "acme")
    }
    #expect(try client.getStatus().trials.active == 1)
    repository.releaseScan()
    let listed = try scanner.receive().parameters(as: ListTrialsReply.self)
    #expect(listed.trials.map(\.subject) == ["acme"])
  }

  @Test func reads_WhileTheEngineIsBusy_AreAnswered() throws {
    let fixture = try ControlFixture(store: .lmdb, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(StartTrialParameters(subject: "acme"))
    fixture.holdEngine()
    defer { fixture.releaseEngine() }
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).subject == "acme")
    #expect(try client.getStatus().trials.active == 1)
  }

  /// Simulate plans from the store; the running engine's planner gives the same events, with
  /// trials started, extended (before and after a reminder was taken) and ended, and overdue
  /// events under each catch-up policy.
  @Test(arguments: StoreKind.allCases, [CatchUpPolicy.LateReminders.all, .skip, .latest])
  func simulate_FromTheStore_EqualsThePlanners(store: StoreKind, reminders: CatchUpPolicy.LateReminders)
    throws
  {
    let scratch = try TemporaryDirectory("simulate")
    let repository: any TrialRepository =
      store == .lmdb
      ? try LMDBTrialRepository(directory: scratch.appending("store")) : InMemoryTrialRepository()
    let scheduler = TestScheduler(now: ControlFixture.start)
    let policy = CatchUpPolicy(reminders: reminders, grace: .seconds(3_600))
    let engine = makeEngine(
      repository: repository, scheduler: scheduler, settings: EngineSettings(policy: policy),
      ids: Array(1...8))
    _ = try engine.start()
    let day: TimeInterval = 86_400
    func start(_ subject: String, days: Double, reminders: [Double]) throws -> Trial {
      let trial = try engine.perform(
        .start(
          subject: subject, end: .after(.seconds(days * day)), reminders: reminders.map { .seconds($0 * day) }
        ))
      scheduler.advance(by: 3_600)
      return trial.trial
    }
    let a = try start("a", days: 10, reminders: [3, 1])
    let b = try start("b", days: 5, reminders: [3, 1])
    let c = try start("c", days: 2, reminders: [1])
    _ = try start("d", days: 20, reminders: [7, 3, 1])
    let e = try start("e", days: 8, reminders: [])
    _ = try engine.perform(.extend(b.id, .by(.days(3))))
    _ = try engine.perform(.end(e.id, .cancelled))
    scheduler.advance(by: 1.5 * day)
    // c's reminder was taken; then c moves on a day.
    _ = try engine.perform(.extend(c.id, .by(.days(1))))
    _ = a

    let queries = StoreQueries(repository)
    func check(through span: TimeInterval) throws {
      let now = scheduler.clock.now()
      let expected = try engine.simulate(through: now.addingTimeInterval(span))
      let simulated = try queries.simulate(now: now, through: now.addingTimeInterval(span), policy: policy)
      #expect(!expected.isEmpty)
      #expect(simulated == expected)
    }
    try check(through: 30 * day)
    // The wall clock steps 8 days on without the engine waking: events are overdue.
    scheduler.setWallTime(scheduler.clock.now().addingTimeInterval(8 * day))
    try check(through: 0)
    try check(through: 30 * day)
    let overdue = try engine.simulate(through: scheduler.clock.now())
    #expect(overdue.contains { $0.disposition != .fire } == (reminders != .all), "the policy was applied")
    engine.stop()
    (repository as? any StoreServices)?.close()
  }
}

/// Nothing the engine does waits for a commit: with an acknowledgement's commit held, the
/// engine takes a due event at its time, and delivers it once the lane goes on.
@Suite struct WritesBesideFiringTests {
  @Test func dueEvent_WhileAnAcknowledgementsCommitIsHeld_IsTakenAtItsTime() throws {
    let fixture = try ControlFixture(store: .lmdb, ids: [1], holdingWrites: true)
    let writes = try #require(fixture.writes)
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "acme", duration: .days(1), reminders: ReminderSchedule.none))
    _ = try client.call(Trials.createConsumer, CreateConsumerParameters(name: "mail"))
    writes.holdNextWrite()
    let acker = try fixture.client()
    try acker.sendBytes(
      message("io.trialwatch.Trials.AcknowledgeEvent", #"{"consumer":"mail","cursor":"0000000000000000"}"#))
    try #require(writes.waitUntilWriteHeld(), "the acknowledgement's commit began")
    fixture.engine.advance(by: 86_400, waitingForCommits: false)
    let pending = fixture.engine.queue.sync { fixture.engine.engine.planner.pendingEventCount }
    #expect(pending == 0, "the expiry was taken")
    #expect(writes.isWriteHeld, "while the acknowledgement's commit was still held")
    writes.releaseWrite()
    #expect(try acker.receive().error == nil)
    #expect(fixture.fireDue().map(\.kind) == [.expiry])
    #expect(try client.getStatus().trials.expired == 1)
  }
}
