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

/// Cancel at the end in the engine, in virtual time, on every store and across restarts of the
/// engine: reminders of a marked trial skipped with the reason cancel-at-end (fired with
/// RemindAfterCancel=yes), a mark taken back before a reminder, the expiry fired once with
/// outcome cancelled, the trial cancelled at its end, counted so in its cohort.
@Suite struct CancelEngineTests {
  static let day: TimeInterval = 86_400
  static let start = Date(timeIntervalSince1970: 1_795_000_000)
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let plans = [
    "pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders),
    "loud": TrialPlan(name: "loud", length: .days(10), reminders: reminders, remindAfterCancel: true),
  ]

  /// A store the engine is restarted on: opened again as a restarted daemon opens it.
  final class Store {
    let kind: StoreKind
    let directory: TemporaryDirectory
    let postgres: PostgresTestStore?

    init(_ kind: StoreKind) throws {
      self.kind = kind
      directory = try TemporaryDirectory("cancel-engine")
      postgres = kind == .postgres ? try PostgresTestStore() : nil
    }

    private var memory = InMemoryTrialRepository()

    func open() throws -> any TrialRepository {
      switch kind {
      case .memory: return memory
      case .lmdb: return try LMDBTrialRepository(directory: directory.appending("store"))
      case .postgres:
        let shared = try #require(postgres)
        return try PostgresTrialRepository(
          conninfo: shared.conninfo, node: shared.repository.node, shards: shared.repository.shards,
          ownership: shared.repository.ownership, refusesEarlyFires: false)
      }
    }

    /// An engine on the store at `days` after the start, with the plans.
    func engine(at days: Double, ids: [UInt64] = []) throws -> EngineParts {
      let parts = try EngineParts(repository: try open(), ids: ids, start: CancelEngineTests.at(days))
      parts.queue.sync { parts.engine.reload(EngineSettings(plans: CancelEngineTests.plans)) }
      return parts
    }
  }

  static func at(_ days: Double) -> Date { start.addingTimeInterval(days * day) }

  private func perform(_ parts: EngineParts, _ command: TrialCommand) throws -> Trial {
    try parts.queue.sync { try parts.engine.perform(command) }.trial
  }

  /// Advances to `days` after the start, an hour at a time; the events delivered meanwhile.
  private func run(_ parts: EngineParts, to days: Double) -> [EventObject] {
    var delivered = parts.fireDue()
    while parts.now < Self.at(days) {
      parts.advance(by: min(3_600, Self.at(days).timeIntervalSince(parts.now)))
      delivered += parts.fireDue()
    }
    return delivered
  }

  private func describe(_ events: [EventObject]) -> [String] {
    events.map {
      "\($0.kind.rawValue) \($0.state.rawValue) \($0.reason ?? "-") \($0.named["outcome"] ?? "-")"
    }
  }

  @Test(arguments: StoreKind.allCases)
  func markedTrial_SkipsItsRemindersAndIsCancelledAtItsEnd_AcrossRestarts(kind: StoreKind) throws {
    let store = try Store(kind)
    var parts = try store.engine(at: 0, ids: [0xC0])
    let trial = try perform(parts, try .start(subject: "acme-c0", plan: "pro"))
    #expect(run(parts, to: 1).isEmpty)
    let marked = try perform(parts, try .cancel(.subject("acme-c0"), atEnd: true))
    #expect(marked.cancelsAt == Self.at(10) && marked.cancelMark?.askedAt == Self.at(1))
    // GetPlan and Simulate show what will come: reminders to be skipped, the expiry cancelling.
    let plan = try parts.queue.sync {
      let (stored, ledger) = try parts.engine.queries.trialWithLedger(id: trial.id)
      return EventObject.plan(of: stored, ledger: ledger)
    }
    #expect(
      describe(plan) == [
        "reminder pending cancel-at-end -", "reminder pending cancel-at-end -", "expiry pending - cancelled",
      ])
    let simulated = try parts.queue.sync {
      try parts.engine.queries.simulateWithTrials(
        now: Self.at(1), through: Self.at(11), policy: parts.engine.planner.policy)
    }
    #expect(simulated.due.map(\.disposition) == [.skip(.cancelAtEnd), .skip(.cancelAtEnd), .fire])
    #expect(simulated.trials[trial.id].map { $0.attributes(of: trial.events[2]).outcome } == "cancelled")

    #expect(describe(run(parts, to: 8)) == ["reminder skipped cancel-at-end -"])
    parts.close()

    // Restarted between the reminders: the second is skipped, the expiry fires once.
    parts = try store.engine(at: 8)
    #expect(
      describe(run(parts, to: 11)) == ["reminder skipped cancel-at-end -", "expiry fired - cancelled"])
    let ended = try #require(try parts.storedTrials().first)
    #expect(
      ended.state == .cancelled && ended.endedAt == Self.at(10) && ended.attributes.outcome == "cancelled")
    #expect(
      parts.queue.sync {
        parts.engine.counts[.cancelled] == 1 && parts.engine.counts[.expired, default: 0] == 0
      })
    let cohorts = try parts.repository.read { try $0.cohorts(from: Int32.min, through: Int32.max) }
    #expect(cohorts.map(\.counts.cancelled) == [1] && cohorts.map(\.counts.expired) == [0])
    parts.close()

    parts = try store.engine(at: 12)
    defer { parts.close() }
    #expect(run(parts, to: 20).isEmpty)
    let log = try parts.repository.loggedEvents(after: .origin, limit: 10)
    #expect(log.map(\.entry.outcome) == [.skipped(.cancelAtEnd), .skipped(.cancelAtEnd), .fired])
    #expect(try parts.storedTrials().first?.state == .cancelled)
  }

  @Test(arguments: StoreKind.allCases)
  func remindAfterCancel_FiresReminders_AndUncancelRestoresThem(kind: StoreKind) throws {
    let store = try Store(kind)
    let parts = try store.engine(at: 0, ids: [0xC1, 0xC2])
    defer { parts.close() }
    _ = try perform(parts, try .start(subject: "loud", plan: "loud"))
    _ = try perform(parts, try .start(subject: "quiet", plan: "pro"))
    _ = try perform(parts, try .cancel(.subject("loud"), atEnd: true))
    _ = try perform(parts, try .cancel(.subject("quiet"), atEnd: true))
    // The plan's value is taken at the cancel: a reload that changes it changes no mark.
    parts.queue.sync { parts.engine.reload(EngineSettings(plans: [:])) }
    let early = run(parts, to: 8)
    #expect(
      Set(early.map { "\($0.subject ?? "?") \($0.state.rawValue)" }) == ["loud fired", "quiet skipped"])
    let unmarked = try perform(parts, try .uncancel(.subject("quiet")))
    #expect(unmarked.cancelsAt == nil)
    let refused = #expect(throws: TrialError.self) { try perform(parts, try .uncancel(.subject("quiet"))) }
    #expect(refused?.code == .notCancelling(unmarked.id))
    let late = run(parts, to: 11)
    #expect(
      late.map {
        "\($0.subject ?? "?") \($0.kind.rawValue) \($0.state.rawValue) \($0.named["outcome"] ?? "-")"
      }
      .sorted() == [
        "loud expiry fired cancelled", "loud reminder fired -", "quiet expiry fired -",
        "quiet reminder fired -",
      ])
    let states = try parts.storedTrials().map { "\($0.subject) \($0.state.rawValue)" }
    #expect(states == ["loud cancelled", "quiet expired"])
  }
}
