import Foundation
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

final class SpySink: EventSink {
  var delivered: [(entry: LedgerEntry, attributes: TrialAttributes, trial: Trial?, at: Date)] = []
  var failuresLeft = 0
  let clock: any WallClock

  init(clock: any WallClock) {
    self.clock = clock
  }

  struct Refused: Error {}

  func deliver(_ event: LoggedEvent, trial: Trial?) throws {
    if failuresLeft > 0 {
      failuresLeft -= 1
      throw Refused()
    }
    delivered.append((event.entry, event.attributes, trial, clock.now()))
  }

  var ids: [EventID] { delivered.map(\.entry.id) }
}

final class SpyObserver: EngineObserver {
  var statuses: [String] = []
  var pings: [Date] = []
  var steps: [(Date, Date)] = []
  let clock: any WallClock

  init(clock: any WallClock) {
    self.clock = clock
  }

  func engineStatusChanged(_ status: String) { statuses.append(status) }
  func engineWatchdogPing() { pings.append(clock.now()) }
  func engineDetectedClockStep(from expected: Date, to actual: Date) { steps.append((expected, actual)) }
}

let day: TimeInterval = 86_400
let epoch = Date(timeIntervalSince1970: 1_795_000_000)

struct Harness {
  let scheduler: TestScheduler
  let repository: InMemoryTrialRepository
  let sink: SpySink
  let observer: SpyObserver
  let engine: Engine

  init(
    repository: InMemoryTrialRepository = InMemoryTrialRepository(), scheduler: TestScheduler? = nil,
    settings: EngineSettings = EngineSettings(), ids: [UInt64] = []
  ) {
    let scheduler = scheduler ?? TestScheduler(now: epoch)
    self.scheduler = scheduler
    self.repository = repository
    sink = SpySink(clock: scheduler.clock)
    observer = SpyObserver(clock: scheduler.clock)
    engine = makeEngine(
      repository: repository, scheduler: scheduler, settings: settings, ids: ids, sinks: [sink],
      observer: observer)
  }

  /// A harness whose engine has started.
  static func started(
    repository: InMemoryTrialRepository = InMemoryTrialRepository(),
    settings: EngineSettings = EngineSettings(),
    ids: [UInt64] = []
  ) throws -> Harness {
    let harness = Harness(repository: repository, settings: settings, ids: ids)
    _ = try harness.engine.start()
    return harness
  }

  @discardableResult
  func start(_ subject: String, days: Double, reminders: [Double] = [3, 1]) throws -> Trial {
    try engine.perform(
      .start(
        subject: subject, end: .after(.seconds(days * 86_400)),
        reminders: reminders.map { .seconds($0 * 86_400) })
    ).trial
  }
}

