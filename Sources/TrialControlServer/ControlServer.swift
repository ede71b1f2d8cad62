import Dispatch
import Logging
import Synchronization
import TrialControl

/// The Varlink control server: accepts connections on a Unix stream socket and answers
/// `org.varlink.service` and the routes it is given (`io.trialwatch.Trials`).
///
/// Nothing here blocks the caller's queue or the engine: the listening socket has its own
/// serial queue, each connection its own serial queue and a non-blocking socket, read by the
/// server's poller thread (`ControlPoller`) and written through a Dispatch source when it
/// would block, and a slow client only ever fills its own buffers. Connections are limited
/// overall and per user, with a reserve that only root, the daemon's user and the control
/// group may use, so that one user cannot lock out the others.
public final class ControlServer: @unchecked Sendable {
  /// Where the server listens.
  public enum Listener: Sendable {
    /// A listening socket handed over by the service manager (socket activation).
    case adopt(fileDescriptor: Int32)
    /// Bind `path` (removing a stale socket there), mode `Options.socketMode`, group `group`.
    case bind(path: String, group: UInt32?)
  }

  public struct Options: Sendable {
    /// Connections at once, from everyone; beyond, `io.trialwatch.TooManyConnections`.
    public var maximumConnections = 4096
    /// Connections at once from one user (by uid), unless root, the daemon's user or a member
    /// of the control group.
    public var maximumConnectionsPerUser = 1024
    /// Of `maximumConnections`, this many only root, the daemon's user and the control group
    /// may use.
    public var reservedConnections = 64
    /// What each connection may do.
    public var connection = ConnectionLimits()
    /// Members of this group may change trials (besides root and the daemon's user).
    public var controlGroup: UInt32?
    /// The mode of a socket the server binds itself.
    public var socketMode: UInt32 = 0o660
    /// What `org.varlink.service.GetInfo` reports.
    public var vendor = "trialwatch"
    public var product = "trialwatchd"
    public var version = "0.0.0"
    public var url = ""
    /// The interfaces GetInfo lists (and the only ones whose unknown methods are
    /// `MethodNotFound`, not `InterfaceNotFound`).
    public var interfaces = VarlinkInterfaces.all

    public init() {}
  }

  let options: Options
  let logger: Logger
  let router: ControlRouter
  let authorizer: ControlAuthorizer
  /// The path the server bound and removes when stopped; nil for an adopted socket.
  public let socketPath: String?
  /// Connections and watchers, as GetStatus reports them.
  public let counters: ControlCounters

  private let queue = DispatchQueue(label: "trialwatch.control.listener")
  /// The thread that reads every connection. One: with 4 clients on 2 cores, one answered
  /// more calls a second than two (connections spread between them by id) in the same runs.
  let poller: ControlPoller
  private let listenerFD: Int32

  private struct State {
    var connections: [UInt64: ControlConnection] = [:]
    var perUser: [UInt32: Int] = [:]
    var nextID: UInt64 = 0
    var started = false
    var stopping = false
    var listenerClosed = false
    var onStopped: [@Sendable () -> Void] = []
    var acceptSource: (any DispatchSourceRead)?
    /// Refusals not logged yet, and when one was last logged.
    var unloggedRefusals = 0
    var lastRefusalLog: UInt64?
  }

  private let state = Mutex(State())

  /// Sets up the socket (binding it, or checking an adopted one); call `start()` to accept.
  /// - Throws: `ControlServerError` naming the path or descriptor.
  public init(
    listener: Listener, routes: [Route], counters: ControlCounters = ControlCounters(),
    options: Options = Options(), authorizer: ControlAuthorizer? = nil, logger: Logger
  ) throws(ControlServerError) {
    poller = try ControlPoller()
    self.options = options
    self.logger = logger
    self.counters = counters
    self.authorizer =
      authorizer
      ?? ControlAuthorizer(daemonUID: ControlSocket.currentUID(), controlGroup: options.controlGroup)
    router = ControlRouter(
      routes: routes,
      info: GetInfoReply(
        vendor: options.vendor, product: options.product, version: options.version, url: options.url,
        interfaces: options.interfaces),
      counters: counters)
    switch listener {
    case .adopt(let fd):
      try ControlSocket.adopt(fd)
      listenerFD = fd
      socketPath = nil
    case .bind(let path, let group):
      listenerFD = try ControlSocket.bind(path: path, group: group, mode: options.socketMode)
      socketPath = path
    }
  }

  deinit {
    poller.stop()
    let (source, stopping) = state.withLock { ($0.acceptSource, $0.stopping) }
    guard !stopping else { return }
    if let socketPath { ControlSocket.unlinkPath(socketPath) }
    if let source { source.cancel() } else { ControlSocket.closeDescriptor(listenerFD) }
  }

