import CPostgres
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// One connection to a PostgreSQL server, over libpq. Not thread-safe: one user at a time.
///
/// Statements run synchronously, parameters and results in text format. The only file that
/// imports libpq: everything it returns is copied out of libpq's memory.
public final class PGConnection: @unchecked Sendable {
  // @unchecked: one user at a time; the stores keep their connections behind mutexes.
  private let connection: OpaquePointer

  /// Connects with `conninfo`, a URI (`postgresql://...`) or a keyword string
  /// (`host=/run/postgresql dbname=app`); libpq also reads the PG* environment variables and
  /// the password file.
  ///
  /// - Throws: `PGError.connection` with libpq's message when the connection fails.
  public init(conninfo: String) throws {
    guard let connection = PQconnectdb(conninfo) else {
      throw PGError.connection("out of memory")
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = Self.message(of: connection)
      PQfinish(connection)
      throw PGError.connection(message)
    }
    // Server notices and the message of a connection the server ends would go to standard
    // error, outside the daemon's log: the errors that matter reach the caller anyway.
    PQsetNoticeProcessor(connection, { _, _ in }, nil)
    self.connection = connection
  }

  deinit {
    PQfinish(connection)
  }

  /// Whether the connection is up, as far as libpq knows (it learns of a loss on use).
  public var isConnected: Bool {
    PQstatus(connection) == CONNECTION_OK
  }

  /// Closes the connection and connects again with the same parameters.
  ///
  /// - Throws: `PGError.connection` when the new connection fails.
  public func reset() throws {
    PQreset(connection)
    guard PQstatus(connection) == CONNECTION_OK else {
      throw PGError.connection(Self.message(of: connection))
    }
  }

  /// Runs one statement with `parameters` (`$1`, `$2`...; nil is SQL NULL), all in text
  /// format, and returns its rows.
  ///
  /// - Throws: `PGError.server` when the server refuses the statement, `PGError.connection`
  ///   when the connection is broken.
  @discardableResult
  public func execute(_ sql: String, _ parameters: [String?] = []) throws -> PGResult {
    let copies = parameters.map { $0.map { strdup($0) } ?? nil }
    defer { copies.forEach { free($0) } }
    let values = copies.map { UnsafePointer<CChar>($0) }
    let result = values.withUnsafeBufferPointer { values in
      PQexecParams(connection, sql, Int32(values.count), nil, values.baseAddress, nil, nil, 0)
    }
    return try take(result)
  }

  /// Runs one statement, then `COMMIT`, sent together (`pipeline`): the server carries out
  /// both without waiting for this process, so that a pause of the process between them
  /// (SIGSTOP, a frozen VM) never leaves the transaction holding its locks. Returns the
  /// statement's rows.
  ///
  /// - Throws: as `execute`, for the statement or the commit; after a failed statement the
  ///   transaction is left aborted, for the caller to roll back.
  @discardableResult
  public func executeThenCommit(_ sql: String, _ parameters: [String?] = []) throws -> PGResult {
    try pipeline([(sql, parameters), ("COMMIT", [])])[0]
  }

