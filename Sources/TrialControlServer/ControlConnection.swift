import Dispatch
import ErrnoText
import FoundationEssentials
import Logging
import Synchronization
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// One client connection: the glue around a `ConnectionMachine`. All its state belongs to
/// its own serial queue. Its socket is non-blocking: a `ControlPoller` thread reads it, on the
/// connection's queue, and answers what it can there and then; writes that would block wait
/// for a Dispatch write source. A client that stops reading or writing holds up nobody but
/// itself. Whether the peer may change trials is decided once, when the connection is admitted.
final class ControlConnection: @unchecked Sendable {
  // @unchecked: every mutable property is touched only on `queue`.
  let id: UInt64
  let queue: DispatchQueue
  let peer: PeerCredentials?
  /// Whether the peer may change trials: decided at admission, or else as the connection opens.
  private let authorization: Authorization
  private let fd: Int32
  private let server: ControlServer
  private let poller: ControlPoller
  private let logger: Logger
  private var machine: ConnectionMachine<PreparedCall>

  private var writeSource: (any DispatchSourceWrite)?
  private var timer: (any DispatchSourceTimer)?
  private var armedDeadline: Duration?
  private var reading = false
  /// The descriptor is registered with the poller (from `open` until reading stops).
  private var registered = false
  /// The poller's thread is running a block on the queue.
  private var onPoller = false
  private var writeArmed = false
  /// The poller's registration and the write source: each to be done with before the
  /// descriptor may be closed.
  private var openSources = 0
  private var stream: (relay: StreamRelay, cancel: @Sendable () -> Void)?
  private var closed = false
  /// Actions still to carry out; a handler that answers at once adds its reply's actions here.
  private var pending: [ConnectionMachine<PreparedCall>.Action] = []
  private var running = false
  /// Where reads land, from the first read to the close: a buffer taken for each read was a heap
  /// allocation (at times with a consolidation of the heap) on every readable event.
  private var readBuffer: UnsafeMutableRawBufferPointer?
  private static let readBufferSize = 16_384

  /// The thread running `perform` on this connection's queue, while it does (0 otherwise): a
  /// completion called on that thread, before `perform` returns, is taken without a hop. (Not
  /// `DispatchQueue.setSpecific`: disposing of a queue with specifics goes through a global
  /// queue, which starts libdispatch's once-a-second worker monitor for good.)
  private let performingThread = Atomic<UInt>(0)
  /// Completions taken on the connection's queue, without a hop (for tests).
  static let inlineCompletions = Atomic<Int>(0)
  /// Of those, completions taken on the poller's thread: answered with no thread woken (for tests).
  static let pollerCompletions = Atomic<Int>(0)

  private final class Authorization: @unchecked Sendable {
    // @unchecked: set once on the connection's queue before any message is read.
    var mayChange: Bool?
  }

  init(id: UInt64, fd: Int32, peer: PeerCredentials?, mayChange: Bool?, server: ControlServer) {
    self.id = id
    self.fd = fd
    self.peer = peer
    let authorization = Authorization()
    authorization.mayChange = mayChange
    self.authorization = authorization
    self.server = server
    poller = server.poller
    queue = DispatchQueue(label: "trialwatch.control.connection")
    var logger = server.logger
    logger[metadataKey: "connection"] = "\(id)"
    if let peer {
      logger[metadataKey: "peer_pid"] = "\(peer.pid)"
      logger[metadataKey: "peer_uid"] = "\(peer.uid)"
    }
    self.logger = logger
    let router = server.router
    machine = ConnectionMachine(
      limits: server.options.connection, now: Self.now(),
      classify: { [logger] message in
        router.classify(message, mayChange: authorization.mayChange ?? false, uid: peer?.uid) { error in
          logger.warning(
            "refused a call that changes trials: the caller is not root, the daemon's user or in the group",
            metadata: ["method": "\(error.parameters.method ?? "?")"])
        }
      }, errorReply: router.errorReply)
  }

