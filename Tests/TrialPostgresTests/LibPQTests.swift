import Foundation
import TestSupport
import Testing

@testable import TrialPostgres

#if canImport(Glibc)
  import Glibc
#endif

/// The libpq wrapper against a private server: one fresh database per test.
@Suite struct LibPQTests {
  /// A connection to a fresh database of the shared server.
  static func freshConnection() throws -> (PostgresServer, PGConnection) {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase()
    return (server, try PGConnection(conninfo: server.conninfo(database: database)))
  }

  /// Waits at most `milliseconds` for `socket` to be readable.
  static func waitReadable(_ socket: Int32, milliseconds: Int32) -> Bool {
    var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
    while true {
      let ready = poll(&poller, 1, milliseconds)
      if ready < 0 && errno == EINTR { continue }
      return ready > 0
    }
  }

  /// The error `body` throws, which must be a `PGError`.
  static func pgError(_ body: () throws -> Void) -> PGError? {
    do {
      try body()
    } catch let error as PGError {
      return error
    } catch {
      Issue.record("not a PGError: \(error)")
    }
    return nil
  }

  @Test func execute_WithParametersAndNulls_ReturnsRows() throws {
    let (_, connection) = try Self.freshConnection()
    #expect(connection.isConnected)
    #expect(connection.serverVersion >= 100_000)
    #expect(connection.backendPID > 0)
    try connection.executeScript(
      "CREATE TABLE trials (id bigint PRIMARY KEY, name text, active boolean); CREATE INDEX ON trials (name);"
    )
    let inserted = try connection.execute(
      "INSERT INTO trials VALUES ($1, $2, $3), ($4, $5, $6)", ["1", "first", "t", "2", nil, nil])
    #expect(inserted.affectedRows == 2)
    let result = try connection.execute("SELECT id, name, active FROM trials ORDER BY id")
    #expect(result.rows == 2)
    #expect(result.columns == ["id", "name", "active"])
    #expect(result.int64(0, 0) == 1)
    #expect(result.int(1, 0) == 2)
    #expect(result.string(0, 1) == "first")
    #expect(result[1, 1] == nil)
    #expect(result.bool(0, 2) == true)
    #expect(result.bool(1, 2) == nil)
    let updated = try connection.execute("UPDATE trials SET active = false WHERE id = $1", ["2"])
    #expect(updated.affectedRows == 1)
    #expect(try connection.execute("SELECT active FROM trials WHERE id = 2").bool(0, 0) == false)
    #expect(try connection.execute("CREATE TABLE other (id int)").affectedRows == 0)
  }

  @Test func arrayParameters_OfIntegersAndStrings_RoundTrip() throws {
    let (_, connection) = try Self.freshConnection()
    let integers: [Int64] = [1, -2, 9_000_000_000]
    let echoed = try connection.execute(
      "SELECT $1::bigint[], $2::int[]", [PGArray.literal(integers), PGArray.literal([3, 4])])
    #expect(echoed.string(0, 0).flatMap(PGArray.int64s) == integers)
    #expect(echoed.string(0, 1).flatMap(PGArray.int64s) == [3, 4])
    let strings: [String?] = ["a b", "c\"d", "back\\slash", nil, "", "{,}"]
    let unnested = try connection.execute(
      "SELECT value FROM unnest($1::text[]) WITH ORDINALITY AS t(value, n) ORDER BY n",
      [PGArray.literal(strings)])
    #expect((0..<unnested.rows).map { unnested[$0, 0] } == strings)
    let flags = try connection.execute(
      "SELECT $1::boolean[] = ARRAY[true, false]", [PGArray.literal([true, false])])
    #expect(flags.bool(0, 0) == true)
    #expect(try connection.execute("SELECT '{}'::bigint[]").string(0, 0).flatMap(PGArray.int64s) == [])
  }

  @Test func arrayLiteral_OfValues_IsPostgresText() {
    #expect(PGArray.literal([1, 2, 3] as [Int64]) == "{1,2,3}")
    #expect(PGArray.literal([] as [Int]) == "{}")
    #expect(PGArray.literal(["a b", "c\"d", nil]) == #"{"a b","c\"d",NULL}"#)
    #expect(PGArray.literal([true, false]) == "{t,f}")
    #expect(PGArray.int64s("{1,2}") == [1, 2])
    for malformed in ["", "{", "1,2", "{1,,2}", "{1,NULL}", "{a}", "{{1}}"] {
      #expect(PGArray.int64s(malformed) == nil, "\(malformed)")
    }
  }

