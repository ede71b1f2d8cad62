import Dispatch
import FoundationEssentials
import Logging
import ProcessMemory
import Synchronization
import Systemd
import TrialConfiguration
import TrialCore
import TrialEngine

#if canImport(Glibc)
  import Glibc
#endif

/// Where the daemon was told to look, on its command line.
public struct DaemonOptions: Hashable, Sendable {
  /// `--config`: the main configuration file; its drop-ins are in `<file>.d/`.
  public var configPath: String?
  /// `--state-dir`: overrides `StateDirectory=`.
  public var stateDirectory: String?
  /// `--socket`: overrides `Socket=`.
  public var socketPath: String?

  public init(configPath: String? = nil, stateDirectory: String? = nil, socketPath: String? = nil) {
    self.configPath = configPath
    self.stateDirectory = stateDirectory
    self.socketPath = socketPath
  }

  public var loader: ConfigurationLoader {
    var loader = ConfigurationLoader(
      mainFile: configPath ?? DaemonConfiguration.defaultPath, mainFileRequired: configPath != nil)
    loader.unicodeUnavailable = { SubjectFolding.unicodeUnavailable }
    return loader
  }

  /// Loads the configuration and applies the command-line overrides.
  public func load() -> LoadedConfiguration {
    var loaded = loader.load()
    if let stateDirectory { loaded.configuration.stateDirectory = stateDirectory }
    if let socketPath { loaded.configuration.socketPath = socketPath }
    return loaded
  }
}

/// A start-up failure: what went wrong, and the errno systemd is told.
public struct DaemonStartError: Error, CustomStringConvertible {
  public var description: String
  public var errno: Int32

  public init(_ description: String, errno: Int32) {
    self.description = description
    self.errno = errno
  }
}

/// trialwatchd's life: load the configuration and the store, catch up, `READY=1`, serve;
/// `SIGHUP` reloads the configuration, `SIGTERM`/`SIGINT` stop cleanly. A failed write or sync
/// of the store stops it too, with `StoreFailureEntry.exitStatus`.
///
/// Everything after start-up happens on `queue`, the one serial queue that owns the engine,
/// except taking signals and stopping, which the main thread does (see `stop(signal:)`).
public final class Daemon: EngineObserver, @unchecked Sendable {
  // @unchecked: after start-up, mutable state is touched only on `queue`; the main thread
  // reads what start-up set (services, engine) to stop.
  public static let version = "0.1.0"

  private let options: DaemonOptions
  private let stores: StoreBackends
  // Default QoS: a raised one makes libdispatch try setpriority(2) for every worker thread,
  // which the unit's system-call filter refuses (and libdispatch logs each refusal).
  private let queue = DispatchQueue(label: "trialwatch.engine")
  private let notifier = SystemdNotifier()
  private let logLevel = SharedLogLevel(.info)
  private var logger = Logger(label: "trialwatchd")
  private var configuration = DaemonConfiguration()
  private var engine: Engine?
  private var journalSink: JournalEventSink?
  private var destination = JournalDestination.standardError
  private var clockSteps: ClockStepWatcher?
  private var services: [any DaemonService] = []
  /// This daemon as a node of a fleet (`[Store] Backend=postgresql`).
  private var fleet: FleetNode?
  /// The store's services (its size for `GetStatus`), whichever backend; set at start.
  public private(set) var store: (any StoreServices)?
  /// What this node knows of its fleet, for `GetStatus` and `GetFleet`; nil on a single-host
  /// daemon. The fleet code sets it before `run()`; the control service reads it at its start.
  public var fleetStatus: (@Sendable () -> FleetStatus?)?
  /// This daemon's part of its fleet (the metrics); nil on a single host.
  public var fleetServices: (any FleetServices)? { fleet?.fleet }
  /// Set on the engine's queue when the store failed to write or sync; read by the stop, on
  /// the main thread.
  private let storeFailed = Atomic(false)

  public init(options: DaemonOptions, stores: StoreBackends) {
    self.options = options
    self.stores = stores
  }

  /// Something the daemon runs beside the engine (the control server), started after the
  /// engine is ready and stopped before it.
  public func add(_ service: any DaemonService) {
    services.append(service)
  }

