import Foundation
import Logging
import Systemd
import SystemdTesting
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

extension RecordingJournal {
  /// The events sent, by id, in order.
  var eventIDs: [String] { values("EVENT_ID") }
}

/// The clock journald counts its rate limit on (CLOCK_MONOTONIC): the engine's monotonic time
/// (CLOCK_BOOTTIME) less the time the system spent suspended.
final class JournaldClock: @unchecked Sendable {
  var suspended: TimeInterval = 0
}

/// The engine with the real journal sink, paced, over a recording journal, in virtual time.
struct PacedHarness {
  let scheduler: TestScheduler
  let journald = JournaldClock()
  let repository: InMemoryTrialRepository
  let journal = RecordingJournal()
  let logs = CapturedLogs()
  let sink: JournalEventSink
  let engine: Engine

  init(
    limit: JournalPace.Limit?, retryDelay: Duration = .seconds(1),
    repository: InMemoryTrialRepository = InMemoryTrialRepository(), now: Date = epoch
  ) {
    let scheduler = TestScheduler(now: now)
    self.scheduler = scheduler
    self.repository = repository
    let journald = self.journald
    journal.monotonicNow = { scheduler.monotonicNow - journald.suspended }
    sink = JournalEventSink(
      destination: .journal, journal: journal, limit: limit, monotonicNow: { scheduler.monotonicNow },
      journalNow: { scheduler.monotonicNow - journald.suspended }, logger: logs.makeLogger())
    engine = makeEngine(
      repository: repository, scheduler: scheduler, settings: EngineSettings(retryDelay: retryDelay), ids: [],
      idFallbackStart: 0x100, sinks: [sink], logger: logs.makeLogger())
  }

  /// A harness whose engine has started.
  static func started(
    limit: JournalPace.Limit?, retryDelay: Duration = .seconds(1),
    repository: InMemoryTrialRepository = InMemoryTrialRepository()
  ) throws -> PacedHarness {
    let harness = PacedHarness(limit: limit, retryDelay: retryDelay, repository: repository)
    _ = try harness.engine.start()
    return harness
  }

  /// A started harness paced to `burst` entries per 30 s, whose `count` trials of `prefix`
  /// expired at `end`, where the clock now stands.
  static func expired(_ count: Int, prefix: String, at end: Date, burst: Int) throws -> PacedHarness {
    let harness = try started(limit: JournalPace.Limit(interval: .seconds(30), burst: burst))
    try harness.startTrials(count, prefix: prefix, endingAt: end)
    harness.scheduler.advance(to: end)
    return harness
  }

  /// Starts `count` trials without reminders, all ending at `end`.
  func startTrials(_ count: Int, prefix: String, endingAt end: Date) throws {
    for index in 0..<count {
      _ = try engine.perform(
        .start(subject: "\(prefix)-\(index)", end: .at(end), reminders: []))
    }
  }

  /// The records of `message` at `level` or more severe.
  func logged(_ message: String, _ level: Logger.Level = .notice) -> [CapturedLogs.Record] {
    logs.all.filter { $0.message == message && $0.level >= level }
  }

  var errors: [CapturedLogs.Record] { logs.all.filter { $0.level >= .error } }
}

@Suite struct DeliveryHoldTests {
  /// The order an unpaced engine delivers the same events in.
  func unpacedOrder(_ count: Int, endingAt end: Date) throws -> [String] {
    let h = try PacedHarness.started(limit: nil)
    try h.startTrials(count, prefix: "burst", endingAt: end)
    h.scheduler.advance(to: end)
    h.engine.stop()
    return h.journal.eventIDs
  }

