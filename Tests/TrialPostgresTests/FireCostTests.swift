import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// What a wake of a fleet node costs the database, in statements as the server counts them
/// (`pg_stat_statements`: `BEGIN` and `COMMIT` included); deliveries recorded without
/// reading their entries; and what a wake does with events of a trial another node changed.
@Suite struct FireCostTests {
  static let origin = FleetTests.origin
  /// The most statements the transaction of a wake that takes one event may run.
  static let budget = 5

  /// A database of its own, whose statements the server counts, and node `a` on it, owning
  /// every shard and refusing early fires by the database's clock, as a daemon does.
  struct Fixture {
    let server: PostgresServer
    let database: String
    let conninfo: String
    let node: FleetTests.Node
    let repository: PostgresTrialRepository

    init() throws {
      server = try PostgresServer.shared()
      database = try server.createDatabase()
      conninfo = server.conninfo(database: database)
      try PostgresSchema.prepare(on: try PGConnection(conninfo: conninfo), shards: FleetTests.shards)
      node = try FleetTests.Node("a", on: conninfo)
      repository = try PostgresTrialRepository(
        conninfo: conninfo, node: "a", shards: ShardMap(count: FleetTests.shards),
        ownership: node.repository.ownership)
    }

    /// Starts a trial on `a` that ends a minute after `origin`, with a reminder 30 s before.
    func start(_ subject: String, id: UInt64) throws -> Trial {
      try repository.startTrial(
        subject: subject, endDate: FireCostTests.origin.addingTimeInterval(60),
        reminders: try ReminderSchedule([.seconds(30)]), now: FireCostTests.origin,
        ids: SequenceTrialIDGenerator([id])
      ).trial
    }

    /// One wake of `a`, as the engine's commit lane runs it: the deliveries made since the
    /// last write (`marks`), then the events taken. Returns what it took and the statements
    /// its transaction ran, by text.
    func wake(_ due: [DueEvent], marks: [EventID] = [], at now: Date) throws -> (
      taken: [TakenEvent], statements: [String: Int]
    ) {
      let before = try server.statementCalls(database: database)
      let taken = try repository.write { txn in
        try TrialBook.markDelivered(in: txn, marks.map { (id: $0, at: now) })
        return try TrialBook.take(in: txn, due, now: now)
      }
      var ran = try server.statementCalls(database: database)
      for (query, calls) in before { ran[query, default: 0] -= calls }
      return (taken, ran.filter { $0.value != 0 })
    }
  }

  static func fire(_ event: TrialEvent, at taken: Date) -> DueEvent {
    DueEvent(event: event, takenAt: taken, disposition: .fire, isLate: false)
  }

  static func event(_ trial: Trial, _ kind: EventKind) throws -> TrialEvent {
    try #require(trial.events.first { $0.kind == kind })
  }

  /// The trial's reminder 30 s before its end, taken a second after it fell due, and its
  /// expiry, likewise.
  static func fired(_ trial: Trial) throws -> (reminder: DueEvent, expiry: DueEvent) {
    (
      fire(try event(trial, .reminder(before: .seconds(30))), at: origin + 31),
      fire(try event(trial, .expiry), at: origin + 61)
    )
  }

  /// A fixture with another node, `b`, on its database, and the fixture's trial of `subject`
  /// with its expiry taken as `fired` takes it.
  static func raced(_ subject: String, id: UInt64) throws -> (Fixture, FleetTests.Node, Trial, DueEvent) {
    let fixture = try Fixture()
    let b = try FleetTests.Node("b", on: fixture.conninfo)
    let trial = try fixture.start(subject, id: id)
    return (fixture, b, trial, try fired(trial).expiry)
  }

  @Test func wake_TakingOneReminder_RunsAtMostFiveStatements() throws {
    let fixture = try Fixture()
    let trial = try fixture.start("acme-1", id: 0x10)
    let reminder = try Self.fired(trial).reminder
    let (taken, statements) = try fixture.wake([reminder], at: reminder.takenAt)
    #expect(taken.map(\.logged.id) == [reminder.event.id])
    #expect(statements.values.reduce(0, +) <= Self.budget, "\(statements)")
    #expect(try fixture.repository.outbox().map(\.id) == [reminder.event.id])
    // Fired again (a retry after a lost commit): taken once only.
    #expect(try fixture.wake([reminder], at: reminder.takenAt).taken.isEmpty)
  }

