import CPostgres
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// libpq's functions, loaded at the first connection: a process that never connects (the
/// daemon with a store file, trialwatchctl) never maps libpq and the libraries it brings.
private let libraryTable: Result<TWLibPQ, PGError> = {
  var reason = [CChar](repeating: 0, count: 512)
  guard let table = tw_libpq_open(&reason, reason.count) else {
    let text = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return .failure(
      .connection("PostgreSQL's client library cannot be loaded (Debian package libpq5): \(text)"))
  }
  return .success(table.pointee)
}()

/// One connection to a PostgreSQL server, over libpq. Not thread-safe: one user at a time.
///
/// Statements run synchronously, parameters and results in text format. The only file that
/// imports libpq: everything it returns is copied out of libpq's memory.
public final class PGConnection: @unchecked Sendable {
  // @unchecked: one user at a time; the stores keep their connections behind mutexes.
  private let connection: OpaquePointer
  private let pq: TWLibPQ

  /// Connects with `conninfo`, a URI (`postgresql://...`) or a keyword string
  /// (`host=/run/postgresql dbname=app`); libpq also reads the PG* environment variables and
  /// the password file.
  ///
  /// - Throws: `PGError.connection` with libpq's message when the connection fails, or when
  ///   libpq cannot be loaded.
  public init(conninfo: String) throws {
    let pq = try libraryTable.get()
    self.pq = pq
    guard let connection = pq.PQconnectdb(conninfo) else {
      throw PGError.connection("out of memory")
    }
    guard pq.PQstatus(connection) == CONNECTION_OK else {
      let message = Self.message(of: connection, pq)
      pq.PQfinish(connection)
      throw PGError.connection(message)
    }
    // Server notices and the message of a connection the server ends would go to standard
    // error, outside the daemon's log: the errors that matter reach the caller anyway.
    _ = pq.PQsetNoticeProcessor(connection, { _, _ in }, nil)
    self.connection = connection
  }

  deinit {
    pq.PQfinish(connection)
  }

  /// Whether the connection is up, as far as libpq knows (it learns of a loss on use).
  public var isConnected: Bool {
    pq.PQstatus(connection) == CONNECTION_OK
  }