  @Test func burst_BeyondThePace_IsHeldInTheOutboxAndDeliveredInOrderAsTheWindowAllows() throws {
    let end = epoch.addingTimeInterval(60)
    let h = try PacedHarness.expired(25, prefix: "burst", at: end, burst: 10)
    #expect(h.journal.sent.count == 10)
    #expect(h.engine.heldEvents == 15)
    #expect(h.engine.heldGauge.current == 15, "the metrics' journal_held_events")
    h.scheduler.advance(by: 1)
    #expect(try h.repository.outbox().count == 15, "held events stay in the outbox")
    #expect(h.engine.counts[.expired] == 25, "every trial expired on time; only the journal waits")
    let holding = h.logged("holding events back from the journal")
    #expect(holding.count == 1)
    #expect(holding.first?.level == .notice)
    #expect(holding.first?.metadata["held"] == "15")
    #expect(holding.first?.metadata["resume_in"] == "30s")
    #expect(holding.first?.metadata["reason"] == "at most 10 entries per 30s to the journal")

    // Each window opens a microsecond after the one before it closes.
    h.scheduler.advance(by: 30)
    #expect(h.journal.sent.count == 20)
    h.scheduler.advance(by: 30)
    #expect(h.journal.sent.count == 25)
    #expect(h.engine.heldEvents == 0)
    #expect(h.engine.heldGauge.current == 0)
    h.scheduler.advance(by: 1)
    #expect(try h.repository.outbox().isEmpty)

    #expect(h.journal.eventIDs == (try unpacedOrder(25, endingAt: end)), "in the order taken, each once")
    #expect(busiestWindow(h.journal.sent.map(\.at), interval: 30) == 10)
    #expect(h.scheduler.log.filter { $0.label == "deliver" }.count == 2, "one wake per window, no spinning")
    #expect(h.logged("holding events back from the journal").count == 1, "a hold that goes on is not news")
    #expect(h.logged("delivered the held events").first?.metadata["count"] == "15")
    #expect(h.errors.isEmpty)
    #expect(Set(h.journal.values("MESSAGE_ID")) == [EventJournalEntry.MessageID.expired.rawValue])
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  /// The system suspends for an hour in the middle of a held backlog. The engine's clock runs on
  /// through the suspend, journald's stops: the window journald counts is still open at the
  /// resume, so the held entries and those that fell due while suspended wait for it to close.
  /// No window of journald's ever holds more than the burst, and the status line tells the held.
  @Test func suspend_InTheMiddleOfAHeldBacklog_NeverOverfillsJournaldsWindow() throws {
    let end = epoch.addingTimeInterval(60)
    let h = try PacedHarness.expired(25, prefix: "burst", at: end, burst: 10)
    try h.startTrials(8, prefix: "asleep", endingAt: end.addingTimeInterval(1_800))
    #expect(h.journal.sent.count == 10)
    #expect(
      h.engine.statusLine().hasSuffix("; 15 events held back (at most 10 entries per 30s to the journal)"),
      "\(h.engine.statusLine())")
    h.scheduler.advance(by: 5)
    h.journald.suspended = 3_600
    h.scheduler.advance(by: 3_600)  // Resumed: the wall clock and the engine's clock moved on.
    #expect(h.journal.sent.count == 10, "journald's window is still open")
    #expect(h.engine.heldEvents == 23, "the trials that ended while suspended expired, and wait behind")
    #expect(h.engine.counts[.expired] == 33)
    h.scheduler.advance(by: 25)
    #expect(h.journal.sent.count == 10, "journald's window ends 30 s after its first entry, by its clock")
    h.scheduler.advance(by: 1)
    #expect(h.journal.sent.count == 20)
    h.scheduler.advance(by: 60)
    #expect(h.journal.sent.count == 33)
    #expect(busiestWindow(h.journal.sent.map(\.at), interval: 30) == 10)
    #expect(h.engine.heldEvents == 0)
    #expect(!h.engine.statusLine().contains("held back"))
    h.engine.stop()
  }