  /// Runs statements sent together in pipeline mode, one round trip for all, and returns
  /// their rows in order. In a transaction, a failed statement aborts it and the server
  /// skips the rest.
  ///
  /// - Throws: the first statement's error, as `execute` would.
  public func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws -> [PGResult] {
    guard PQenterPipelineMode(connection) == 1 else {
      throw PGError.connection(Self.message(of: connection))
    }
    defer { _ = PQexitPipelineMode(connection) }
    for statement in statements {
      let copies = statement.parameters.map { $0.map { strdup($0) } ?? nil }
      defer { copies.forEach { free($0) } }
      let values = copies.map { UnsafePointer<CChar>($0) }
      let sent = values.withUnsafeBufferPointer { values in
        PQsendQueryParams(
          connection, statement.sql, Int32(values.count), nil, values.baseAddress, nil, nil, 0)
      }
      guard sent == 1 else { throw PGError.connection(Self.message(of: connection)) }
    }
    guard PQpipelineSync(connection) == 1 else { throw PGError.connection(Self.message(of: connection)) }
    // Each statement's results end with a null; the sync point comes last.
    var results: [PGResult] = []
    var failure: (any Error)?
    for _ in statements {
      var rows: PGResult?
      while let result = PQgetResult(connection) {
        if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
          PQclear(result)
          continue
        }
        do {
          rows = try take(result)
        } catch {
          if failure == nil { failure = error }
        }
      }
      if let rows { results.append(rows) }
    }
    while let sync = PQgetResult(connection) { PQclear(sync) }
    if let failure { throw failure }
    guard results.count == statements.count else { throw PGError.connection(Self.message(of: connection)) }
    return results
  }

  /// Runs several statements separated by semicolons (a DDL script), in one round trip.
  ///
  /// - Throws: as `execute`, for the first statement that fails.
  public func executeScript(_ sql: String) throws {
    _ = try take(PQexec(connection, sql))
  }

  /// The connection's socket, to wait on for notifications; -1 when there is none.
  public var socket: Int32 {
    PQsocket(connection)
  }

  /// Reads what the server sent (without blocking) and returns the notifications received
  /// since the last call, oldest first.
  ///
  /// - Throws: `PGError.connection` when the connection is broken.
  public func notifications() throws -> [PGNotification] {
    guard PQconsumeInput(connection) == 1 else {
      throw PGError.connection(Self.message(of: connection))
    }
    var received: [PGNotification] = []
    while let notify = PQnotifies(connection) {
      received.append(
        PGNotification(
          channel: String(cString: notify.pointee.relname), payload: String(cString: notify.pointee.extra),
          pid: notify.pointee.be_pid))
      PQfreemem(notify)
    }
    return received
  }

  /// The server's version as a number: 150004 for 15.4.
  public var serverVersion: Int {
    Int(PQserverVersion(connection))
  }

  /// The process id of the server process serving this connection.
  public var backendPID: Int32 {
    PQbackendPID(connection)
  }

  /// `s` as a quoted SQL identifier (`"my table"`).
  public func quoteIdentifier(_ s: String) -> String {
    quote(s, with: "\"") { PQescapeIdentifier($0, $1, $2) }
  }

  /// `s` as a quoted SQL string literal (`'it''s'`).
  public func quoteLiteral(_ s: String) -> String {
    quote(s, with: "'") { PQescapeLiteral($0, $1, $2) }
  }

  /// `s` quoted by libpq's `escape`, or by doubling `mark` when libpq cannot (out of memory).
  private func quote(
    _ s: String, with mark: Character,
    _ escape: (OpaquePointer?, String, Int) -> UnsafeMutablePointer<CChar>?
  ) -> String {
    guard let quoted = escape(connection, s, s.utf8.count) else {
      return "\(mark)" + s.replacingAll(mark, with: "\(mark)\(mark)") + "\(mark)"
    }
    defer { PQfreemem(quoted) }
    return String(cString: quoted)
  }

  // MARK: Results

  /// Copies `result` out and frees it, or throws the error it carries.
  private func take(_ result: OpaquePointer?) throws -> PGResult {
    guard let result else {
      throw PGError.connection(Self.message(of: connection))
    }
    defer { PQclear(result) }
    switch PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
      return Self.copy(result)
    default:
      throw error(of: result)
    }
  }

  private func error(of result: OpaquePointer) -> PGError {
    func field(_ code: Int32) -> String? {
      PQresultErrorField(result, code).map { String(cString: $0) }
    }
    let sqlState = field(diagnosticSQLState) ?? ""
    let whole = String(String(cString: PQresultErrorMessage(result)).trimmingWhitespace())
    if sqlState.isEmpty && PQstatus(connection) != CONNECTION_OK {
      return .connection(whole.isEmpty ? Self.message(of: connection) : whole)
    }
    let message = field(diagnosticPrimary) ?? (whole.isEmpty ? Self.message(of: connection) : whole)
    return .server(sqlState: sqlState, message: message, detail: field(diagnosticDetail))
  }

  private static func copy(_ result: OpaquePointer) -> PGResult {
    let rows = Int(PQntuples(result))
    let columnCount = Int(PQnfields(result))
    let columns = (0..<columnCount).map { column in
      PQfname(result, Int32(column)).map { String(cString: $0) } ?? ""
    }
    var values: [String?] = []
    values.reserveCapacity(rows * columnCount)
    for row in 0..<Int32(rows) {
      for column in 0..<Int32(columnCount) {
        if PQgetisnull(result, row, column) == 1 {
          values.append(nil)
        } else {
          values.append(String(cString: PQgetvalue(result, row, column)))
        }
      }
    }
    let affected = PQcmdTuples(result).map { String(cString: $0) }.flatMap { Int($0) } ?? 0
    return PGResult(columns: columns, values: values, affectedRows: affected)
  }

  /// libpq's last error message on `connection`, without its trailing newline.
  private static func message(of connection: OpaquePointer) -> String {
    guard let text = PQerrorMessage(connection) else { return "unknown error" }
    let message = String(String(cString: text).trimmingWhitespace())
    return message.isEmpty ? "unknown error" : message
  }
}

// The PG_DIAG_* field codes of postgres_ext.h, character macros Swift does not import.
private let diagnosticSQLState = Int32(UInt8(ascii: "C"))
private let diagnosticPrimary = Int32(UInt8(ascii: "M"))
private let diagnosticDetail = Int32(UInt8(ascii: "D"))

extension String {
  fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
    var replaced = ""
    for character in self {
      if character == target { replaced += replacement } else { replaced.append(character) }
    }
    return replaced
  }
}
