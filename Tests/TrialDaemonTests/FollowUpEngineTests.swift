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

/// Follow-ups in the engine, in virtual time, on every store: fired once each after an expiry,
/// across a restart; called off by a conversion during grace or a later trial of the subject,
/// and nothing fired after.
@Suite struct FollowUpEngineTests {
  static let followUps = try! FollowUpSchedule([.days(3), .days(30)])
  static let settings: EngineSettings = {
    var pro = TrialPlan(name: "pro", length: .days(10), reminders: .none)
    pro.followUps = followUps
    var graced = TrialPlan(name: "graced", length: .days(10), reminders: .none, grace: .days(2))
    graced.followUps = followUps
    return EngineSettings(plans: ["pro": pro, "graced": graced])
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

  func outcomes(_ engine: Engine, _ id: TrialID) throws -> [String] {
    try engine.repository.read { try $0.ledgerEntries(trial: id) }.filter {
      $0.event.kind.followUpSpan != nil
    }
    .map {
      switch $0.outcome {
      case .fired: "\($0.id) fired"
      case .skipped(let reason): "\($0.id) \(reason.code)"
      }
    }
  }

  @Test(arguments: StoreKind.allCases)
  func afterAnExpiry_EachFiresOnce_AcrossARestart(store kind: StoreKind) throws {
    let store = try GraceEngineTests.Store(kind)
    let first = try run(store.repository, at: epoch, ids: [0x71])
    let trial = try first.engine.perform(try .start(subject: "acme-71", plan: "pro")).trial
    #expect(trial.followUps == Self.followUps)
    #expect(EventObject.plan(of: trial, ledger: []).map(\.kind) == [.expiry, .followUp, .followUp])
    first.scheduler.advance(by: 13 * day)
    #expect(
      first.sink.ids.map(\.description) == [
        "0000000000000071-r1-expiry", "0000000000000071-r1-follow-up-259200000ms",
      ])
    #expect(first.sink.delivered.map(\.at) == [10, 13].map(Self.at))
    #expect(first.engine.tally.fired["follow-up"] == 1)
    first.engine.stop()
    try store.reopen()

    let second = try run(store.repository, at: Self.at(14))
    #expect(second.sink.delivered.isEmpty)
    second.scheduler.advance(by: 30 * day)
    #expect(second.sink.ids.map(\.description) == ["0000000000000071-r1-follow-up-2592000000ms"])
    #expect(second.sink.delivered.map(\.at) == [Self.at(40)])
    second.engine.stop()
    try store.reopen()

    let third = try run(store.repository, at: Self.at(45))
    third.scheduler.advance(by: 60 * day)
    #expect(third.sink.delivered.isEmpty)
    #expect(try outcomes(third.engine, trial.id).count == 2)
    third.engine.stop()
  }

  @Test(arguments: StoreKind.allCases)
  func conversionOrANewTrial_CallsThemOff(store kind: StoreKind) throws {
    let store = try GraceEngineTests.Store(kind)
    let first = try run(store.repository, at: epoch, ids: [0x72, 0x73, 0x74])
    let converted = try first.engine.perform(try .start(subject: "acme-72", plan: "graced")).trial
    let renewed = try first.engine.perform(try .start(subject: "acme-73", plan: "pro")).trial
    first.scheduler.advance(by: 11 * day)
    // In grace: converted at day 11, its follow-ups are called off.
    _ = try first.engine.perform(.end(converted.id, .converted))
    first.scheduler.advance(by: 3 * day)
    #expect(try outcomes(first.engine, renewed.id) == ["0000000000000073-r1-follow-up-259200000ms fired"])
    // A new trial of the subject calls off the follow-up still pending: GetPlan shows it to be
    // skipped with the reason, and Simulate takes it so.
    _ = try first.engine.perform(try .start(subject: "acme-73", plan: "pro"))
    let queries = first.engine.queries
    let (stored, ledger) = try queries.trialWithLedger(id: renewed.id)
    let latest = try queries.trial(subject: "acme-73").id
    #expect(
      EventObject.plan(of: stored, ledger: ledger, latestTrial: latest).compactMap(\.reason) == [
        "called-off-by-new-trial"
      ])
    let simulated = try queries.simulate(now: Self.at(14), through: Self.at(60), policy: Self.settings.policy)
      .filter { $0.event.kind.followUpSpan != nil && [converted.id, renewed.id].contains($0.event.trialID) }
    #expect(
      simulated.map(\.disposition) == [
        .skip(.calledOffByConversion), .skip(.calledOffByNewTrial), .skip(.calledOffByConversion),
      ])
    first.engine.stop()
    try store.reopen()

    let second = try run(store.repository, at: Self.at(15))
    second.scheduler.advance(by: 60 * day)
    #expect(
      try outcomes(second.engine, converted.id) == [
        "0000000000000072-r1-follow-up-259200000ms called-off-by-conversion",
        "0000000000000072-r1-follow-up-2592000000ms called-off-by-conversion",
      ])
    #expect(
      try outcomes(second.engine, renewed.id) == [
        "0000000000000073-r1-follow-up-259200000ms fired",
        "0000000000000073-r1-follow-up-2592000000ms called-off-by-new-trial",
      ])
    #expect(!second.sink.delivered.contains { $0.entry.event.trialID == converted.id && $0.entry.fired })
    #expect(second.engine.tally.skipped["called-off-by-conversion"] == 2)
    second.engine.stop()
  }
}