@Suite struct EngineTests {
  @Test func remindersAndExpiry_FireOnTime_AndTrialExpires() throws {
    let h = try Harness.started(ids: [0xA])
    let trial = try h.start("acme-42", days: 5)
    h.scheduler.advance(by: 5 * day)
    #expect(h.sink.ids.map(\.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .expiry])
    #expect(h.sink.delivered.map(\.at) == [2, 4, 5].map { epoch.addingTimeInterval($0 * day) })
    #expect(h.sink.delivered.allSatisfy { $0.entry.lateness == .zero && !$0.entry.isLate && $0.entry.fired })
    let stored = try h.repository.read { try $0.trial(trial.id) }
    #expect(stored?.state == .expired)
    #expect(try h.repository.outbox().isEmpty)
    #expect(h.engine.nextWake == nil)
    #expect(h.engine.counts[.active] == 0 && h.engine.counts[.expired] == 1)
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  @Test func catchUpAfterRestart_FiresExpiryLate_AndSkipsSupersededReminders() throws {
    let repository = InMemoryTrialRepository()
    let first = try Harness.started(repository: repository, ids: [0xB])
    try first.start("acme-1", days: 5)
    first.scheduler.advance(by: 1 * day)
    first.engine.stop()
    #expect(first.sink.delivered.isEmpty)

    // Down for five days: both reminders and the expiry fall due meanwhile.
    let scheduler = TestScheduler(now: epoch.addingTimeInterval(6 * day))
    let second = Harness(repository: repository, scheduler: scheduler)
    let report = try second.engine.start()
    #expect(report.caughtUp == 3)
    #expect(second.sink.delivered.count == 3)
    let dispositions = second.sink.delivered.map(\.entry.outcome)
    #expect(dispositions == [.skipped(.supersededByExpiry), .skipped(.supersededByExpiry), .fired])
    let expiry = second.sink.delivered[2].entry
    #expect(expiry.isLate && expiry.lateness == .days(1))
    #expect(second.engine.counts[.expired] == 1)
    second.engine.stop()
    scheduler.expectNoPendingActions()
  }

  @Test func restart_RedeliversUndeliveredEvents_WithTheSameIDs() throws {
    let repository = InMemoryTrialRepository()
    let first = try Harness.started(repository: repository, ids: [0xC])
    try first.start("acme-2", days: 5)
    first.sink.failuresLeft = 100
    first.scheduler.advance(by: 2 * day)
    let undelivered = try repository.outbox().map(\.id)
    #expect(undelivered.count == 1)
    first.engine.stop()

    let second = Harness(repository: repository, scheduler: TestScheduler(now: first.scheduler.now))
    let report = try second.engine.start()
    #expect(report.redelivered == 1)
    #expect(second.sink.ids == undelivered)
    second.scheduler.advance(by: 1)
    #expect(try repository.outbox().isEmpty)
    second.engine.stop()
  }

  @Test func deliveryFailure_IsRetried_WithoutFiringAgain() throws {
    let h = try Harness.started(settings: EngineSettings(retryDelay: .seconds(5)), ids: [0xD])
    try h.start("acme-3", days: 5)
    h.sink.failuresLeft = 1
    h.scheduler.advance(by: 2 * day)
    #expect(h.sink.delivered.isEmpty)
    h.scheduler.advance(by: 5)
    #expect(h.sink.delivered.count == 1)
    #expect(h.sink.delivered[0].entry.event.due == epoch.addingTimeInterval(2 * day))
    h.scheduler.advance(by: 3 * day)
    #expect(h.sink.delivered.count == 3)
    #expect(Set(h.sink.ids).count == 3)
    h.engine.stop()
  }

  @Test func commitFailure_LosesNothing_AndFiresOnRetry() throws {
    let h = try Harness.started(settings: EngineSettings(retryDelay: .seconds(10)), ids: [0xE])
    try h.start("acme-4", days: 5, reminders: [])
    struct DiskFull: Error {}
    h.repository.failNextCommit = DiskFull()
    h.scheduler.advance(by: 5 * day)
    #expect(h.sink.delivered.isEmpty)
    #expect(h.engine.planner.pendingEventCount == 1)
    h.scheduler.advance(by: 10)
    #expect(h.sink.ids.map(\.kind) == [.expiry])
    #expect(h.sink.delivered[0].entry.lateness == .seconds(10))
    h.engine.stop()
  }

  @Test func suspend_FiresEachOverdueEventOnce_AtResume() throws {
    let h = try Harness.started(ids: [0xF])
    try h.start("acme-5", days: 5)
    h.scheduler.advance(by: 1 * day)
    h.scheduler.jump(by: 2.5 * day)
    #expect(h.sink.delivered.count == 1)
    let reminder = h.sink.delivered[0]
    #expect(reminder.at == epoch.addingTimeInterval(3.5 * day))
    #expect(reminder.entry.isLate && reminder.entry.lateness == .hours(36))
    #expect(h.observer.steps.isEmpty, "a suspend moves monotonic time too: not a step")
    h.scheduler.advance(by: 2 * day)
    #expect(h.sink.delivered.count == 3)
    h.engine.stop()
  }

  @Test func forwardStep_IsDetected_AndFiresWhatBecameDue() throws {
    let h = try Harness.started(settings: EngineSettings(policy: CatchUpPolicy(reminders: .all)), ids: [0x10])
    try h.start("acme-6", days: 5)
    h.scheduler.setWallTime(epoch.addingTimeInterval(4.5 * day))
    #expect(h.sink.delivered.isEmpty, "a step fires nothing by itself")
    h.engine.clockChanged()
    #expect(h.observer.steps.count == 1)
    #expect(h.sink.delivered.map(\.entry.outcome) == [.fired, .fired])
    #expect(h.sink.delivered.allSatisfy { $0.entry.isLate })
    h.scheduler.advance(by: 0.5 * day)
    #expect(h.sink.ids.last?.kind == .expiry)
    h.engine.stop()
  }

  @Test func backwardStep_NeverFiresAgain() throws {
    let h = try Harness.started(ids: [0x11])
    try h.start("acme-7", days: 5)
    h.scheduler.advance(by: 2.5 * day)
    #expect(h.sink.delivered.count == 1)
    h.scheduler.setWallTime(epoch.addingTimeInterval(1 * day))
    h.engine.clockChanged()
    #expect(h.observer.steps.count == 1)
    h.scheduler.advance(by: 3 * day)
    #expect(h.sink.delivered.count == 2, "the 3-day reminder fired already; only the 1-day one fires")
    #expect(h.sink.delivered[1].entry.event.kind == .reminder(before: .days(1)))
    h.scheduler.advance(by: 1 * day)
    #expect(h.sink.ids.map(\.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .expiry])
    h.engine.stop()
  }

  @Test func backwardStepAcrossRestart_IsReported() throws {
    let repository = InMemoryTrialRepository()
    let first = try Harness.started(repository: repository, ids: [0x12])
    first.scheduler.advance(by: day)
    first.engine.stop()
    let second = Harness(repository: repository, scheduler: TestScheduler(now: epoch))
    let report = try second.engine.start()
    #expect(report.backwardStep?.from == epoch.addingTimeInterval(day))
    #expect(second.observer.steps.count == 1)
    second.engine.stop()
  }

  @Test func extend_OldRevisionNeverFires() throws {
    let h = try Harness.started(ids: [0x13])
    let trial = try h.start("acme-8", days: 5)
    h.scheduler.advance(by: 3 * day)
    let extended = try h.engine.perform(.extend(trial.id, .by(.days(10)))).trial
    #expect(extended.revision == 2)
    h.scheduler.advance(by: 20 * day)
    #expect(h.sink.ids.map(\.revision) == [1, 2, 2, 2])
    #expect(h.sink.delivered.last?.at == epoch.addingTimeInterval(15 * day))
    h.engine.stop()
  }

  @Test func end_CancelsEverythingPending() throws {
    let h = try Harness.started(ids: [0x14])
    let trial = try h.start("acme-9", days: 5)
    _ = try h.engine.perform(.end(trial.id, .converted))
    h.scheduler.advance(by: 30 * day)
    #expect(h.sink.delivered.isEmpty)
    #expect(h.engine.counts[.converted] == 1 && h.engine.counts[.active] == 0)
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  /// Commands submitted while the lane is busy wait there, and go in its next transaction
  /// together; each is answered alone, once durable.
  @Test func submittedCommands_WaitingInTheLane_AreCommittedTogether() throws {
    let scheduler = TestScheduler(now: epoch)
    let repository = InMemoryTrialRepository()
    let lane = ManualCommitLane(repository: repository, monotonicNow: { scheduler.monotonicNow })
    let engine = makeEngine(
      repository: repository, scheduler: scheduler, ids: [0x20, 0x21, 0x22], commits: lane)
    _ = try engine.start()
    let before = repository.commitCount
    var results: [Result<CommandResult, any Error>] = []
    for subject in ["a", "b", "a"] {
      engine.submit(try .start(subject: subject)) {
        results.append($0)
      }
    }
    scheduler.advance(by: 0)
    #expect(results.isEmpty, "answered only once durable")
    #expect(lane.waitingCount == 3)
    lane.commitWaiting()
    #expect(repository.commitCount == before + 1)
    #expect(results.count == 3)
    #expect((try? results[0].get())?.trial.period.length == Days.defaultTrialLength)
    #expect((try? results[1].get()) != nil)
    #expect(throws: TrialError(.subjectAlreadyActive(subject: "a", existing: TrialID(0x20)))) {
      try results[2].get()
    }
    engine.stop()
  }

  @Test func startWithReminderAlreadyDue_RecordsItSkipped() throws {
    let h = try Harness.started(ids: [0x30])
    let result = try h.engine.perform(
      .start(subject: "short", end: .after(.days(2)), reminders: ReminderSchedule.default.offsets))
    #expect(result.skipped.map(\.disposition) == [.skip(.alreadyDueAtStart)])
    h.scheduler.advance(by: 2 * day)
    #expect(h.sink.ids.map(\.kind) == [.reminder(before: .days(1)), .expiry])
    let plan = try h.repository.read { try $0.ledgerEntries(trial: result.trial.id) }
    #expect(plan.map(\.outcome) == [.skipped(.alreadyDueAtStart), .fired, .fired])
    h.engine.stop()
  }

  @Test func watchdog_PingsAtItsInterval_UntilStopped() throws {
    let h = try Harness.started(settings: EngineSettings(watchdogInterval: .seconds(15)))
    h.scheduler.advance(by: 60)
    #expect(h.observer.pings.count == 4)
    h.scheduler.setWallTime(epoch.addingTimeInterval(-day))
    h.scheduler.advance(by: 30)
    #expect(h.observer.pings.count == 6, "wall steps do not disturb the watchdog")
    h.engine.stop()
    h.scheduler.advance(by: 60)
    #expect(h.observer.pings.count == 6)
    h.scheduler.expectNoPendingActions()
  }

  @Test func status_IsCurrent_AndRateLimited() throws {
    let h = try Harness.started(settings: EngineSettings(statusInterval: .seconds(1)), ids: [0x40, 0x41])
    #expect(h.observer.statuses == ["0 active trials; nothing scheduled"])
    try h.start("acme-42", days: 1, reminders: [])
    try h.start("acme-43", days: 2, reminders: [])
    #expect(h.observer.statuses.count == 1, "no more than one update per interval")
    h.scheduler.advance(by: 1)
    #expect(h.observer.statuses.last == "2 active trials; next: acme-42 expires in 23h 59min")
    h.engine.stop()
  }

  @Test func idleEngine_ArmsNothing() throws {
    let h = try Harness.started()
    #expect(h.scheduler.pending.isEmpty)
    h.engine.stop()
  }
}

@Suite struct EngineMemoryTests {
  @Test func releaseMemory_RunsOnceWritesHaveGoneQuiet_OncePerQuietSpell() throws {
    let h = try Harness.started(settings: EngineSettings(memoryQuiet: .seconds(2)), ids: [0x50, 0x51, 0x52])
    var releases = 0
    h.engine.releaseMemory = { releases += 1 }
    try h.start("acme-1", days: 5)
    h.scheduler.advance(by: 1.5)
    try h.start("acme-2", days: 5)
    h.scheduler.advance(by: 1.9)
    #expect(releases == 0, "2 s after the first write, but not after the second")
    h.scheduler.advance(by: 0.1)
    #expect(releases == 1)
    h.scheduler.advance(by: 60)
    #expect(releases == 1, "nothing written since")
    #expect(!h.scheduler.pending.contains { $0.label == "memory" })
    try h.start("acme-3", days: 5)
    h.scheduler.advance(by: 2)
    #expect(releases == 2)
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  @Test func releaseMemory_Unset_ArmsNothing() throws {
    let h = try Harness.started(ids: [0x60])
    try h.start("acme-1", days: 5)
    #expect(!h.scheduler.pending.contains { $0.label == "memory" })
    h.engine.stop()
  }
}
