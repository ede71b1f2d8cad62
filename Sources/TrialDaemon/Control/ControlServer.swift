import Dispatch
import Logging
import Synchronization
import TrialControl

/// The Varlink control server: accepts connections on a Unix stream socket and answers
/// `org.varlink.service` and `io.trialwatch.Trials` calls, the latter through a
/// `TrialsBackend`.
///
/// Nothing here blocks the caller's queue or the backend: the listening socket has its own
/// serial queue, each connection its own serial queue with non-blocking read and write
/// sources, and a slow client only ever fills its own buffers.
public final class ControlServer: @unchecked Sendable {
  /// Where the server listens.
  public enum Listener: Sendable {
    /// A listening socket handed over by the service manager (socket activation).
    case adopt(fileDescriptor: Int32)
    /// Bind `path` (removing a stale socket there), mode `Options.socketMode`, group `group`.
    case bind(path: String, group: UInt32?)
  }

  public struct Options: Sendable {
    /// Connections beyond this are answered `io.trialwatch.TooManyConnections` and closed.
    public var maximumConnections = 256
    /// A connection with no traffic for this long, and no call or Watch running, is closed.
    /// Measured on the monotonic clock.
    public var idleTimeout: Duration = .seconds(300)
    /// The largest message accepted; a larger one is answered `io.trialwatch.MessageTooLarge`
    /// and the connection closed.
    public var maximumMessageSize = VarlinkFrameDecoder.defaultMaximumMessageSize
    /// Events a watcher may fall behind (queued, not yet taken by its socket) before it is
    /// disconnected.
    public var watchBacklog = 1024
    /// Members of this group may change trials (besides root and the daemon's user).
    public var controlGroup: UInt32?
    /// The mode of a socket the server binds itself.
    public var socketMode: UInt32 = 0o660
    /// What `org.varlink.service.GetInfo` reports.
    public var vendor = "trialwatch"
    public var product = "trialwatchd"
    public var version = "0.0.0"
    public var url = ""

    public init() {}
  }

  let options: Options
  let backend: any TrialsBackend
  let logger: Logger
  let router: ControlRouter
  /// The path the server bound and removes when stopped; nil for an adopted socket.
  public let socketPath: String?

  private let queue = DispatchQueue(label: "trialwatch.control.listener")
  private let listenerFD: Int32

  private struct State {
    var connections: [UInt64: ControlConnection] = [:]
    var nextID: UInt64 = 0
    var watchers = 0
    var started = false
    var stopping = false
    var listenerClosed = false
    var onStopped: [@Sendable () -> Void] = []
    var acceptSource: (any DispatchSourceRead)?
  }

  private let state = Mutex(State())

  /// Sets up the socket (binding it, or checking an adopted one); call `start()` to accept.
  /// - Throws: `ControlServerError` naming the path or descriptor.
  public init(
    listener: Listener, backend: any TrialsBackend, options: Options = Options(),
    authorizer: ControlAuthorizer? = nil, logger: Logger
  ) throws(ControlServerError) {
    self.options = options
    self.backend = backend
    self.logger = logger
    let authorizer =
      authorizer
      ?? ControlAuthorizer(daemonUID: ControlSocket.currentUID(), controlGroup: options.controlGroup)
    router = ControlRouter(
      info: GetInfoReply(
        vendor: options.vendor, product: options.product, version: options.version, url: options.url,
        interfaces: VarlinkInterfaces.all),
      authorizer: authorizer)
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
  public var connectionCount: Int { state.withLock { $0.connections.count } }

  /// Connections with a running Watch.
  public var watcherCount: Int { state.withLock { $0.watchers } }

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

  private func admit(_ fd: Int32) {
    let peer = ControlSocket.peerCredentials(fd)
    let admitted: ControlConnection? = state.withLock { state in
      guard !state.stopping, state.connections.count < options.maximumConnections else { return nil }
      state.nextID += 1
      let connection = ControlConnection(id: state.nextID, fd: fd, peer: peer, server: self)
      state.connections[state.nextID] = connection
      return connection
    }
    guard let connection = admitted else {
      refuse(fd, peer: peer)
      return
    }
    connection.start()
  }

  private func refuse(_ fd: Int32, peer: PeerCredentials?) {
    logger.warning(
      "refusing a control connection: too many connections",
      metadata: ["limit": "\(options.maximumConnections)", "peer": "\(peer.map(\.description) ?? "unknown")"])
    let bytes = VarlinkReply(error: .tooManyConnections(limit: options.maximumConnections)).encoded()
    _ = bytes.withUnsafeBytes { ControlSocket.write(fd, $0) }
    ControlSocket.closeDescriptor(fd)
  }

  // MARK: Book-keeping for connections

  func connectionDidClose(_ id: UInt64) {
    state.withLock { _ = $0.connections.removeValue(forKey: id) }
    finishStopIfDone()
  }

  func watcherStarted() {
    state.withLock { $0.watchers += 1 }
  }

  func watcherEnded() {
    state.withLock { $0.watchers -= 1 }
  }

  private func listenerDidClose() {
    state.withLock { $0.listenerClosed = true }
    finishStopIfDone()
  }

  private func finishStopIfDone() {
    let completions: [@Sendable () -> Void] = state.withLock { state in
      guard state.stopping, state.listenerClosed, state.connections.isEmpty else { return [] }
      defer { state.onStopped = [] }
      return state.onStopped
    }
    for completion in completions { completion() }
  }
}