  /// Begins accepting connections.
  public func start() {
    let fd = listenerFD
    let queue = self.queue
    let first = state.withLock { state in
      guard !state.started && !state.stopping else { return false }
      state.started = true
      let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self] in self?.acceptPending() }
      source.setCancelHandler { [weak self] in
        ControlSocket.closeDescriptor(fd)
        self?.listenerDidClose()
      }
      source.resume()
      state.acceptSource = source
      return true
    }
    guard first else { return }
    poller.start()
    if let socketPath {
      logger.info("control socket listening", metadata: ["path": "\(socketPath)"])
    } else {
      logger.info("control socket adopted", metadata: ["fd": "\(fd)"])
    }
  }

  /// Stops accepting, closes every connection (ending their Watches) and removes the socket
  /// the server bound. `completion` runs once all connections are closed.
  public func stop(completion: (@Sendable () -> Void)? = nil) {
    let (connections, source, alreadyStopping) = state.withLock { state in
      let alreadyStopping = state.stopping
      state.stopping = true
      if let completion { state.onStopped.append(completion) }
      return (Array(state.connections.values), state.acceptSource, alreadyStopping)
    }
    if !alreadyStopping {
      if let socketPath { ControlSocket.unlinkPath(socketPath) }
      if let source {
        source.cancel()
      } else {
        ControlSocket.closeDescriptor(listenerFD)
        listenerDidClose()
      }
    }
    for connection in connections { connection.shutDown() }
    finishStopIfDone()
  }

  /// Open connections.
  public var connectionCount: Int { counters.connections }

  /// Connections with a running Watch.
  public var watcherCount: Int { counters.watchers }

  // MARK: Accepting

  private func acceptPending() {
    while true {
      switch ControlSocket.accept(listenerFD) {
      case .success(nil):
        return
      case .success(let fd?):
        admit(fd)
      case .failure(let error):
        logger.error("cannot accept a control connection", metadata: ["error": "\(error)"])
        // Out of descriptors: the listener stays readable, so pause rather than spin.
        guard let source = state.withLock({ $0.acceptSource }) else { return }
        source.suspend()
        queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
          self?.state.withLock { $0.acceptSource }?.resume()
        }
        return
      }
    }
  }

  /// Admits a connection within the limits, or refuses it. Whether the peer is privileged
  /// (root, the daemon's user, the control group) is asked here only when an ordinary user
  /// would be refused, since the user database may be slow; otherwise the connection decides
  /// it once, as it opens.
  private func admit(_ fd: Int32) {
    let peer = ControlSocket.peerCredentials(fd)
    var privileged: Bool?
    if state.withLock({ limitReached($0, peer, privileged: false) }) != nil {
      privileged = peer.map { authorizer.mayChange($0).permitted } ?? false
    }
    let admitted: Result<ControlConnection, Refusal>? = state.withLock { state in
      guard !state.stopping else { return nil }
      if let limit = limitReached(state, peer, privileged: privileged ?? false) {
        return .failure(Refusal(limit))
      }
      state.nextID += 1
      let connection = ControlConnection(
        id: state.nextID, fd: fd, peer: peer, mayChange: privileged, server: self)
      state.connections[state.nextID] = connection
      if let peer { state.perUser[peer.uid, default: 0] += 1 }
      counters.connectionOpened()
      return .success(connection)
    }
    switch admitted {
    case .success(let connection)?: connection.start()
    case .failure(let refusal)?: refuse(fd, peer: peer, limit: refusal.limit)
    case nil: ControlSocket.closeDescriptor(fd)
    }
  }

  private struct Refusal: Error {
    let limit: Int
    init(_ limit: Int) { self.limit = limit }
  }

  /// The limit a new connection from `peer` would exceed, or nil.
  private func limitReached(_ state: State, _ peer: PeerCredentials?, privileged: Bool) -> Int? {
    let total = state.connections.count
    if privileged { return total < options.maximumConnections ? nil : options.maximumConnections }
    if total >= options.maximumConnections - options.reservedConnections { return options.maximumConnections }
    let ofUser = peer.map { state.perUser[$0.uid, default: 0] } ?? 0
    return ofUser < options.maximumConnectionsPerUser ? nil : options.maximumConnectionsPerUser
  }

  private func refuse(_ fd: Int32, peer: PeerCredentials?, limit: Int) {
    let now = DispatchTime.now().uptimeNanoseconds
    let suppressed: Int? = state.withLock { state in
      if let last = state.lastRefusalLog, now - last < 10_000_000_000 {
        state.unloggedRefusals += 1
        return nil
      }
      defer { state.unloggedRefusals = 0 }
      state.lastRefusalLog = now
      return state.unloggedRefusals
    }
    if let suppressed {
      logger.warning(
        "refusing a control connection: too many connections",
        metadata: [
          "limit": "\(limit)", "peer": "\(peer.map(\.description) ?? "unknown")",
          "refused_unlogged": "\(suppressed)",
        ])
    }
    counters.connectionRefused()
    let bytes = router.errorReply(.tooManyConnections(limit: limit))
    _ = bytes.withUnsafeBytes { ControlSocket.write(fd, $0) }
    ControlSocket.closeDescriptor(fd)
  }

  // MARK: Book-keeping for connections

  func connectionDidClose(_ connection: ControlConnection) {
    state.withLock { state in
      guard state.connections.removeValue(forKey: connection.id) != nil else { return }
      if let uid = connection.peer?.uid {
        state.perUser[uid, default: 1] -= 1
        if state.perUser[uid] == 0 { state.perUser.removeValue(forKey: uid) }
      }
    }
    counters.connectionClosed()
    finishStopIfDone()
  }

  private func listenerDidClose() {
    state.withLock { $0.listenerClosed = true }
    finishStopIfDone()
  }

  private func finishStopIfDone() {
    let (stopped, completions): (Bool, [@Sendable () -> Void]) = state.withLock { state in
      guard state.stopping, state.listenerClosed, state.connections.isEmpty else { return (false, []) }
      defer { state.onStopped = [] }
      return (true, state.onStopped)
    }
    // No connection is left to read: the poller's thread ends (stopping it again does nothing).
    if stopped { poller.stop() }
    for completion in completions { completion() }
  }
}

