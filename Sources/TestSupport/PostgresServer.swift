import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A private PostgreSQL cluster for tests: `initdb` in a directory of its own, the server
/// listening on a Unix socket only (in that directory, on a random port), run as `nobody`
/// when the tests run as root. Driven through the server's own binaries (`pg_ctl`, `psql`):
/// this module does not link libpq.
///
/// Authentication: role `pwuser` (password `secret`) by password, every other role trusted;
/// the superuser is `nobody`. The server counts the statements each database runs
/// (`pg_stat_statements`, when the server ships it: `statementCalls(database:)`).
public final class PostgresServer: @unchecked Sendable {
  /// Where the cluster lives: `data/`, `socket/` and `server.log`.
  public let directory: String
  /// The directory of the server's socket (libpq's `host`).
  public var socketDirectory: String { directory + "/socket" }
  /// The port, which names the socket.
  public private(set) var port: Int
  private let binaries: String
  private let owned: TemporaryDirectory?
  private var running = false
  private let lock = NSLock()
  private var databases = 0

  private var dataDirectory: String { directory + "/data" }
  private var logFile: String { directory + "/server.log" }
  /// The script pg_ctl starts the server with (see `writeLauncher`).
  private var launcher: String { directory + "/postgres" }
  /// Who runs the server's binaries: nobody when this process is root, else this process.
  private var user: ChildProcess.User? { geteuid() == 0 ? .nobody : nil }

  /// A cluster in `directory` (which must exist); `start()` creates it.
  public init(directory: String) throws {
    self.directory = directory
    self.owned = nil
    self.binaries = try Self.findBinaries()
    self.port = Int.random(in: 20_000...60_000)
  }

  /// A cluster in a fresh temporary directory, removed when the server is let go.
  public convenience init() throws {
    try self.init(temporary: TemporaryDirectory("postgres"))
  }

  private init(temporary: TemporaryDirectory) throws {
    self.directory = temporary.path
    self.owned = temporary
    self.binaries = try Self.findBinaries()
    self.port = Int.random(in: 20_000...60_000)
  }

  deinit {
    if running { try? pgctl(["stop", "-m", "immediate", "-w"]) }
  }

  // MARK: The shared server

  nonisolated(unsafe) private static var sharedServer: Result<PostgresServer, any Error>?
  private static let sharedLock = NSLock()

  /// The one server of this test process, started on first use and stopped when the
  /// process exits.
  public static func shared() throws -> PostgresServer {
    sharedLock.lock()
    defer { sharedLock.unlock() }
    if let sharedServer { return try sharedServer.get() }
    let result = Result { () throws -> PostgresServer in
      let server = try PostgresServer()
      try server.start()
      return server
    }
    sharedServer = result
    if case .success = result {
      atexit {
        guard case .success(let server) = PostgresServer.sharedServer else { return }
        try? server.pgctl(["stop", "-m", "immediate", "-w"])
        try? FileManager.default.removeItem(atPath: server.directory)
      }
    }
    return try result.get()
  }

  // MARK: Life

  /// Creates the cluster if it is not there yet, and starts the server.
  public func start() throws {
    if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") { try initialize() }
    var attempts = 0
    while true {
      do {
        try pgctl(["start", "-w", "-t", "60", "-l", logFile, "-p", launcher, "-o", serverOptions])
        break
      } catch {
        attempts += 1
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        guard attempts < 5, log.contains("already in use") || log.contains("lock file") else {
          throw TestSupportError("\(error)\n\(log.suffix(2000))")
        }
        port = Int.random(in: 20_000...60_000)
      }
    }
    running = true
    if !createdRoles {
      _ = try psql("CREATE ROLE pwuser LOGIN PASSWORD 'secret'", database: "postgres")
      if countsStatements {
        _ = try psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", database: "postgres")
      }
      createdRoles = true
    }
  }

  private var createdRoles = false

  /// Stops the server (fast shutdown: sessions are ended).
  public func stop() throws {
    try pgctl(["stop", "-m", "fast", "-w", "-t", "60"])
    running = false
  }

  /// Restarts the server (fast shutdown): every open connection is lost.
  public func restart() throws {
    try pgctl(["restart", "-m", "fast", "-w", "-t", "60", "-l", logFile, "-p", launcher, "-o", serverOptions])
    running = true
  }

  /// A libpq keyword string for `database` as `user`.
  public func conninfo(database: String = "postgres", user: String = "nobody") -> String {
    "host=\(socketDirectory) port=\(port) dbname=\(database) user=\(user)"
  }

  /// A new, empty database with a name no other has; returns its name.
  public func createDatabase() throws -> String {
    lock.lock()
    databases += 1
    let name = "test_\(getpid())_\(databases)"
    lock.unlock()
    _ = try psql("CREATE DATABASE \(name)", database: "postgres")
    return name
  }

  /// Runs `sql` with psql as the superuser; returns its output, unaligned, tuples only.
  @discardableResult
  public func psql(_ sql: String, database: String = "postgres") throws -> String {
    let arguments = [
      "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-p", String(port), "-U",
      "nobody",
      "-d", database, "-c", sql,
    ]
    let environment = ChildProcess.environment(removing: ["PGPASSWORD", "PGSERVICE", "PGOPTIONS"])
    let completion = try ChildProcess.run(.path(binaries + "/psql"), arguments, environment: environment)
    guard completion.status == .exited(0) else {
      throw TestSupportError("psql \(sql): \(completion.status): \(completion.errors)")
    }
    return completion.output
  }

