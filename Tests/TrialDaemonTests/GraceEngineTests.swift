import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialPostgres
import TrialPostgresTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Grace in the engine, in virtual time: `grace-started` at the end and the expiry at the end
/// plus the grace, each fired once, also across a restart during grace and a downtime spanning
/// both; a conversion and an extension during grace; on the stores that keep it.
@Suite struct GraceEngineTests {
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let settings = EngineSettings(
    plans: ["pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders, grace: .days(5))])

  static func at(_ days: Double) -> Date { epoch.addingTimeInterval(days * day) }

  /// A store the engine runs on, reopened as a restarted daemon opens it.
  final class Store {
    let kind: StoreKind
    private let directory: TemporaryDirectory
    private let postgres: PostgresTestStore?
    private(set) var repository: any TrialRepository

    init(_ kind: StoreKind) throws {
      self.kind = kind
      directory = try TemporaryDirectory("grace-engine")
      postgres = kind == .postgres ? try PostgresTestStore() : nil
      switch kind {
      case .memory: repository = InMemoryTrialRepository()
      case .lmdb: repository = try LMDBTrialRepository(directory: directory.appending("store"))
      case .postgres: repository = postgres!.repository
      }
    }

    func reopen() throws {
      switch kind {
      case .memory: break
      case .lmdb:
        (repository as? LMDBTrialRepository)?.close()
        let report = try LMDBStoreReader(directory: directory.appending("store")).verify()
        #expect(report.isClean, "\(report.problems.prefix(3))")
        repository = try LMDBTrialRepository(directory: directory.appending("store"))
      case .postgres:
        let shared = postgres!.repository
        repository = try PostgresTrialRepository(
          conninfo: postgres!.conninfo, node: shared.node, shards: shared.shards, ownership: shared.ownership,
          refusesEarlyFires: false)
      }
    }
  }

  /// One run of the daemon's engine from `start`, its events caught by a sink.
  struct Run {
    let scheduler: TestScheduler
    let sink: SpySink
    let engine: Engine
    let report: Engine.StartReport

    init(_ repository: any TrialRepository, at start: Date, ids: [UInt64] = []) throws {
      scheduler = TestScheduler(now: start)
      sink = SpySink(clock: scheduler.clock)
      engine = makeEngine(
        repository: repository, scheduler: scheduler, settings: GraceEngineTests.settings, ids: ids,
        sinks: [sink])
      report = try engine.start()
    }

    func stop() {
      engine.stop()
      scheduler.expectNoPendingActions()
    }

    func trial(_ id: TrialID) throws -> Trial? { try engine.repository.read { try $0.trial(id) } }
  }

  @Test func graceStarted_FiresAtTheEnd_AndTheExpiryOnceAtTheGracesEnd() throws {
    let run = try Run(InMemoryTrialRepository(), at: epoch, ids: [0x61])
    let trial = try run.engine.perform(try .start(subject: "acme-61", plan: "pro")).trial
    #expect(trial.grace == .days(5))
    let policy = Self.settings.policy
    let simulated = try run.engine.queries.simulate(now: epoch, through: Self.at(20), policy: policy).map(
      \.event)
    #expect(simulated.map(\.kind).suffix(2) == [.graceStarted, .expiry])
    #expect(simulated.map(\.due).suffix(2) == [Self.at(10), Self.at(15)])
    let plan = EventObject.plan(of: trial, ledger: [])
    #expect(plan.map(\.kind) == [.reminder, .reminder, .graceStarted, .expiry])

    run.scheduler.advance(by: 10 * day)
    #expect(
      run.sink.ids.map(\.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .graceStarted])
    #expect(run.sink.delivered.map(\.at) == [7, 9, 10].map(Self.at))
    #expect(try run.trial(trial.id)?.state == .grace)
    #expect(run.engine.counts[.grace] == 1 && run.engine.counts[.active, default: 0] == 0)
    let left = try run.engine.queries.simulate(now: Self.at(10), through: Self.at(20), policy: policy)
    #expect(left.map(\.event.id.description) == ["0000000000000061-r1-expiry"])
    #expect(left.map(\.event.due) == [Self.at(15)])
    let paused = #expect(throws: TrialError.self) { try run.engine.perform(try .pause(.id(trial.id))) }
    #expect(paused?.code == .notActive(trial.id, .grace))

    run.scheduler.advance(by: 5 * day)
    #expect(run.sink.ids.last?.kind == .expiry && run.sink.delivered.last?.at == Self.at(15))
    let expired = try #require(try run.trial(trial.id))
    #expect(expired.state == .expired && expired.endedAt == Self.at(15))
    #expect(run.engine.counts[.expired] == 1 && run.engine.counts[.grace, default: 0] == 0)
    run.scheduler.advance(by: 30 * day)
    #expect(run.sink.ids.count == 4 && Set(run.sink.ids).count == 4)
    #expect(run.engine.tally.fired["grace-started"] == 1 && run.engine.tally.fired["expiry"] == 1)
    run.stop()
  }

  @Test func conversionDuringGrace_CountsConverted_AndAnExtensionMakesItActiveAgain() throws {
    let run = try Run(InMemoryTrialRepository(), at: epoch, ids: [0x62, 0x63])
    let converted = try run.engine.perform(try .start(subject: "acme-62", plan: "pro")).trial
    let extended = try run.engine.perform(try .start(subject: "acme-63", plan: "pro")).trial
    run.scheduler.advance(by: 12 * day)
    #expect(run.engine.counts[.grace] == 2)

    let ended = try run.engine.perform(.end(converted.id, .converted)).trial
    #expect(ended.state == .converted && ended.endedAt == Self.at(12))
    let cohort = try run.engine.repository.read { try $0.cohorts(from: Int32.min, through: Int32.max) }
    #expect(cohort.first?.counts.converted == 1 && cohort.first?.counts.medianHoursToConversion == 288)
    let active = try run.engine.perform(try .extend(extended.id, .to(Self.at(20)))).trial
    #expect(active.state == .active && active.revision == 2)
    #expect(run.engine.counts[.grace, default: 0] == 0 && run.engine.counts[.active] == 1)

    run.sink.delivered.removeAll()
    run.scheduler.advance(by: 20 * day)
    // The first revision's expiry (day 15) never fires; the second's events do.
    #expect(
      run.sink.ids.map(\.description) == [
        "0000000000000063-r2-reminder-259200000ms", "0000000000000063-r2-reminder-86400000ms",
        "0000000000000063-r2-grace-started", "0000000000000063-r2-expiry",
      ])
    #expect(run.sink.delivered.map(\.at) == [17, 19, 20, 25].map(Self.at))
    #expect(try run.trial(converted.id)?.state == .converted)
    run.stop()
  }