  /// Starts the daemon and never returns: the process exits from the signal handlers, or
  /// with a non-zero status when start-up fails.
  public func run() -> Never {
    let queue = self.queue
    let signals = SignalWatcher(handlers: [
      SIGHUP: { [weak self] in
        queue.async { [weak self] in self?.reload() }
      },
      SIGTERM: { [weak self] in self?.stop(signal: "SIGTERM") },
      SIGINT: { [weak self] in self?.stop(signal: "SIGINT") },
    ])
    // Before any thread exists: every thread must block the signals the watcher reads, and
    // allocate from the one arena.
    signals.blockWatchedSignals()
    HeapTrim.useOneArena()
    do {
      try start()
    } catch {
      let (text, code) =
        (error as? DaemonStartError).map { ($0.description, $0.errno) } ?? ("\(error)", EIO)
      logger.critical("cannot start: \(text)")
      _ = try? notifier.send(.status("failed to start: \(text)"), .errno(code))
      exit(1)
    }
    signals.waitForever()
  }

  private func start() throws {
    let loaded = options.load()
    configuration = loaded.configuration
    logLevel.level = configuration.logLevel
    destination = SystemdLogging.bootstrap(
      identifier: "trialwatchd", target: configuration.logTarget, level: logLevel)
    logger = Logger(label: "trialwatchd")
    for diagnostic in loaded.warnings { logger.warning("\(diagnostic)") }
    if loaded.hasErrors {
      throw DaemonStartError(
        "invalid configuration: "
          + loaded.errors.map { "\($0)" }.joined(separator: "; "), errno: EINVAL)
    }

    let directory = configuration.stateDirectory
    do {
      try FileManager.default.createDirectory(
        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw DaemonStartError("cannot create state directory \(directory): \(error)", errno: EACCES)
    }
    let memoryLimit = CgroupMemory.current()
    _ = try? notifier.send(.status("loading store in \(directory)"), .extendTimeoutUsec(30_000_000))
    let opened: OpenedStore
    if configuration.storeBackend == .postgresql, let settings = configuration.postgreSQL {
      // Before joining, which claims shards: a fleet's store does not count its trials cheaply.
      try checkMemoryLimit(memoryLimit, store: nil)
      _ = try? notifier.send(.status("joining the fleet as \(settings.nodeName)"))
      do {
        let services = try stores.joinFleet(settings, Self.version)
        fleet = FleetNode(fleet: services, queue: queue, logger: Logger(label: "trialwatchd.fleet"))
        opened = OpenedStore(repository: services.repository, services: services)
      } catch {
        throw DaemonStartError("cannot join the fleet on PostgreSQL: \(error)", errno: ECONNREFUSED)
      }
    } else {
      do {
        opened = try stores.local(directory)
      } catch {
        throw DaemonStartError("cannot open the store: \(error)", errno: EIO)
      }
    }
    if fleet != nil && !configuration.webhooks.isEmpty {
      logger.warning(
        "webhook endpoints are configured, but a fleet node delivers no webhooks: their files are ignored",
        metadata: ["endpoints": "\(configuration.webhooks.keys.sorted().joined(separator: " "))"])
    }
    try checkMemoryLimit(memoryLimit, store: opened.services)
    let repository = opened.repository
    store = opened.services
    for note in opened.services.openingNotes {
      logger.notice("\(note.message)", metadata: note.fields.mapValues { "\($0)" })
    }

    let scheduler = DispatchWakeScheduler(queue: queue)
    let sink = JournalEventSink(
      destination: destination, limit: journalLimit(configuration), monotonicNow: { scheduler.monotonicNow },
      journalNow: { DispatchWakeScheduler.journalNow }, logger: Logger(label: "trialwatchd.events"))
    journalSink = sink
    // Commits run on a queue of their own, so that a slow one never holds up the next wake.
    let commits = DispatchCommitLane(
      repository: repository, engineQueue: queue, monotonicNow: { scheduler.monotonicNow })
    let engine = Engine(
      repository: repository, scheduler: scheduler, settings: engineSettings(configuration), sinks: [sink],
      commits: commits, logger: Logger(label: "trialwatchd.engine"))
    engine.observer = self
    // Once writes go quiet: the store's pages they mapped in, the program's and libraries' code
    // they ran, and the heap they freed.
    let storeServices = opened.services
    let memoryLogger = Logger(label: "trialwatchd.memory")
    engine.releaseMemory = {
      storeServices.releaseMemory()
      let released = ProgramPages.releaseIdle()
      memoryLogger.debug("memory released", metadata: released.fields.mapValues { "\($0)" })
    }
    self.engine = engine
    if let fleet {
      fleet.attach(engine)
      fleetStatus = { fleet.status() }
    }

    let report = try queue.sync {
      try engine.start(
        progress: { read in
          // A large store: ask systemd for more start-up time as the load goes on.
          _ = try? self.notifier.send(
            .status("loading store: \(read) trials read"), .extendTimeoutUsec(30_000_000))
        },
        // A run that left events undelivered may have stopped in the middle of a burst.
        beforeRedelivery: { sink.assumeFullWindow() })
    }
    logger.notice(
      "store loaded",
      metadata: [
        "trials": "\(report.trials)", "active": "\(report.activeTrials)",
        "caught_up": "\(report.caughtUp)", "redelivered": "\(report.redelivered)",
        "state_directory": "\(directory)",
      ])

    fleet?.start()
    for service in services {
      do {
        try service.start(daemon: self, engine: engine, queue: queue, configuration: configuration)
      } catch {
        throw DaemonStartError(
          "\(service.name): \(error)", errno: (error as? POSIXError)?.code.rawValue ?? EIO)
      }
    }

    clockSteps = try? ClockStepWatcher(queue: queue) { [weak self] in self?.engine?.clockChanged() }
    if clockSteps == nil { logger.warning("cannot watch for clock steps; they are noticed at the next wake") }
    // Signals sent from here on wait, blocked, until `run()` takes them.
    let status = queue.sync {
      // Start-up leaves behind what a spell of writes does, most of all code that never runs again.
      engine.wrote()
      return engine.statusLine()
    }
    _ = try? notifier.send(.ready, .status(status))
    logger.notice(
      "ready",
      metadata: [
        "status": "\(status)", "journal_pace": "\(journalLimit(configuration).map { "\($0)" } ?? "off")",
      ])
  }

  /// Fails the start, before the store is loaded or written to, when the cgroup's memory limit
  /// is below what the daemon needs (`MemoryNeed`): with the trials the opened store says it
  /// will hold (the store closed again), or for a fleet node, before it joins, with none.
  /// Without a limit, or one that cannot be read, there is nothing to check.
  private func checkMemoryLimit(_ limit: CgroupMemory.Limit?, store services: (any StoreServices)?) throws {
    guard let limit else { return }
    let space = services?.space()
    let need = MemoryNeed(
      trials: (try? services?.trialsToHold()) ?? 0, storeBytes: space.map { $0.fileBytes - $0.freeBytes } ?? 0
    )
    if let refusal = need.refusal(under: limit) {
      services?.close()
      throw DaemonStartError(refusal, errno: ENOMEM)
    }
    guard services != nil else { return }
    logger.info(
      "memory limit checked",
      metadata: [
        "limit_bytes": "\(limit.bytes)", "need_bytes": "\(need.bytes)", "trials": "\(need.trials)",
        "store_bytes": "\(need.storeBytes)", "file": "\(limit.file)",
      ])
  }

  /// The pace of event entries: the configured one where they reach journald (its socket, or
  /// standard error connected to it), none on a terminal.
  private func journalLimit(_ configuration: DaemonConfiguration) -> JournalPace.Limit? {
    guard destination == .journal || JournalDestination.isJournalStream(STDERR_FILENO) else { return nil }
    return configuration.journalRateLimit
  }

  private func engineSettings(_ configuration: DaemonConfiguration) -> EngineSettings {
    let watchdog = (try? SystemdNotifier.watchdogInterval())?.map { $0 / 2 }
    var settings = EngineSettings(
      defaultLength: configuration.defaultLength, defaultReminders: configuration.defaultReminders,
      plans: configuration.plans, policy: configuration.catchUp, watchdogInterval: watchdog,
      retention: configuration.retention, trialRetention: configuration.trialRetention)
    // A fleet's nodes deliver no webhooks: one node must own each endpoint, which is not yet
    // designed (docs/fleet.md).
    if configuration.storeBackend != .postgresql { settings.webhooks = configuration.webhooks }
    return settings
  }

  /// The default trial settings clients see (for the control server).
  public var currentConfiguration: DaemonConfiguration {
    dispatchPrecondition(condition: .onQueue(queue))
    return configuration
  }

  private func reload() {
    _ = try? notifier.send(NotifyState.reloadingNow())
    let loaded = options.load()
    for diagnostic in loaded.diagnostics { logger.warning("\(diagnostic)") }
    if loaded.hasErrors {
      logger.error("configuration not reloaded: it has errors; keeping the running one")
    } else {
      // Where the store and socket live, and the fleet's settings, change only at a restart.
      let (next, pending) = configuration.reloading(loaded.configuration)
      for message in pending { logger.warning("\(message)") }
      configuration = next
      logLevel.level = next.logLevel
      engine?.reload(engineSettings(next))
      journalSink?.setLimit(journalLimit(next))
      engine?.resumeDelivery()
      for service in services { service.reload(configuration: next) }
      logger.notice("configuration reloaded")
    }
    _ = try? notifier.send(.ready, .status(engine?.statusLine() ?? "reloaded"))
  }

  /// Runs on the main thread, where signals are taken. The control server stops first, while
  /// the engine's queue is still free to answer the calls in progress; then the engine stops on
  /// its queue, after the transaction in flight, committing the changes already submitted. After
  /// a failed write or sync of the store (`engineStoreFailed`) the engine has stopped already,
  /// writing nothing more, and the exit status says so.
  private func stop(signal: String) {
    let failed = storeFailed.load(ordering: .acquiring)
    logger.notice(failed ? "stopping: the store failed to write or sync" : "stopping on \(signal)")
    _ = try? notifier.send(
      .stopping, .status(failed ? "stopping: the store failed to write or sync" : "stopping"))
    for service in services.reversed() { service.stop() }
    // A fleet node hands its shards over first, so that the others fire them at once.
    fleet?.leave()
    queue.sync {
      engine?.stop()
      clockSteps?.stop()
    }
    exit(storeFailed.load(ordering: .acquiring) ? StoreFailureEntry.exitStatus : 0)
  }

  // MARK: EngineObserver

  public func engineStatusChanged(_ status: String) {
    _ = try? notifier.send(.status(status))
  }

  public func engineWatchdogPing() {
    _ = try? notifier.send(.watchdog)
  }

  public func engineDetectedClockStep(from expected: Date, to actual: Date) {
    journalSink?.clockStepped(from: expected, to: actual)
  }

  /// The store failed to write or sync, and the engine has stopped: says why (the catalog
  /// explains the entry), then hands the stop to the main thread as a `SIGTERM` does. The
  /// process exits with `StoreFailureEntry.exitStatus`, for systemd to start it again
  /// (`Restart=on-failure`) from what is durable on disk.
  public func engineStoreFailed(_ error: any Error) {
    guard !storeFailed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    logger.critical("\(StoreFailureEntry.message(error))", metadata: StoreFailureEntry.metadata(error))
    _ = try? notifier.send(.status("the store failed to write or sync: \(error)"), .errno(EIO))
    // Once the failed writes' completions, next on this queue, have handed their answers to
    // the connections: those go out before the control server closes them.
    queue.async { kill(getpid(), SIGTERM) }
  }
}

/// A part of the daemon started after the engine is ready (the control server). `start` and
/// `stop` are called on the main thread, `reload` on the engine's queue.
public protocol DaemonService: AnyObject {
  var name: String { get }
  func start(daemon: Daemon, engine: Engine, queue: DispatchQueue, configuration: DaemonConfiguration) throws
  func reload(configuration: DaemonConfiguration)
  func stop()
}