  // MARK: Counting statements

  /// Whether the server counts statements: it ships `pg_stat_statements`, which it loads.
  public var countsStatements: Bool {
    FileManager.default.fileExists(atPath: binaries + "/../lib/pg_stat_statements.so")
  }

  /// The statements `database` has run, by their normalized text, with how many times each
  /// ran (`BEGIN` and `COMMIT` included; statements run inside functions and triggers not).
  /// Read from the `postgres` database, so that reading them adds none to `database`.
  /// - Throws: when the server does not count statements (`countsStatements`).
  public func statementCalls(database: String) throws -> [String: Int] {
    guard countsStatements else { throw TestSupportError("this PostgreSQL has no pg_stat_statements") }
    let output = try psql(
      """
      SELECT calls, replace(replace(query, E'\\n', ' '), E'\\t', ' ') FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '\(database)')
      """, database: "postgres")
    var calls: [String: Int] = [:]
    for line in output.split(separator: "\n") {
      guard let bar = line.firstIndex(of: "|"), let count = Int(line[..<bar]) else { continue }
      calls[String(line[line.index(after: bar)...]), default: 0] += count
    }
    return calls
  }

  // MARK: Parts

  private var serverOptions: String {
    "-c listen_addresses='' -c unix_socket_directories='\(socketDirectory)' -p \(port) -c fsync=off"
      + " -c synchronous_commit=off -c full_page_writes=off"
      + (countsStatements ? " -c shared_preload_libraries=pg_stat_statements" : "")
  }

  /// initdb as the server's user, and pg_hba.conf: pwuser by password, everyone else trusted.
  private func initialize() throws {
    for (folder, mode) in [(dataDirectory, mode_t(0o700)), (socketDirectory, mode_t(0o755))] {
      guard mkdir(folder, mode) == 0 || errno == EEXIST else {
        throw TestSupportError.systemCall("mkdir", folder)
      }
      try own(folder)
      guard chmod(folder, mode) == 0 else { throw TestSupportError.systemCall("chmod", folder) }
    }
    // The server's user writes the log.
    guard FileManager.default.createFile(atPath: logFile, contents: nil) else {
      throw TestSupportError("cannot create \(logFile)")
    }
    try own(logFile)
    try writeLauncher()
    // The server's user must reach the folders inside.
    var status = stat()
    if stat(directory, &status) == 0 && status.st_mode & 0o001 == 0 {
      chmod(directory, status.st_mode | 0o711)
    }
    try runAsServer(
      "initdb",
      ["-D", dataDirectory, "-U", "nobody", "-E", "UTF8", "--auth=trust", "--no-sync", "--no-instructions"])
    let hba = dataDirectory + "/pg_hba.conf"
    do {
      try "local all pwuser scram-sha-256\nlocal all all trust\n".write(
        toFile: hba, atomically: false, encoding: .utf8)
    } catch {
      throw TestSupportError("cannot write \(hba): \(error)")
    }
    try own(hba)
  }

  /// Writes the script pg_ctl starts the server with: it closes every descriptor but the
  /// standard three, then runs postgres. Foundation's Process learns that a child ended when
  /// a socket the child inherits is closed; a server left holding it would make pg_ctl seem
  /// to run forever.
  private func writeLauncher() throws {
    let script = """
      #!/bin/bash
      for fd in /proc/self/fd/*; do
        fd=${fd##*/}
        if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null; fi
      done
      exec \(binaries)/postgres "$@"

      """
    do {
      try script.write(toFile: launcher, atomically: false, encoding: .utf8)
    } catch {
      throw TestSupportError("cannot write \(launcher): \(error)")
    }
    guard chmod(launcher, 0o755) == 0 else { throw TestSupportError.systemCall("chmod", launcher) }
  }

  /// Gives `path` to nobody when this process is root.
  private func own(_ path: String) throws {
    guard geteuid() == 0 else { return }
    guard let nobody = getpwnam("nobody") else { throw TestSupportError("no user nobody") }
    guard chown(path, nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0 else {
      throw TestSupportError.systemCall("chown", path)
    }
  }

  private func pgctl(_ arguments: [String]) throws {
    try runAsServer("pg_ctl", ["-D", dataDirectory] + arguments)
  }

  /// Runs one of the server's binaries as the server's user. Its output goes to a file, not
  /// a pipe: the server pg_ctl starts would hold a pipe open after pg_ctl ends.
  private func runAsServer(_ tool: String, _ arguments: [String]) throws {
    let output = directory + "/\(tool).out"
    try? FileManager.default.removeItem(atPath: output)
    defer { try? FileManager.default.removeItem(atPath: output) }
    let child = try ChildProcess(
      .path(binaries + "/" + tool), arguments, as: user, output: .file(output), errors: .file(output))
    guard let status = child.wait(timeout: 120) else {
      child.kill()
      throw TestSupportError("\(child.commandLine) did not finish within 120 s; killed it")
    }
    guard status == .exited(0) else {
      let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
      throw TestSupportError("\(child.commandLine): \(status): \(text)")
    }
  }

  /// The bin folder of the newest PostgreSQL under /usr/lib/postgresql.
  private static func findBinaries() throws -> String {
    let root = "/usr/lib/postgresql"
    let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
      .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/pg_ctl") }
      .sorted { (Double($0) ?? 0) < (Double($1) ?? 0) }
    guard let newest = versions.last else {
      throw TestSupportError("PostgreSQL server binaries not found under \(root); run make deps")
    }
    return "\(root)/\(newest)/bin"
  }
}