  deinit { readBuffer?.deallocate() }

  static func now() -> Duration { .nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds)) }

  func start() {
    queue.async { self.open() }
  }

  /// Closes the connection (the server is stopping).
  func shutDown() {
    queue.async { self.run(self.machine.close(reason: "the server is stopping")) }
  }

  // MARK: Carrying out the machine's actions

  /// Carries out actions, writes what the machine has queued, and repeats while either
  /// brings more; then brings the sources and the timer in line with what the machine wants.
  /// Re-entered (a handler that answers at once, a stream that sends from here), it only queues.
  private func run(_ actions: [ConnectionMachine<PreparedCall>.Action]) {
    pending += actions
    guard !running else { return }
    running = true
    defer { running = false }
    repeat {
      while !pending.isEmpty {
        switch pending.removeFirst() {
        case .perform(let call, let slot) where onPoller && call.route.scans:
          // Not on the poller's thread, which reads every connection: on this queue, later.
          queue.async { self.run([.perform(call, slot: slot)]) }
        case .perform(let call, let slot): perform(call, slot: slot)
        case .startStream(let call): startStream(call)
        case .stopStream: stopStream()
        case .log(let level, let message): logger.log(level: level, "\(message)")
        case .close(let reason): close(reason: reason)
        }
      }
      writeOutput()
      // A stream's source may send more from here, on this queue (`StreamRelay.sendHere`): what
      // it queues is written on the next turn of the loop.
      stream?.relay.update(unwritten: machine.unwrittenStreamReplies)
    } while !pending.isEmpty || (machine.pendingOutput > 0 && !writeArmed && !closed)
    guard !closed else { return }
    if machine.stopsReading {
      stopReading()
    } else if machine.wantsInput != reading, registered {
      reading.toggle()
      poller.setReading(reading, self, fd: fd)
    }
    // The timer is re-armed only for an earlier deadline: a deadline that moves later with
    // each call (the idle timeout) costs nothing per call. Firing early, it re-arms.
    if let deadline = machine.deadline, armedDeadline.map({ deadline < $0 }) ?? true, let timer {
      armedDeadline = deadline
      let wait = max(.zero, deadline - Self.now())
      timer.schedule(deadline: .now() + .nanoseconds(Int(wait / .nanoseconds(1))))
    }
  }

  /// Writes what the socket takes; arms the write source for the rest.
  private func writeOutput() {
    while !closed && machine.pendingOutput > 0 {
      switch machine.unwrittenOutput.withUnsafeBytes({ ControlSocket.write(fd, $0) }) {
      case .wrote(let count):
        pending += machine.wrote(count, now: Self.now())
      case .wouldBlock:
        if !writeArmed, let writeSource {
          writeSource.resume()
          writeArmed = true
        }
        return
      case .failed(let error):
        pending += machine.close(reason: "write failed: \(errnoText(error))")
      }
    }
    if writeArmed, !closed, let writeSource {
      writeSource.suspend()
      writeArmed = false
    }
  }

  private func perform(_ call: PreparedCall, slot: Int) {
    // The router makes calls only of call routes, and streams only of stream routes.
    guard case .call(let carryOut) = call.route.handler else { return }
    let change = call.route.kind == .change
    let tally = call.route.tally
    tally.called()
    performingThread.store(UInt(pthread_self()), ordering: .relaxed)
    defer { performingThread.store(0, ordering: .relaxed) }
    carryOut(call.parameters, peer, server.router.encoder) { [self] result in
      let reply: [UInt8]
      switch result {
      case .success(let bytes): reply = bytes
      case .failure(let error):
        tally.failed()
        reply = server.router.errorReply(error)
      }
      if performingThread.load(ordering: .relaxed) == UInt(pthread_self()) {
        Self.inlineCompletions.add(1, ordering: .relaxed)
        if onPoller { Self.pollerCompletions.add(1, ordering: .relaxed) }
        pending += machine.finished(slot: slot, reply: reply, change: change, now: Self.now())
      } else {
        queue.async {
          self.run(self.machine.finished(slot: slot, reply: reply, change: change, now: Self.now()))
        }
      }
    }
  }

  // MARK: Sources

  private func open() {
    if authorization.mayChange == nil {
      authorization.mayChange = peer.map { server.authorizer.mayChange($0).permitted } ?? false
    }
    let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
    write.setEventHandler { [unowned self] in run([]) }
    write.setCancelHandler { [self] in sourceCancelled() }
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.setEventHandler { [unowned self] in
      armedDeadline = nil
      run(machine.tick(now: Self.now()))
    }
    timer.schedule(deadline: .distantFuture)
    timer.resume()
    writeSource = write
    self.timer = timer
    openSources = 2
    registered = true
    reading = true
    poller.register(self, fd: fd)
    logger.debug("control connection opened")
    run([])
  }

  private func stopReading() {
    guard registered else { return }
    registered = false
    reading = false
    poller.deregister(self, fd: fd)
    sourceCancelled()
  }

  private func sourceCancelled() {
    openSources -= 1
    guard openSources == 0 else { return }
    ControlSocket.closeDescriptor(fd)
    server.connectionDidClose(self)
  }

  private func close(reason: String) {
    guard !closed else { return }
    closed = true
    readBuffer?.deallocate()
    readBuffer = nil
    logger.debug("control connection closed", metadata: ["reason": "\(reason)"])
    stopStream()
    timer?.cancel()
    timer = nil
    stopReading()
    if let writeSource {
      writeSource.cancel()
      if !writeArmed { writeSource.resume() }
      writeArmed = true
    }
  }

  /// The socket is readable: called by the poller's thread, which reads on the queue itself.
  func readOnPoller() {
    queue.sync {
      onPoller = true
      defer { onPoller = false }
      readAvailable()
    }
  }

  private func readAvailable() {
    // An event that was on its way when reading stopped: the descriptor may be another's now.
    guard !closed, registered else { return }
    var actions: [ConnectionMachine<PreparedCall>.Action] = []
    let buffer =
      readBuffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
    readBuffer = buffer
    reading: while !machine.stopsReading && machine.wantsInput {
      switch ControlSocket.read(fd, into: buffer) {
      case .bytes(let count):
        actions += machine.received(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: Self.now())
      case .wouldBlock:
        break reading
      case .endOfStream:
        actions += machine.endOfInput(now: Self.now())
        break reading
      case .failed(let error):
        actions += machine.close(reason: "read failed: \(errnoText(error))")
        break reading
      }
    }
    run(actions)
  }

  // MARK: Streams

  private func startStream(_ call: PreparedCall) {
    guard case .stream(let open) = call.route.handler else { return }
    call.route.tally.called()
    let relay = StreamRelay(connection: self, backlog: server.options.connection.watchBacklog)
    server.counters.watcherStarted()
    stream = (relay, open(call.parameters, relay))
    logger.debug("watch started")
  }

  private func stopStream() {
    guard let stream else { return }
    self.stream = nil
    stream.relay.stop()
    stream.cancel()
    server.counters.watcherEnded()
  }

  /// Stream replies from the relay, on the connection's queue, written together.
  func streamReplies(_ encodes: [@Sendable (JSONEncoder) -> [UInt8]]) {
    guard !closed, stream != nil else { return }
    var actions: [ConnectionMachine<PreparedCall>.Action] = []
    for encode in encodes { actions += machine.streamReply(encode(server.router.encoder)) }
    run(actions)
  }

  func streamOverflowed(backlog: Int) {
    run(
      machine.close(
        reason: "watcher fell behind",
        log: (.warning, "disconnecting a watcher that fell behind (backlog \(backlog) events)")))
  }

  func streamEnded() {
    run(machine.streamEnded())
  }

  func streamFailed(_ error: ControlError) {
    run(machine.streamFailed(error))
  }
}
