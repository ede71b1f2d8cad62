import TestSupport
import TrialCore
import TrialPostgres

/// A shared store for tests: a fresh database on the test process's private PostgreSQL
/// (`PostgresServer.shared()`), its schema, and one node that owns every shard.
public struct PostgresTestStore {
  public let conninfo: String
  public let repository: PostgresTrialRepository
  public let membership: FleetMembership

  /// `virtualTime`: the engine runs in virtual time, so fires are not checked against the
  /// database's clock.
  public init(shards: Int = 8, node: String = "test-node", virtualTime: Bool = true) throws {
    let server = try PostgresServer.shared()
    conninfo = server.conninfo(database: try server.createDatabase())
    try Self.prepare(conninfo: conninfo, shards: shards)
    let map = ShardMap(count: shards)
    let ownership = ShardOwnership()
    // No rounds run after the first: a lease long enough for any test.
    var settings = FleetMembership.Settings()
    settings.lease = .seconds(3_600)
    membership = FleetMembership(
      conninfo: conninfo, name: node, version: "test", shards: map, ownership: ownership, settings: settings)
    // The only node: its first round claims every shard.
    try membership.join()
    repository = try PostgresTrialRepository(
      conninfo: conninfo, node: node, shards: map, ownership: ownership, refusesEarlyFires: !virtualTime)
  }

  /// Creates the schema in the database of `conninfo`.
  @discardableResult
  public static func prepare(conninfo: String, shards: Int) throws -> PostgresSchema.Outcome {
    try PostgresSchema.prepare(on: try PGConnection(conninfo: conninfo), shards: shards)
  }
}
