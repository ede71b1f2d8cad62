import Foundation
import TestSupport
import Testing
import TrialCore
import TrialDaemonTesting
import TrialEngine
import TrialPostgres
import TrialPostgresTesting
import TrialStore

/// The engine over the real stores, in virtual time: a trial's extension count survives a
/// restart of the daemon (a new engine on the store reopened), and the limits of its plan,
/// loaded again at the start, still count it.
@Suite struct ExtensionEngineTests {
  static let day: TimeInterval = 86_400
  static let unraid = TrialPlan(
    name: "unraid", length: .days(15), reminders: .none, maxExtensions: 2, maxLength: .days(60))

  /// Opens the store of `kind` again and again, as a restarted daemon does: the same directory,
  /// or a new connection to the same database.
  final class Store {
    let kind: StoreKind
    let scratch: TemporaryDirectory
    var postgres: PostgresTestStore?

    init(_ kind: StoreKind) throws {
      self.kind = kind
      scratch = try TemporaryDirectory("extension-engine")
    }

    func open() throws -> any TrialRepository {
      switch kind {
      case .memory, .lmdb: return try LMDBTrialRepository(directory: scratch.appending("store"))
      case .postgres:
        guard let postgres else {
          let made = try PostgresTestStore()
          postgres = made
          return made.repository
        }
        return try PostgresTrialRepository(
          conninfo: postgres.conninfo, node: postgres.repository.node, shards: postgres.repository.shards,
          ownership: postgres.repository.ownership, refusesEarlyFires: false)
      }
    }
  }

  private func started(_ store: Store, ids: [UInt64], at start: Date) throws -> EngineParts {
    let parts = try EngineParts(repository: store.open(), ids: ids, start: start)
    parts.queue.sync { parts.engine.reload(EngineSettings(plans: ["unraid": Self.unraid])) }
    return parts
  }

  @Test(arguments: [StoreKind.lmdb, .postgres])
  func count_SurvivesARestart_AndStillLimits(store kind: StoreKind) throws {
    let store = try Store(kind)
    let start = ControlFixture.start
    var parts = try started(store, ids: [0x90], at: start)
    let trial = try parts.queue.sync { try parts.engine.perform(.start(subject: "acme-90", plan: "unraid")) }
      .trial
    for _ in 0..<2 {
      let extended = try parts.queue.sync { try parts.engine.perform(.extend(trial.id, .by(.days(10)))) }
        .trial
      #expect(extended.extensions >= 1)
    }
    parts.close()

    parts = try started(store, ids: [], at: start.addingTimeInterval(2 * Self.day))
    let read = try #require(try parts.repository.trial(trial.id))
    #expect(read.extensions == 2 && read.revision == 3)
    #expect(read.period.endDate == start.addingTimeInterval(35 * Self.day))
    let refused = #expect(throws: TrialError.self) {
      try parts.queue.sync { try parts.engine.perform(.extend(trial.id, .by(.days(1)))) }
    }
    guard case .extensionRefused(let refusal)? = refused?.code else {
      Issue.record("not refused by its limit: \(String(describing: refused))")
      return
    }
    #expect(refusal.limit == .maxExtensions && refusal.extensions == 2)
    #expect(try parts.repository.trial(trial.id) == read)
    // The expiry of the second extension's revision is what the restarted engine plans.
    parts.advance(by: 33 * Self.day)
    #expect(parts.fireDue().map(\.id.description) == ["0000000000000090-r3-expiry"])
    parts.close()
  }
}