  @Test(arguments: StoreKind.allCases)
  func restartDuringGrace_FiresTheExpiryOnce(store kind: StoreKind) throws {
    let store = try Store(kind)
    let first = try Run(store.repository, at: epoch, ids: [0x64])
    let trial = try first.engine.perform(try .start(subject: "acme-64", plan: "pro")).trial
    first.scheduler.advance(by: 11 * day)
    #expect(first.sink.ids.last?.kind == .graceStarted)
    first.stop()
    try store.reopen()

    let second = try Run(store.repository, at: Self.at(12))
    #expect(second.report.caughtUp == 0 && second.sink.delivered.isEmpty)
    #expect(try second.trial(trial.id)?.state == .grace)
    #expect(second.engine.counts[.grace] == 1)
    second.scheduler.advance(by: 3 * day)
    #expect(second.sink.ids.map(\.description) == ["0000000000000064-r1-expiry"])
    #expect(second.sink.delivered.first?.entry.isLate == false)
    second.stop()
    try store.reopen()

    let third = try Run(store.repository, at: Self.at(20))
    third.scheduler.advance(by: day)
    #expect(third.sink.delivered.isEmpty)
    let expired = try #require(try third.trial(trial.id))
    #expect(expired.state == .expired && expired.endedAt == Self.at(15))
    third.stop()
  }

