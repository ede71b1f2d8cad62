import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// A session on a server that refuses writes (a standby, a primary turned read-only to fence it
/// in a failover) is left for a new one, which `target_session_attrs=read-write` sends to the
/// primary.
@Suite struct ReadOnlyServerTests {
  /// libpq's own error, without SQLSTATE, when the server goes away in the middle of a pipeline
  /// (a commit's round trip) before libpq marks the connection bad: a lost connection, and so a
  /// store fault, not a bug.
  @Test func errorWithoutSQLState_IsALostConnection() {
    let lost = PGError.server(
      sqlState: "", message: "server closed the connection unexpectedly", detail: nil)
    #expect(lost.isConnectionLoss && lost.needsNewSession && lost.storeFault == .databaseUnreachable)
    let refused = PGError.server(sqlState: "42P01", message: "relation does not exist", detail: nil)
    #expect(!refused.isConnectionLoss && refused.storeFault == nil)
  }

  @Test func write_RefusedAsReadOnly_IsAStoreFaultAndTheNextWriteConnectsAgain() throws {
    let conninfo = try FleetTests.database()
    let admin = try PGConnection(conninfo: conninfo)
    let database = try #require(try admin.execute("SELECT current_database()").string(0, 0))
    // Sessions that start from now on are read-only, as on a standby.
    try admin.execute(
      "ALTER DATABASE \(admin.quoteIdentifier(database)) SET default_transaction_read_only = on")
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "a", shards: ShardMap(count: FleetTests.shards), refusesEarlyFires: false)
    let ids = SequenceTrialIDGenerator([], fallbackStart: 0x7000)
    let end = FleetTests.origin.addingTimeInterval(3_600)
    var refused: (any Error)?
    do {
      _ = try repository.startTrial(
        subject: "s", endDate: end, reminders: .none, now: FleetTests.origin, ids: ids)
    } catch {
      refused = error
    }
    let error = try #require(refused as? PGError, "\(String(describing: refused))")
    #expect(error.sqlState == "25006" && !error.isConnectionLoss && error.needsNewSession)
    #expect(error.storeFault == .databaseReadOnly)
    // The server takes writes again: only a new session sees it (the old one stays read-only).
    try admin.execute("ALTER DATABASE \(admin.quoteIdentifier(database)) RESET default_transaction_read_only")
    let started = try repository.startTrial(
      subject: "s", endDate: end, reminders: .none, now: FleetTests.origin, ids: ids)
    #expect(try repository.read { try $0.activeTrialID(subject: "s") } == started.trial.id)
  }
}
