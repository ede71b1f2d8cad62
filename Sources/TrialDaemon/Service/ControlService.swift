import Dispatch
import FoundationEssentials
import Logging
import Systemd
import TrialConfiguration
import TrialControl
import TrialControlServer
import TrialCore
import TrialEngine

#if canImport(Glibc)
  import Glibc
#endif

/// The Varlink control socket as a part of the daemon: adopts the socket systemd passes
/// (socket activation), or binds `Socket=` itself, and answers through the engine.
public final class ControlService: DaemonService, @unchecked Sendable {
  // @unchecked: started, then stopped, on the main thread (see DaemonService); reload does nothing.
  public let name = "control socket"
  private var server: ControlServer?
  /// The report socket's server (`io.systemd.Metrics` only), when there is one.
  private var reportServer: ControlServer?
  private var handlers: TrialsHandlers?
  /// Made at start, after the daemon has chosen its log backend.
  private var logger = Logger(label: "trialwatchd.control")

  public init() {}

  public func start(daemon: Daemon, engine: Engine, queue: DispatchQueue, configuration: DaemonConfiguration)
    throws
  {
    logger = Logger(label: "trialwatchd.control")
    let store = daemon.store
    let handlers = TrialsHandlers(
      engine: engine, queue: queue, startedAt: engine.clock.now(), version: Daemon.version,
      storeBytes: { [weak store] in store?.fileSize() },
      fleetStatus: daemon.fleetStatus)
    let gid = Self.groupID(configuration.controlGroup)
    if gid == nil {
      logger.notice(
        "control group not found; only root and the daemon's user may change trials",
        metadata: ["group": "\(configuration.controlGroup)"])
    }
    Self.raiseFileLimit(for: configuration.maxConnections, logger: logger)
    var options = ControlServer.Options()
    options.maximumConnections = configuration.maxConnections
    options.maximumConnectionsPerUser = configuration.maxConnectionsPerUser
    options.reservedConnections = configuration.effectiveReservedConnections
    // A timeout of 68 years or more is as good as none, and stays within Dispatch's range.
    options.connection.idleTimeout = configuration.idleTimeout.flatMap {
      $0 < .seconds(Int64(Int32.max)) ? $0 : nil
    }
    options.connection.messageTimeout = configuration.messageTimeout
    options.controlGroup = gid
    options.version = Daemon.version

    let metrics = MetricsHandlers(
      handlers: handlers, engine: engine, queue: queue, space: { [weak store] in store?.space() },
      fleet: daemon.fleetServices)

    // Sockets systemd passes: the one named "metrics" (trialwatch-report.socket) serves the
    // metrics alone; the first other one is the control socket.
    let passed = try ListenFDs.takeNamed()
    let metricsFD = passed.first { $0.name == Self.metricsSocketName }?.fd
    let socketGID = Self.groupID(configuration.socketGroup)
    func bound(_ path: String) throws -> ControlServer.Listener {
      let directory = FilePaths.parent(path)
      if !directory.isEmpty {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      }
      return .bind(path: path, group: socketGID)
    }
    let listener: ControlServer.Listener
    if let fd = passed.first(where: { $0.name != Self.metricsSocketName })?.fd {
      listener = .adopt(fileDescriptor: fd)
    } else {
      if socketGID == nil {
        logger.notice(
          "socket group not found; only root and the daemon's user may connect",
          metadata: ["group": "\(configuration.socketGroup)"])
      }
      listener = try bound(configuration.socketPath)
    }
    let server = try ControlServer(
      listener: listener, routes: handlers.routes + metrics.routes, counters: handlers.counters,
      options: options, logger: logger)
    server.start()
    self.server = server
    self.handlers = handlers

    let reportListener: ControlServer.Listener? =
      if let metricsFD { .adopt(fileDescriptor: metricsFD) } else {
        try configuration.metricsSocketPath.map(bound)
      }
    if let reportListener {
      var reportOptions = options
      reportOptions.interfaces = VarlinkInterfaces.report
      let report = try ControlServer(
        listener: reportListener, routes: metrics.routes, counters: handlers.counters,
        options: reportOptions, logger: logger)
      report.start()
      reportServer = report
    }
  }

  /// `FileDescriptorName=` of trialwatch-report.socket.
  static let metricsSocketName = "metrics"

  public func reload(configuration: DaemonConfiguration) {
    // Limits and the socket are fixed while running; trial defaults come from the engine.
  }

  public func stop() {
    handlers?.finishWatchers()
    let done = DispatchSemaphore(value: 0)
    let servers = [server, reportServer].compactMap { $0 }
    for server in servers { server.stop { done.signal() } }
    for _ in servers { _ = done.wait(timeout: .now() + 2) }
  }

  /// Makes room for `MaxConnections=`: raises the soft limit on open files to the hard one
  /// (systemd starts services at 1024 soft and leaves raising it to the service), and warns
  /// when even the hard limit is short.
  static func raiseFileLimit(for connections: Int, logger: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    if limit.rlim_cur < limit.rlim_max {
      limit.rlim_cur = limit.rlim_max
      _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
      _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    // The store, the journal, the listener and a few for Dispatch besides the connections.
    if limit.rlim_cur < rlim_t(connections + 64) {
      logger.warning(
        "the limit on open files is lower than MaxConnections= needs; raise LimitNOFILE= or lower MaxConnections=",
        metadata: ["limit": "\(limit.rlim_cur)", "max_connections": "\(connections)"])
    }
  }

  /// A group name or numeric id, resolved to a gid; nil when there is no such group.
  static func groupID(_ group: String) -> UInt32? {
    if let number = UInt32(group) { return number }
    guard let entry = getgrnam(group) else { return nil }
    return entry.pointee.gr_gid
  }
}
