import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Milestones in the engine, in virtual time, on every store: each fired once, across a restart
/// and an extension; those that have not come skipped by an end or a pause, and none fired after.
@Suite struct MilestoneEngineTests {
  static let settings: EngineSettings = {
    var pro = TrialPlan(name: "pro", length: .days(10), reminders: .none)
    pro.milestones = try! MilestoneSchedule([.days(1), .days(2), .days(12)])
    return EngineSettings(plans: ["pro": pro])
  }()

  static func at(_ days: Double) -> Date { epoch.addingTimeInterval(days * day) }

  func run(_ repository: any TrialRepository, at start: Date, ids: [UInt64] = []) throws
    -> (engine: Engine, scheduler: TestScheduler, sink: SpySink)
  {
    let scheduler = TestScheduler(now: start)
    let sink = SpySink(clock: scheduler.clock)
    let engine = makeEngine(
      repository: repository, scheduler: scheduler, settings: Self.settings, ids: ids, sinks: [sink])
    _ = try engine.start()
    return (engine, scheduler, sink)
  }

  /// The trial's milestones in the ledger, in id order: `<revision>-<days>d <outcome>`.
  func outcomes(_ engine: Engine, _ id: TrialID) throws -> [String] {
    try engine.repository.read { try $0.ledgerEntries(trial: id) }.compactMap { entry in
      guard let span = entry.event.kind.milestoneSpan else { return nil }
      let outcome =
        switch entry.outcome {
        case .fired: "fired"
        case .skipped(let reason): reason.code
        }
      return "r\(entry.event.revision)-\(Int(span / .days(1)))d \(outcome)"
    }
  }

  func milestonesFired(_ sink: SpySink) -> [String] {
    sink.ids.filter { $0.kind.milestoneSpan != nil }.map(\.description)
  }

  @Test(arguments: StoreKind.allCases)
  func eachFiresOnce_AcrossARestart(store kind: StoreKind) throws {
    let store = try GraceEngineTests.Store(kind)
    let first = try run(store.repository, at: epoch, ids: [0x81])
    let trial = try first.engine.perform(try .start(subject: "acme-81", plan: "pro")).trial
    #expect(trial.milestones.spans == [.days(1), .days(2), .days(12)])
    first.scheduler.advance(by: 1.5 * day)
    #expect(milestonesFired(first.sink) == ["0000000000000081-r1-milestone-86400000ms"])
    #expect(first.sink.delivered.map(\.at) == [Self.at(1)])
    first.engine.stop()
    try store.reopen()

    let second = try run(store.repository, at: Self.at(1.5))
    second.scheduler.advance(by: 20 * day)
    // The second once; the third, after the end, skipped by the expiry.
    #expect(
      second.sink.ids.map(\.description) == [
        "0000000000000081-r1-milestone-172800000ms", "0000000000000081-r1-expiry",
      ])
    #expect(second.engine.tally.fired["milestone"] == 1)
    second.engine.stop()
    try store.reopen()