/// Open connections, running Watches, connections refused, and calls and errors by method:
/// shared by the servers of one daemon (the control socket, the report socket) and read by
/// GetStatus and the metrics.
public final class ControlCounters: Sendable {
  private let open = Atomic<Int>(0)
  private let watching = Atomic<Int>(0)
  private let refusedConnections = Atomic<Int>(0)
  /// One tally per method, made as a server's routes are set up, never as calls arrive.
  private let tallies = Mutex<[String: MethodTally]>([:])
  /// Extensions refused by a limit of their trial's plan, by the limit's name.
  private let refusedExtensions = Mutex<[String: Int]>([:])

  public init() {}

  public var connections: Int { open.load(ordering: .relaxed) }
  public var watchers: Int { watching.load(ordering: .relaxed) }
  /// Connections refused since start: too many at once.
  public var refused: Int { refusedConnections.load(ordering: .relaxed) }

  /// Calls and errors by qualified method name, of the methods called at least once.
  public var calls: [(method: String, calls: Int, errors: Int)] {
    tallies.withLock { $0.map { ($0.key, $0.value.calls, $0.value.errors) } }.filter { $0.calls > 0 }
      .sorted { $0.method < $1.method }
  }

  /// Extensions refused since start, by the limit's name (`ExtensionRefused`'s `limit`).
  public var extensionsRefused: [String: Int] { refusedExtensions.withLock { $0 } }

  /// Counts an extension refused by the limit `limit`.
  public func extensionRefused(limit: String) { refusedExtensions.withLock { $0[limit, default: 0] += 1 } }

  func connectionOpened() { open.add(1, ordering: .relaxed) }
  func connectionClosed() { open.subtract(1, ordering: .relaxed) }
  func connectionRefused() { refusedConnections.add(1, ordering: .relaxed) }
  func watcherStarted() { watching.add(1, ordering: .relaxed) }
  func watcherEnded() { watching.subtract(1, ordering: .relaxed) }

  /// The tally of `method`, the same for every server sharing these counters.
  func tally(of method: String) -> MethodTally {
    tallies.withLock { tallies in
      if let tally = tallies[method] { return tally }
      let tally = MethodTally()
      tallies[method] = tally
      return tally
    }
  }
}

/// The calls of one method and those answered with an error (refused ones included).
final class MethodTally: Sendable {
  private let callCount = Atomic<Int>(0)
  private let errorCount = Atomic<Int>(0)

  var calls: Int { callCount.load(ordering: .relaxed) }
  var errors: Int { errorCount.load(ordering: .relaxed) }

  func called() { callCount.add(1, ordering: .relaxed) }
  func failed() { errorCount.add(1, ordering: .relaxed) }
  /// Refused before it reached its handler: a call, and an error.
  func refused() {
    called()
    failed()
  }
}
