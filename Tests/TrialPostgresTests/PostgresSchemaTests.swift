import TestSupport
import Testing
import TrialCore

@testable import TrialPostgres

/// The shared store's schema: created once, upgraded in place, refused when newer.
@Suite struct PostgresSchemaTests {
  static func database() throws -> PGConnection {
    let server = try PostgresServer.shared()
    return try PGConnection(conninfo: server.conninfo(database: try server.createDatabase()))
  }

  @Test func schema_OnAnEmptyDatabase_IsCreatedOnceThenCurrent() throws {
    let connection = try Self.database()
    #expect(try PostgresSchema.prepare(on: connection, shards: 16) == .created)
    #expect(try PostgresSchema.prepare(on: connection, shards: 16) == .current)
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
    let shards = try connection.execute("SELECT count(*), min(shard), max(shard) FROM trialwatch.shard")
    #expect([shards.int(0, 0), shards.int(0, 1), shards.int(0, 2)] == [16, 0, 15])
    #expect(try PostgresSchema.shardCount(on: connection) == 16)
  }

  @Test func schema_OfAnOlderVersion_IsUpgradedInPlaceKeepingItsRows() throws {
    let connection = try Self.database()
    try connection.executeScript(
      "BEGIN;\n" + PostgresSchema.steps[0]
        + """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '1'), ('shards', '4');
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, 3);
        INSERT INTO trialwatch.node (name) VALUES ('old-node');
        COMMIT;
        """)
    #expect(try PostgresSchema.prepare(on: connection, shards: 4) == .upgraded(from: 1))
    let node = try connection.execute("SELECT name, version FROM trialwatch.node")
    #expect(node.string(0, 0) == "old-node")
    #expect(node.rows == 1 && node.string(0, 1) == nil)
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
  }

  @Test func schema_NewerThanThisDaemon_IsRefusedNamingBothVersions() throws {
    let connection = try Self.database()
    try PostgresSchema.prepare(on: connection, shards: 4)
    try connection.execute("UPDATE trialwatch.meta SET value = '99' WHERE key = 'schema_version'")
    let error = try #require(throws: PostgresStoreError.self) {
      try PostgresSchema.prepare(on: connection, shards: 4)
    }
    #expect(error == .schemaTooNew(found: 99, known: PostgresSchema.version))
    #expect(error.description.contains("version 99, newer than this trialwatchd knows"))
  }

  @Test func shardCount_DifferentFromTheSchemas_IsRefused() throws {
    let connection = try Self.database()
    try PostgresSchema.prepare(on: connection, shards: 4)
    let error = try #require(throws: PostgresStoreError.self) {
      try PostgresSchema.prepare(on: connection, shards: 8)
    }
    #expect(error == .shardCountMismatch(schema: 4, configured: 8))
    #expect(error.description.contains("set Shards=4"))
  }
}
