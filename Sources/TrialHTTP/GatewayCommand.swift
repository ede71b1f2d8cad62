import ArgumentParser
import FoundationEssentials
import Logging
import ProcessMemory
import Synchronization
import Systemd
import TrialConfiguration
import TrialControl
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// `trialwatch-http`: the command line. The one program runs it when started by that name (the
/// installed `/usr/libexec/trialwatch/trialwatch-http` is a link to trialwatchd).
public struct GatewayCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "trialwatch-http",
    abstract: "Serves trialwatchd's Varlink methods over HTTP, for applications and Prometheus.",
    discussion: """
      A gateway, not a second daemon: it holds no state, and answers every request by calling \
      trialwatchd on its control socket. POST /call/METHOD calls a method of \
      io.trialwatch.Trials (or org.varlink.service, io.systemd.Metrics) with the request's body \
      as its parameters and answers with the reply's parameters, as systemd's varlink-httpd \
      does; a method that streams (Watch) answers with a JSON text sequence \
      (application/json-seq, RFC 7464), one record per reply. An error reply is a status \
      (400 invalid parameters, 401 no or unknown token, 403 a read token calling a change, \
      404 not found, 409 a conflict such as SubjectAlreadyActive, 503 the daemon cannot be \
      reached) and a body {"error": NAME, "parameters": {...}}. GET /interface gives the \
      interface's definition, GET /metrics the daemon's metrics in Prometheus's text format, \
      GET /healthz (no token) says whether the daemon answers.

      Every request but /healthz needs a token of the token file (--tokens), as \
      Authorization: Bearer TOKEN: a read token calls only methods that change nothing, a \
      change token any. The file is read again when it changes; trialwatchctl http token adds \
      and removes tokens. Every change is journaled with its token's name.

      A dashboard for people, server-rendered HTML without scripts: / (trials by state, what \
      falls due within 24 hours and 7 days, how late events fired, held events, consumers and \
      webhooks), /plans, /cohorts (GetStats as a chart and a table, with a plan's variants; /cohorts.csv the same as \
      CSV), /trials/ID (its labels, state and events) and /search. /login takes a token and \
      keeps it in a cookie (HttpOnly, SameSite=Strict); a trial's page ends, extends, pauses, \
      resumes, cancels at the end or uncancels it with a change token, each form carrying a field derived from the token \
      that a page of another site cannot make.

      It runs as a systemd service started by its socket (trialwatch-http.socket, \
      127.0.0.1:8181 by default); without a socket passed it listens on --listen. TLS is a \
      reverse proxy's (docs/http.md has Caddy's and nginx's configuration).

      EXIT STATUS
        0   a clean stop (SIGTERM or SIGINT)
        64  a usage error
        69  libmicrohttpd or libcrypto cannot be used, or the address cannot be listened on
        78  the token file cannot be used
      """)

  @Option(
    name: .long,
    help: ArgumentHelp(
      "The daemon's control socket (default: $TRIALWATCH_SOCKET, else \(VarlinkInterfaces.defaultSocketPath)).",
      valueName: "PATH"))
  var socket: String?

  @Option(
    name: .long,
    help: ArgumentHelp(
      "Where to listen when systemd passed no socket: HOST:PORT, or a Unix socket's absolute path.",
      valueName: "ADDRESS"))
  var listen = "127.0.0.1:8181"

  @Option(name: .long, help: ArgumentHelp("The token file.", valueName: "PATH"))
  var tokens = HTTPTokenFile.defaultPath

  @Option(
    name: .customLong("connection-timeout"),
    help: ArgumentHelp(
      "Seconds a connection may stay silent (a header sent slowly too) before it is closed.",
      valueName: "SECONDS"))
  var connectionTimeout: UInt32 = HTTPServer.Limits().connectionTimeout

  @Option(
    name: .customLong("log-target"),
    help: ArgumentHelp(
      "Where logs go: auto (the journal when standard error is connected to it, else standard error), "
        + "journal or console.",
      valueName: "TARGET"))
  var logTarget = LogTarget.auto.rawValue

  public init() {}

  public mutating func validate() throws {
    guard LogTarget(rawValue: logTarget) != nil else {
      throw ValidationError("--log-target \(logTarget): give auto, journal or console")
    }
    do {
      _ = try ListenAddress(parsing: listen)
    } catch {
      throw ValidationError(error.description)
    }
    guard connectionTimeout > 0 else {
      throw ValidationError("--connection-timeout \(connectionTimeout): give at least 1 second")
    }
  }

  /// Parses the command line and serves until SIGTERM or SIGINT. Never returns.
  public static func main(version: String) -> Never {
    let command: GatewayCommand
    do {
      var parsed = try parseAsRoot()
      guard let ours = parsed as? GatewayCommand else {
        try parsed.run()
        Glibc.exit(0)
      }
      command = ours
    } catch {
      exit(withError: error)
    }
    HeapTrim.useOneArena()
    let signals = GatewaySignals.block()
    signal(SIGPIPE, SIG_IGN)
    _ = SystemdLogging.bootstrap(
      identifier: "trialwatch-http", target: LogTarget(rawValue: command.logTarget) ?? .auto)
    let logger = Logger(label: "trialwatch-http")
    let status = command.serve(version: version, logger: logger, signals: signals)
    Glibc._exit(status)
  }

  private func serve(version: String, logger: Logger, signals: sigset_t) -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    let socketPath =
      [socket, environment["TRIALWATCH_SOCKET"]].compactMap { $0 }.first { !$0.isEmpty }
      ?? VarlinkInterfaces.defaultSocketPath
    let crypto: Crypto
    do {
      crypto = try Crypto.shared()
    } catch {
      logger.critical("cannot start", metadata: ["problem": "\(error)"])
      return 69
    }
    let check = TokenCheck(path: tokens, crypto: crypto)
    if case .failure(let problem) = check.tokens() {
      logger.critical("the token file cannot be used", metadata: ["problem": "\(problem)"])
      return 78
    }
    let gateway = Gateway(link: DaemonLink(socketPath: socketPath), tokens: check, logger: logger)
    let listenFD: Int32
    let place: String
    do {
      if let passed = try ListenFDs.take().first {
        listenFD = passed
        place = "the socket systemd passed"
      } else {
        let address = try ListenAddress(parsing: listen)
        listenFD = try address.listen()
        place =
          ListenAddress.boundPort(of: listenFD).map { port in
            if case .tcp(let host, _) = address {
              return ListenAddress.tcp(host: host, port: port).description
            }
            return address.description
          } ?? address.description
      }
      var limits = HTTPServer.Limits()
      limits.connectionTimeout = connectionTimeout
      let openFiles = GatewayFileLimit.raise(for: limits.connections, logger: logger)
      // The memory a spell of requests used goes back 2 s after the last one ends.
      let release = QuietRelease { ProgramPages.releaseIdle() }
      release.start()
      let inFlight = Atomic<Int>(0)
      let server = try HTTPServer(limits: limits) { request in
        inFlight.add(1, ordering: .relaxed)
        release.activity()
        defer { if inFlight.subtract(1, ordering: .relaxed).newValue == 0 { release.quiet() } }
        return gateway.respond(request)
      }
      try server.start(listenFD: listenFD)
      logger.notice(
        "serving",
        metadata: [
          "listen": "\(place)", "socket": "\(socketPath)", "tokens": "\(tokens)",
          "libmicrohttpd": "\(server.libraryVersion)", "version": "\(version)",
          "open_files": "\(openFiles)", "connection_timeout": "\(connectionTimeout)",
        ])
      // What starting touched and will not touch again goes back before the wait for requests.
      ProgramPages.releaseIdle()
      let notifier = SystemdNotifier()
      _ = try? notifier.send(.ready, .status("serving on \(place)"))
      GatewaySignals.wait(signals)
      _ = try? notifier.send(.stopping)
      logger.notice("stopping")
      server.stop()
      return 0
    } catch {
      logger.critical("cannot serve", metadata: ["problem": "\(error)"])
      return 69
    }
  }
}

/// Room for the connections: each is a socket (and a thread), and systemd starts services at 1024
/// open files soft, leaving the raise to the hard limit to the service.
enum GatewayFileLimit {
  /// Raises the soft limit on open files to the hard one and returns the limit in force; warns
  /// when it is short of `connections` and the few the gateway holds besides.
  static func raise(for connections: UInt32, logger: Logger) -> rlim_t {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    if limit.rlim_cur < limit.rlim_max {
      var raised = limit
      raised.rlim_cur = limit.rlim_max
      if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
    }
    // The listening socket, the token file, the daemon's sockets and the log besides.
    if limit.rlim_cur < rlim_t(connections) + 64 {
      logger.warning(
        "the limit on open files is lower than the connections the gateway takes at once; raise LimitNOFILE=",
        metadata: ["limit": "\(limit.rlim_cur)", "connections": "\(connections)"])
    }
    return limit.rlim_cur
  }
}

/// SIGTERM and SIGINT, blocked before any thread starts (each inherits the mask) and taken by
/// the main thread with sigwait: the gateway's threads never see them.
enum GatewaySignals {
  static func block() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    return set
  }

  static func wait(_ set: sigset_t) {
    var set = set
    var signal: Int32 = 0
    sigwait(&set, &signal)
  }
}