  @Test func quoting_OfAwkwardNames_RoundTrips() throws {
    let (_, connection) = try Self.freshConnection()
    let table = connection.quoteIdentifier("odd \"table\"")
    try connection.execute("CREATE TABLE \(table) (value text)")
    try connection.execute("INSERT INTO \(table) VALUES (\(connection.quoteLiteral("it's a \\ test")))")
    #expect(try connection.execute("SELECT value FROM \(table)").string(0, 0) == "it's a \\ test")
  }

  @Test func execute_OnMissingTable_ThrowsUndefinedTable() throws {
    let (_, connection) = try Self.freshConnection()
    let error = Self.pgError { try connection.execute("SELECT * FROM missing") }
    #expect(error?.sqlState == "42P01")
    #expect(error?.isConnectionLoss == false)
    #expect(error?.description.contains("(SQLSTATE 42P01)") == true)
    // The connection stays usable.
    #expect(try connection.execute("SELECT 1").int(0, 0) == 1)
  }

  @Test func insert_OfDuplicateKey_ThrowsUniqueViolation() throws {
    let (_, connection) = try Self.freshConnection()
    try connection.executeScript("CREATE TABLE keys (id int PRIMARY KEY); INSERT INTO keys VALUES (1);")
    let error = Self.pgError { try connection.execute("INSERT INTO keys VALUES ($1)", ["1"]) }
    guard case .server(let sqlState, let message, let detail) = error else {
      Issue.record("expected a server error, got \(String(describing: error))")
      return
    }
    #expect(sqlState == "23505")
    #expect(message.contains("duplicate key"))
    #expect(detail?.contains("(id)=(1)") == true)
    let scriptError = Self.pgError {
      try connection.executeScript("INSERT INTO keys VALUES (2); INSERT INTO keys VALUES (1);")
    }
    #expect(scriptError?.sqlState == "23505")
  }

  @Test func pipeline_OfStatements_AnswersEachInOrder() throws {
    let (_, connection) = try Self.freshConnection()
    let results = try connection.pipeline([
      ("SELECT $1::int + 1", ["41"]), ("SELECT 'b'", []), ("SELECT generate_series(1, 3)", []),
    ])
    #expect(results.map(\.rows) == [1, 1, 3])
    #expect(results[0].int(0, 0) == 42 && results[1].string(0, 0) == "b")
    // The connection is back to one statement at a time.
    #expect(try connection.execute("SELECT 7").int(0, 0) == 7)
  }

  @Test func executeThenCommit_AfterAFailingStatement_CommitsNothing() throws {
    let (_, connection) = try Self.freshConnection()
    try connection.execute("CREATE TABLE t (k integer PRIMARY KEY)")
    try connection.execute("BEGIN")
    try connection.execute("INSERT INTO t VALUES (1)")
    #expect(throws: PGError.self) { try connection.executeThenCommit("INSERT INTO t VALUES (1)") }
    try connection.execute("ROLLBACK")
    #expect(try connection.execute("SELECT count(*) FROM t").int(0, 0) == 0)
    try connection.execute("BEGIN")
    try connection.execute("INSERT INTO t VALUES (2)")
    #expect(try connection.executeThenCommit("INSERT INTO t VALUES (3) RETURNING k").int(0, 0) == 3)
    #expect(try connection.execute("SELECT array_agg(k ORDER BY k)::text FROM t").string(0, 0) == "{2,3}")
  }

  @Test func connect_WithUnknownOption_ThrowsConnectionError() {
    let error = Self.pgError { _ = try PGConnection(conninfo: "nonsense=1") }
    guard case .connection(let message) = error else {
      Issue.record("expected a connection error, got \(String(describing: error))")
      return
    }
    #expect(message.contains("nonsense"))
    #expect(error?.isConnectionLoss == true)
    #expect(error?.description.hasPrefix("could not connect: ") == true)
  }

  @Test func connect_ToSocketDirectoryWithoutServer_ThrowsConnectionError() throws {
    let empty = try TemporaryDirectory("nopg")
    let error = Self.pgError {
      _ = try PGConnection(conninfo: "host=\(empty.path) port=5432 dbname=postgres user=nobody")
    }
    guard case .connection(let message) = error else {
      Issue.record("expected a connection error, got \(String(describing: error))")
      return
    }
    #expect(message.contains(empty.path))
  }

  @Test func connect_WithWrongPassword_FailsAuthentication() throws {
    let server = try PostgresServer.shared()
    let conninfo = server.conninfo(user: "pwuser")
    let error = Self.pgError { _ = try PGConnection(conninfo: conninfo + " password=wrong") }
    guard case .connection(let message) = error else {
      Issue.record("expected a connection error, got \(String(describing: error))")
      return
    }
    #expect(message.contains("password authentication failed"))
    let connection = try PGConnection(conninfo: conninfo + " password=secret")
    #expect(try connection.execute("SELECT current_user").string(0, 0) == "pwuser")
  }

  @Test func notifications_FromAnotherConnection_ArriveAfterPoll() throws {
    let (server, listener) = try Self.freshConnection()
    let database = try #require(try listener.execute("SELECT current_database()").string(0, 0))
    let sender = try PGConnection(conninfo: server.conninfo(database: database))
    try listener.execute("LISTEN trials")
    #expect(try listener.notifications().isEmpty)
    try sender.execute("SELECT pg_notify('trials', $1)", ["due 42"])
    var received: [PGNotification] = []
    let deadline = ContinuousClock.now.advanced(by: .seconds(10))
    while received.isEmpty && ContinuousClock.now < deadline {
      guard Self.waitReadable(listener.socket, milliseconds: 1_000) else { continue }
      received += try listener.notifications()
    }
    #expect(received == [PGNotification(channel: "trials", payload: "due 42", pid: sender.backendPID)])
  }

  @Test func restart_OfServer_LosesConnectionUntilReset() throws {
    // A server of its own: restarting the shared one would cut the other tests' connections.
    let server = try PostgresServer()
    try server.start()
    let connection = try PGConnection(conninfo: server.conninfo())
    #expect(try connection.execute("SELECT 1").int(0, 0) == 1)
    try server.restart()
    let error = Self.pgError { try connection.execute("SELECT 1") }
    #expect(error?.isConnectionLoss == true, "\(String(describing: error))")
    try connection.reset()
    #expect(connection.isConnected)
    #expect(try connection.execute("SELECT 2").int(0, 0) == 2)
    try server.stop()
    #expect(throws: PGError.self) { try connection.execute("SELECT 3") }
  }
}