  @Test func wake_TakingAnExpiryWithDeliveryMarksRiding_RunsAtMostFiveStatements() throws {
    let fixture = try Fixture()
    let trial = try fixture.start("acme-2", id: 0x20)
    let (reminder, expiry) = try Self.fired(trial)
    #expect(try fixture.wake([reminder], at: reminder.takenAt).taken.count == 1)
    let (taken, statements) = try fixture.wake([expiry], marks: [reminder.event.id], at: expiry.takenAt)
    #expect(taken.map(\.logged.id) == [expiry.event.id])
    #expect(taken.first?.trial.state == .expired)
    #expect(statements.values.reduce(0, +) <= Self.budget, "\(statements)")
    // The mark and the expiry both landed; the counts follow the trial.
    #expect(try fixture.repository.outbox().map(\.id) == [expiry.event.id])
    let delivered = try fixture.repository.read { try $0.ledgerEntry(reminder.event.id) }
    #expect(delivered?.deliveredAt == expiry.takenAt)
    #expect(try fixture.repository.read { try $0.trial(trial.id) }?.state == .expired)
    #expect(try fixture.repository.counts() == [.expired: 1])
    let log = try fixture.repository.read { try $0.eventLogBounds() }
    #expect(log.last == EventCursor(2) && log.count == 2)
    // A mark for an entry delivered already, or not in the ledger, changes nothing.
    let again = try fixture.wake([], marks: [reminder.event.id, expiry.event.id], at: Self.origin + 90)
    #expect(again.taken.isEmpty)
    #expect(
      try fixture.repository.read { try $0.ledgerEntry(reminder.event.id) }?.deliveredAt == expiry.takenAt)
    #expect(
      try fixture.repository.read { try $0.ledgerEntry(expiry.event.id) }?.deliveredAt == Self.origin + 90)
  }

  @Test func deliveries_RecordedInAWriteOfTheirOwn_RunOneStatement() throws {
    let fixture = try Fixture()
    let trial = try fixture.start("acme-5", id: 0x50)
    let reminder = try Self.fired(trial).reminder
    #expect(try fixture.wake([reminder], at: reminder.takenAt).taken.count == 1)
    let (taken, statements) = try fixture.wake([], marks: [reminder.event.id], at: Self.origin + 32)
    #expect(taken.isEmpty)
    #expect(statements.values.reduce(0, +) == 1, "\(statements)")
    #expect(try fixture.repository.outbox().isEmpty)
  }

  @Test func deliveries_RecordedUnread_AreSeenByTheirTransactionsReads() throws {
    let fixture = try Fixture()
    let trial = try fixture.start("acme-6", id: 0x60)
    let (reminder, expiry) = try Self.fired(trial)
    #expect(try fixture.wake([reminder], at: reminder.takenAt).taken.count == 1)
    #expect(try fixture.wake([expiry], at: expiry.takenAt).taken.count == 1)
    let (first, second) = (Self.origin + 70, Self.origin + 80)
    try fixture.repository.write { txn in
      try TrialBook.markDelivered(in: txn, [(id: reminder.event.id, at: first)])
      // Read one by one, by trial, then through the outbox (which sends the writes first).
      #expect(try txn.ledgerEntry(reminder.event.id)?.deliveredAt == first)
      try TrialBook.markDelivered(
        in: txn, [(id: reminder.event.id, at: second), (id: expiry.event.id, at: first)])
      try TrialBook.markDelivered(in: txn, [(id: expiry.event.id, at: second)])
      let entries = try txn.ledgerEntries(trial: trial.id)
      #expect(entries.map(\.deliveredAt) == [first, first])
      var outbox: [LedgerEntry] = []
      try txn.scanOutbox {
        outbox.append($0)
        return true
      }
      #expect(outbox.isEmpty)
      #expect(try txn.ledgerEntry(expiry.event.id)?.deliveredAt == first)
    }
    let stored = try fixture.repository.read { try $0.ledgerEntries(trial: trial.id) }
    #expect(stored.map(\.deliveredAt) == [first, first])
  }

  @Test func wake_WithEventsOfARevisionAnotherNodeReplaced_TakesOnlyTheCurrentOnes() throws {
    let fixture = try Fixture()
    let b = try FleetTests.Node("b", on: fixture.conninfo)
    let trial = try fixture.start("acme-3", id: 0x30)
    // b moves the end to 40 s: the new revision's reminder, due at 10 s, is skipped at once.
    let extended = try b.repository.extendTrial(trial.id, to: Self.origin + 40, now: Self.origin + 20)
    #expect(extended.trial.revision == trial.revision + 1 && extended.skipped.count == 1)
    // a has not heard of it: it fires the old revision's events.
    let old = [
      Self.fire(try Self.event(trial, .reminder(before: .seconds(30))), at: Self.origin + 61),
      Self.fire(try Self.event(trial, .expiry), at: Self.origin + 61),
    ]
    #expect(try fixture.wake(old, at: Self.origin + 61).taken.isEmpty)
    // The current revision's: its reminder is in the ledger already, its expiry is taken.
    let current = [
      Self.fire(try Self.event(extended.trial, .reminder(before: .seconds(30))), at: Self.origin + 41),
      Self.fire(try Self.event(extended.trial, .expiry), at: Self.origin + 41),
    ]
    let (taken, _) = try fixture.wake(current, at: Self.origin + 41)
    #expect(taken.map(\.logged.id) == [current[1].event.id])
    let ledger = try fixture.repository.read { try $0.ledgerEntries(trial: trial.id) }
    #expect(ledger.map(\.id) == extended.skipped.map(\.event.id) + [current[1].event.id])
    #expect(try fixture.repository.read { try $0.trial(trial.id) }?.state == .expired)
  }

  @Test func expiry_WhenAnotherNodeExtendsTheTrialBetweenTheWakesReadsAndItsCommit_IsLeftOut() throws {
    let (fixture, b, trial, expiry) = try Self.raced("acme-4", id: 0x40)
    var runs = 0
    let taken = try fixture.repository.write { txn in
      runs += 1
      let taken = try TrialBook.take(in: txn, [expiry], now: expiry.takenAt)
      // The wake has read the trial; its writes wait for its commit. b extends the trial now.
      if runs == 1 {
        _ = try b.repository.extendTrial(trial.id, to: Self.origin + 3_600, now: Self.origin + 50)
      }
      return taken
    }
    // The commit finds the trial changed and the transaction runs again on the extended trial,
    // whose revision the expiry is not of: nothing is taken, the extension stands.
    #expect(runs == 2)
    #expect(taken.isEmpty)
    let stored = try fixture.repository.read { try $0.trial(trial.id) }
    #expect(stored?.state == .active && stored?.revision == trial.revision + 1)
    #expect(try fixture.repository.read { try $0.ledgerEntries(trial: trial.id) }.isEmpty)
  }

  @Test func extension_WhenAnotherNodeExpiredTheTrialMeanwhile_FailsAsNotActive() throws {
    let (fixture, b, trial, expiry) = try Self.raced("acme-5", id: 0x50)
    var runs = 0
    let error = try #require(throws: TrialError.self) {
      try b.repository.write { txn in
        runs += 1
        _ = try TrialBook.extendTrial(in: txn, trial.id, to: Self.origin + 3_600, now: Self.origin + 50)
        // The extension has read the trial; the owner fires its expiry now.
        if runs == 1 { _ = try fixture.wake([expiry], at: Self.origin + 61) }
      }
    }
    #expect(runs == 2)
    #expect(error.code == .notActive(trial.id, .expired))
    let stored = try fixture.repository.read { try $0.trial(trial.id) }
    #expect(stored?.state == .expired && stored?.revision == trial.revision)
  }
}