  @Test func eventsTakenWhileHeld_WaitBehindTheHeldOnes_AndStayOnTime() throws {
    let end = epoch.addingTimeInterval(60)
    let h = try PacedHarness.started(limit: JournalPace.Limit(interval: .seconds(30), burst: 3))
    try h.startTrials(5, prefix: "first", endingAt: end)
    try h.startTrials(2, prefix: "second", endingAt: end.addingTimeInterval(10))
    h.scheduler.advance(to: end.addingTimeInterval(10))
    #expect(h.journal.sent.count == 3)
    #expect(h.engine.heldEvents == 4)
    #expect(h.engine.counts[.expired] == 7)
    h.scheduler.advance(by: 21)
    #expect(
      h.journal.values("TRIAL_SUBJECT").map { $0.hasPrefix("first") } == [
        true, true, true, true, true, false,
      ])
    h.scheduler.advance(by: 30)
    let firstGroupFirst = Array(repeating: true, count: 5) + Array(repeating: false, count: 2)
    #expect(h.journal.values("TRIAL_SUBJECT").map { $0.hasPrefix("first") } == firstGroupFirst)
    #expect(Set(h.journal.eventIDs).count == 7)
    #expect(h.journal.values("LATENESS_USEC") == Array(repeating: "0", count: 7), "taken on time, sent later")
    #expect(h.logged("holding events back from the journal").count == 1)
    h.engine.stop()
  }

  @Test func sendFailure_KeepsTheEntryInTheOutbox_TriesAgainAndLogsOnce() throws {
    let end = epoch.addingTimeInterval(60)
    let h = try PacedHarness.started(limit: nil, retryDelay: .seconds(5))
    try h.startTrials(4, prefix: "fail", endingAt: end)
    h.journal.failuresLeft = 3
    h.scheduler.advance(to: end)
    #expect(h.journal.sent.isEmpty)
    #expect(try h.repository.outbox().count == 4)
    #expect(h.engine.heldEvents == 4)
    h.scheduler.advance(by: 10)
    #expect(h.journal.sent.isEmpty, "failed twice more")
    h.scheduler.advance(by: 5)
    #expect(h.journal.eventIDs == (try unpacedOrder(4, endingAt: end)), "all four, in order, once")
    h.scheduler.advance(by: 1)
    #expect(try h.repository.outbox().isEmpty)
    #expect(h.errors.count == 1, "one error for the whole outage: \(h.errors.map(\.message))")
    #expect(h.errors.first?.message == "could not deliver events; keeping them in the outbox")
    #expect(h.errors.first?.metadata["error"] == "\(SystemdError.journalSendFailed)")
    #expect(h.logged("delivered the held events").first?.metadata["held_for"] == "15s")
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }

  @Test func heldEvents_AfterARestart_AreDeliveredFromTheOutboxAtThePace() throws {
    let end = epoch.addingTimeInterval(60)
    let limit = JournalPace.Limit(interval: .seconds(30), burst: 2)
    let repository = InMemoryTrialRepository()
    let first = try PacedHarness.started(limit: limit, repository: repository)
    try first.startTrials(5, prefix: "restart", endingAt: end)
    first.scheduler.advance(to: end)
    #expect(first.journal.sent.count == 2)
    first.engine.stop()

    // As the daemon does when the store holds undelivered events: the run before may have
    // filled journald's current window.
    let second = PacedHarness(limit: limit, repository: repository, now: end.addingTimeInterval(1))
    second.sink.assumeFullWindow()
    let report = try second.engine.start()
    #expect(report.redelivered == 3)
    #expect(second.journal.sent.isEmpty)
    #expect(second.engine.heldEvents == 3)
    second.scheduler.advance(by: 31)
    #expect(second.journal.sent.count == 2)
    second.scheduler.advance(by: 30)
    #expect(Set(first.journal.eventIDs + second.journal.eventIDs).count == 5)
    #expect(first.journal.sent.count + second.journal.sent.count == 5)
    second.engine.stop()
  }

  @Test func pace_TurnedOffByAReload_DeliversTheHeldEventsAtOnce() throws {
    let end = epoch.addingTimeInterval(60)
    let h = try PacedHarness.expired(6, prefix: "reload", at: end, burst: 2)
    #expect(h.journal.sent.count == 2)
    h.sink.setLimit(nil)
    h.engine.resumeDelivery()
    #expect(h.journal.sent.count == 6)
    #expect(h.engine.heldEvents == 0)
    h.engine.stop()
    h.scheduler.expectNoPendingActions()
  }
}