  /// Down from day 1 to day 20: at the start, the reminders are superseded (the catch-up
  /// policy's latest), the start of grace and the expiry both fire late, in that order; the
  /// trial ends when its expiry is taken, as a late expiry always does.
  @Test(arguments: StoreKind.allCases)
  func downtimeSpanningTheEndAndTheGrace_FiresBothLate_InOrder(store kind: StoreKind) throws {
    let store = try Store(kind)
    let first = try Run(store.repository, at: epoch, ids: [0x65])
    let trial = try first.engine.perform(try .start(subject: "acme-65", plan: "pro")).trial
    first.scheduler.advance(by: day)
    first.stop()
    try store.reopen()

    let second = try Run(store.repository, at: Self.at(20))
    #expect(second.report.caughtUp == 4)
    #expect(second.sink.ids.map(\.kind).suffix(2) == [.graceStarted, .expiry])
    #expect(
      second.sink.delivered.map(\.entry.outcome) == [
        .skipped(.supersededByExpiry), .skipped(.supersededByExpiry), .fired, .fired,
      ])
    #expect(second.sink.delivered.suffix(2).map(\.entry.lateness) == [.days(10), .days(5)])
    let expired = try #require(try second.trial(trial.id))
    #expect(expired.state == .expired && expired.endedAt == Self.at(20))
    #expect(second.engine.counts[.expired] == 1 && second.engine.counts[.grace, default: 0] == 0)
    second.stop()
    try store.reopen()
    let third = try Run(store.repository, at: Self.at(21))
    #expect(third.report.caughtUp == 0 && third.sink.delivered.isEmpty)
    third.stop()
  }

  @Test func graceStartedEntry_HasItsMessageID_AndTheGracesEnd() throws {
    let trial = Trial(
      id: TrialID(0x66), subject: "acme-66",
      period: TrialPeriod(startDate: Self.at(0), endDate: Self.at(10)), state: .grace, grace: .days(5))
    let event = trial.event(at: trial.eventCount - 2)
    #expect(event.kind == .graceStarted)
    let entry = LedgerEntry(event: event, outcome: .fired, takenAt: Self.at(10), isLate: false)
    let fields = EventJournalEntry.fields(for: entry, attributes: trial.attributes, trial: trial)
    let values = Dictionary(fields.map { ($0.name, $0.value) }) { $1 }
    #expect(values["MESSAGE_ID"] == EventJournalEntry.MessageID.graceStarted.rawValue)
    #expect(
      values["EVENT_KIND"] == "grace-started" && values["EVENT_ID"] == "0000000000000066-r1-grace-started")
    #expect(values["TRIAL_END"] == RFC3339.format(Self.at(10)))
    #expect(values["TRIAL_GRACE_END"] == RFC3339.format(Self.at(15)))
    #expect(values["MESSAGE"]?.contains("in grace until") == true)
    var expired = trial
    expired.state = .expired
    expired.endedAt = Self.at(15)
    let expiry = LedgerEntry(
      event: trial.event(at: trial.eventCount - 1), outcome: .fired, takenAt: Self.at(15), isLate: false)
    let expiryFields = EventJournalEntry.fields(for: expiry, attributes: trial.attributes, trial: expired)
    let message = expiryFields.first { $0.name == "MESSAGE" }?.value
    #expect(message?.hasSuffix("expired at \(CivilTime(Self.at(15)).readable)") == true)
  }
}

@Suite struct GracePlanFileTests {
  @Test func graceKey_IsThePlansGrace_AndEmptyIsNone() throws {
    let fixture = ConfigurationFixture()
    fixture.write("plans/pro.conf", "[Plan]\nLength=7d\nGrace=3d 12h\n")
    fixture.write("plans/basic.conf", "[Plan]\nGrace=\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(loaded.configuration.plans["pro"]?.grace == .hours(84))
    #expect(loaded.configuration.plans["basic"]?.grace == .zero)
  }

  @Test func graceKey_OutOfBounds_IsAnErrorNamingFileAndLine() {
    let fixture = ConfigurationFixture()
    let long = fixture.write("plans/long.conf", "[Plan]\nLength=14d\nGrace=400d\n")
    let word = fixture.write("plans/word.conf", "[Plan]\nGrace=soon\n")
    let fine = fixture.write("plans/fine.conf", "[Plan]\nGrace=1.5ms\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description).sorted()
        == [
          "\(long):3: error: invalid value \"400d\" for Grace= in [Plan]: must be at most 365d",
          "\(word):2: error: invalid value \"soon\" for Grace= in [Plan]: not a time span (like 5d, 36h, 90s "
            + "or 1d 12h): expected a number at \"soon\"",
          "\(fine):2: error: invalid value \"1.5ms\" for Grace= in [Plan]: must be a whole number of milliseconds",
        ].sorted())
    #expect(loaded.configuration.plans.isEmpty)
    #expect(loaded.checkReport.exitCode == 1)
  }
}