extension FollowUpEngineTests {
  /// An export taken after the first follow-up fired, imported into a new store of each kind
  /// (through its JSON lines): the engine on it fires the second follow-up once, never the first
  /// again.
  @Test(arguments: StoreKind.allCases)
  func exportedAndImported_TheRestFireOnce(store kind: StoreKind) throws {
    let source = InMemoryTrialRepository()
    let first = try run(source, at: epoch, ids: [0x75])
    let trial = try first.engine.perform(try .start(subject: "acme-75", plan: "pro")).trial
    first.scheduler.advance(by: 14 * day)
    first.engine.stop()
    let (stored, ledger) = try first.engine.queries.trialWithLedger(id: trial.id)
    let lines = try ExportRecord.records(of: stored, ledger: ledger).enumerated().map {
      TrialTransfer.Line($0.offset + 1, try ExportRecord.read(line: $0.element.jsonLine.utf8))
    }
    #expect(lines.first?.record == .trial(stored) && stored.followUps == Self.followUps)

    let store = try GraceEngineTests.Store(kind)
    _ = try TrialTransfer.run({ each in for line in lines { try each(line) } }, into: store.repository)
    let second = try run(store.repository, at: Self.at(15))
    second.scheduler.advance(by: 60 * day)
    #expect(second.sink.ids.map(\.description) == ["0000000000000075-r1-follow-up-2592000000ms"])
    #expect(try outcomes(second.engine, trial.id).count == 2)
    second.engine.stop()
  }
}

@Suite struct FollowUpPlanFileTests {
  @Test func followUpsKey_IsThePlansFollowUps_AndEmptyOrNoneIsNone() throws {
    let fixture = ConfigurationFixture()
    fixture.write("plans/pro.conf", "[Plan]\nLength=7d\nFollowUps=30d, 3d\n")
    fixture.write("plans/basic.conf", "[Plan]\nFollowUps=none\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(loaded.configuration.plans["pro"]?.followUps.spans == [.days(3), .days(30)])
    #expect(loaded.configuration.plans["basic"]?.followUps.isEmpty == true)
  }

  @Test func followUpsKey_Invalid_IsAnErrorNamingFileAndLine() {
    let fixture = ConfigurationFixture()
    let zero = fixture.write("plans/zero.conf", "[Plan]\nLength=14d\nFollowUps=3d, 0\n")
    let word = fixture.write("plans/word.conf", "[Plan]\nFollowUps=soon\n")
    let fine = fixture.write("plans/fine.conf", "[Plan]\nFollowUps=1.5ms\n")
    let many = (1...33).map { "\($0)d" }.joined(separator: ", ")
    let lots = fixture.write("plans/lots.conf", "[Plan]\nFollowUps=\(many)\n")
    let loaded = fixture.load()
    let found = loaded.diagnostics.map(\.description).sorted()
    #expect(found.count == 4)
    #expect(
      found.contains { $0.hasPrefix("\(zero):3: error: invalid value \"3d, 0\" for FollowUps= in [Plan]") })
    #expect(found.contains { $0.hasPrefix("\(word):2: error: invalid value \"soon\" for FollowUps=") })
    #expect(
      found.contains {
        $0
          == "\(fine):2: error: invalid value \"1.5ms\" for FollowUps= in [Plan]: must be a whole number of milliseconds"
      })
    #expect(
      found.contains { $0.hasSuffix("at most 32 follow-ups per trial, got 33") && $0.hasPrefix("\(lots):2:") }
    )
    #expect(loaded.configuration.plans.isEmpty)
  }
}