    let third = try run(store.repository, at: Self.at(22))
    third.scheduler.advance(by: 20 * day)
    #expect(third.sink.delivered.isEmpty)
    #expect(try outcomes(third.engine, trial.id) == ["r1-1d fired", "r1-2d fired", "r1-12d trial-ended"])
    third.engine.stop()
  }

  @Test(arguments: StoreKind.allCases)
  func anExtension_DoesNotFireOneAgain(store kind: StoreKind) throws {
    let store = try GraceEngineTests.Store(kind)
    let first = try run(store.repository, at: epoch, ids: [0x82])
    let trial = try first.engine.perform(try .start(subject: "acme-82", plan: "pro")).trial
    first.scheduler.advance(by: 1.5 * day)
    // Extended to day 15: the milestone of day 12 now comes before the end.
    _ = try first.engine.perform(.extend(trial.id, .to(Self.at(15))))
    first.scheduler.advance(by: 1 * day)
    first.engine.stop()
    try store.reopen()

    let second = try run(store.repository, at: Self.at(2.5))
    second.scheduler.advance(by: 20 * day)
    #expect(
      milestonesFired(second.sink) == ["0000000000000082-r2-milestone-1036800000ms"])
    #expect(
      try outcomes(second.engine, trial.id) == [
        "r1-1d fired", "r2-1d already-due-at-extension", "r2-2d fired", "r2-12d fired",
      ])
    second.engine.stop()
  }

  @Test(arguments: StoreKind.allCases)
  func aPauseOrAnEnd_SkipsThoseNotCome(store kind: StoreKind) throws {
    let store = try GraceEngineTests.Store(kind)
    let first = try run(store.repository, at: epoch, ids: [0x83, 0x84])
    let paused = try first.engine.perform(try .start(subject: "acme-83", plan: "pro")).trial
    let converted = try first.engine.perform(try .start(subject: "acme-84", plan: "pro")).trial
    first.scheduler.advance(by: 1.5 * day)
    _ = try first.engine.perform(try .pause(.id(paused.id)))
    _ = try first.engine.perform(.end(converted.id, .converted))
    first.scheduler.advance(by: 1 * day)
    // Resumed after the day-2 milestone would have come: it never fires, nor the later one.
    let resumed = try first.engine.perform(try .resume(.id(paused.id))).trial
    #expect(resumed.milestones.spans == [.days(1)])
    first.engine.stop()
    try store.reopen()

    let second = try run(store.repository, at: Self.at(2.5))
    second.scheduler.advance(by: 30 * day)
    #expect(milestonesFired(second.sink).isEmpty)
    #expect(
      try outcomes(second.engine, paused.id) == [
        "r1-1d fired", "r1-2d paused", "r1-12d paused", "r2-1d already-due-at-resume",
      ])
    #expect(
      try outcomes(second.engine, converted.id) == ["r1-1d fired", "r1-2d trial-ended", "r1-12d trial-ended"])
    second.engine.stop()
  }
}

@Suite struct MilestonePlanFileTests {
  @Test func milestonesKey_IsThePlansMilestones_AndEmptyOrNoneIsNone() throws {
    let fixture = ConfigurationFixture()
    fixture.write("plans/pro.conf", "[Plan]\nLength=7d\nMilestones=2d, 1d\n")
    fixture.write("plans/basic.conf", "[Plan]\nMilestones=none\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(loaded.configuration.plans["pro"]?.milestones.spans == [.days(1), .days(2)])
    #expect(loaded.configuration.plans["basic"]?.milestones.isEmpty == true)
  }

  @Test func milestonesKey_Invalid_IsAnErrorNamingFileAndLine() {
    let fixture = ConfigurationFixture()
    let zero = fixture.write("plans/zero.conf", "[Plan]\nLength=14d\nMilestones=1d, 0\n")
    let word = fixture.write("plans/word.conf", "[Plan]\nMilestones=soon\n")
    let fine = fixture.write("plans/fine.conf", "[Plan]\nMilestones=1.5ms\n")
    let long = fixture.write("plans/long.conf", "[Plan]\nMilestones=3651d\n")
    let many = (1...33).map { "\($0)d" }.joined(separator: ", ")
    let lots = fixture.write("plans/lots.conf", "[Plan]\nMilestones=\(many)\n")
    let loaded = fixture.load()
    let found = loaded.diagnostics.map(\.description).sorted()
    #expect(found.count == 5)
    #expect(
      found.contains { $0.hasPrefix("\(zero):3: error: invalid value \"1d, 0\" for Milestones= in [Plan]") })
    #expect(found.contains { $0.hasPrefix("\(word):2: error: invalid value \"soon\" for Milestones=") })
    #expect(
      found.contains {
        $0
          == "\(fine):2: error: invalid value \"1.5ms\" for Milestones= in [Plan]: must be a whole number of milliseconds"
      })
    #expect(found.contains { $0.hasPrefix("\(long):2:") && $0.contains("is longer than") })
    #expect(
      found.contains { $0.hasSuffix("at most 32 milestones per trial, got 33") && $0.hasPrefix("\(lots):2:") }
    )
    #expect(loaded.configuration.plans.isEmpty)
  }
}