  /// Closes the connection and connects again with the same parameters.
  ///
  /// - Throws: `PGError.connection` when the new connection fails.
  public func reset() throws {
    pq.PQreset(connection)
    guard pq.PQstatus(connection) == CONNECTION_OK else {
      throw PGError.connection(Self.message(of: connection, pq))
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
      pq.PQexecParams(connection, sql, Int32(values.count), nil, values.baseAddress, nil, nil, 0)
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
    guard pq.PQenterPipelineMode(connection) == 1 else {
      throw PGError.connection(Self.message(of: connection, pq))
    }
    defer { _ = pq.PQexitPipelineMode(connection) }
    for statement in statements {
      let copies = statement.parameters.map { $0.map { strdup($0) } ?? nil }
      defer { copies.forEach { free($0) } }
      let values = copies.map { UnsafePointer<CChar>($0) }
      let sent = values.withUnsafeBufferPointer { values in
        pq.PQsendQueryParams(
          connection, statement.sql, Int32(values.count), nil, values.baseAddress, nil, nil, 0)
      }
      guard sent == 1 else { throw PGError.connection(Self.message(of: connection, pq)) }
    }
    guard pq.PQpipelineSync(connection) == 1 else {
      throw PGError.connection(Self.message(of: connection, pq))
    }
    // Each statement's results end with a null; the sync point comes last.
    var results: [PGResult] = []
    var failure: (any Error)?
    for _ in statements {
      var rows: PGResult?
      while let result = pq.PQgetResult(connection) {
        if pq.PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
          pq.PQclear(result)
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
    while let sync = pq.PQgetResult(connection) { pq.PQclear(sync) }
    if let failure { throw failure }
    guard results.count == statements.count else {
      throw PGError.connection(Self.message(of: connection, pq))
    }
    return results
  }

  /// Runs several statements separated by semicolons (a DDL script), in one round trip.
  ///
  /// - Throws: as `execute`, for the first statement that fails.
  public func executeScript(_ sql: String) throws {
    _ = try take(pq.PQexec(connection, sql))
  }

  /// The connection's socket, to wait on for notifications; -1 when there is none.
  public var socket: Int32 {
    pq.PQsocket(connection)
  }

  /// Reads what the server sent (without blocking) and returns the notifications received
  /// since the last call, oldest first.
  ///
  /// - Throws: `PGError.connection` when the connection is broken.
  public func notifications() throws -> [PGNotification] {
    guard pq.PQconsumeInput(connection) == 1 else {
      throw PGError.connection(Self.message(of: connection, pq))
    }
    var received: [PGNotification] = []
    while let notify = pq.PQnotifies(connection) {
      received.append(
        PGNotification(
          channel: String(cString: notify.pointee.relname), payload: String(cString: notify.pointee.extra),
          pid: notify.pointee.be_pid))
      pq.PQfreemem(notify)
    }
    return received
  }

  /// The server's version as a number: 150004 for 15.4.
  public var serverVersion: Int {
    Int(pq.PQserverVersion(connection))
  }

  /// The process id of the server process serving this connection.
  public var backendPID: Int32 {
    pq.PQbackendPID(connection)
  }

  /// `s` as a quoted SQL identifier (`"my table"`).
  public func quoteIdentifier(_ s: String) -> String {
    quote(s, with: "\"") { [pq] in pq.PQescapeIdentifier($0, $1, $2) }
  }

  /// `s` as a quoted SQL string literal (`'it''s'`).
  public func quoteLiteral(_ s: String) -> String {
    quote(s, with: "'") { [pq] in pq.PQescapeLiteral($0, $1, $2) }
  }

  /// `s` quoted by libpq's `escape`, or by doubling `mark` when libpq cannot (out of memory).
  private func quote(
    _ s: String, with mark: Character,
    _ escape: (OpaquePointer?, String, Int) -> UnsafeMutablePointer<CChar>?
  ) -> String {
    guard let quoted = escape(connection, s, s.utf8.count) else {
      return "\(mark)" + s.replacing(String(mark), with: "\(mark)\(mark)") + "\(mark)"
    }
    defer { pq.PQfreemem(quoted) }
    return String(cString: quoted)
  }

  // MARK: Results

  /// Copies `result` out and frees it, or throws the error it carries.
  private func take(_ result: OpaquePointer?) throws -> PGResult {
    guard let result else {
      throw PGError.connection(Self.message(of: connection, pq))
    }
    defer { pq.PQclear(result) }
    switch pq.PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
      return Self.copy(result, pq)
    default:
      throw error(of: result)
    }
  }

  private func error(of result: OpaquePointer) -> PGError {
    func field(_ code: Int32) -> String? {
      pq.PQresultErrorField(result, code).map { String(cString: $0) }
    }
    let sqlState = field(diagnosticSQLState) ?? ""
    let whole = String(
      (pq.PQresultErrorMessage(result).map { String(cString: $0) } ?? "").trimmingWhitespace())
    if sqlState.isEmpty && pq.PQstatus(connection) != CONNECTION_OK {
      return .connection(whole.isEmpty ? Self.message(of: connection, pq) : whole)
    }
    let message = field(diagnosticPrimary) ?? (whole.isEmpty ? Self.message(of: connection, pq) : whole)
    return .server(sqlState: sqlState, message: message, detail: field(diagnosticDetail))
  }

  private static func copy(_ result: OpaquePointer, _ pq: TWLibPQ) -> PGResult {
    let rows = Int(pq.PQntuples(result))
    let columnCount = Int(pq.PQnfields(result))
    let columns = (0..<columnCount).map { column in
      pq.PQfname(result, Int32(column)).map { String(cString: $0) } ?? ""
    }
    var values: [String?] = []
    values.reserveCapacity(rows * columnCount)
    for row in 0..<Int32(rows) {
      for column in 0..<Int32(columnCount) {
        if pq.PQgetisnull(result, row, column) == 1 {
          values.append(nil)
        } else {
          values.append(pq.PQgetvalue(result, row, column).map { String(cString: $0) } ?? "")
        }
      }
    }
    let affected = pq.PQcmdTuples(result).map { String(cString: $0) }.flatMap { Int($0) } ?? 0
    return PGResult(columns: columns, values: values, affectedRows: affected)
  }

  /// libpq's last error message on `connection`, without its trailing newline.
  private static func message(of connection: OpaquePointer, _ pq: TWLibPQ) -> String {
    guard let text = pq.PQerrorMessage(connection) else { return "unknown error" }
    let message = String(String(cString: text).trimmingWhitespace())
    return message.isEmpty ? "unknown error" : message
  }
}

// The PG_DIAG_* field codes of postgres_ext.h, character macros Swift does not import.
private let diagnosticSQLState = Int32(UInt8(ascii: "C"))
private let diagnosticPrimary = Int32(UInt8(ascii: "M"))
private let diagnosticDetail = Int32(UInt8(ascii: "D"))
