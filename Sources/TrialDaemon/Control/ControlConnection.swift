import Dispatch
import Logging
import Synchronization
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// One client connection. All its state belongs to its own serial queue; reads and writes
/// go through non-blocking Dispatch sources, so a client that stops reading or writing holds
/// up nobody but itself.
///
/// Calls are taken in arrival order and answered in that order. Changing calls a client
/// pipelines run together (up to `maximumChangesInFlight`): the engine applies them in order
/// and commits them as one group. Any other call waits until everything before it is answered,
/// so a read sees every change the client made before it. While calls are with the backend,
/// bytes keep arriving into the buffer, up to a bound.
final class ControlConnection: @unchecked Sendable {
  let id: UInt64
  let queue: DispatchQueue
  private let fd: Int32
  private let peer: PeerCredentials?
  private let server: ControlServer
  private var logger: Logger

  private var readSource: (any DispatchSourceRead)?
  private var writeSource: (any DispatchSourceWrite)?
  private var idleTimer: (any DispatchSourceTimer)?
  private var readPaused = false
  private var readStopped = false
  private var writeArmed = false
  /// Sources whose cancel handlers have still to run before the descriptor may be closed.
  private var openSources = 0

  private var decoder: VarlinkFrameDecoder
  private var output: [UInt8] = []
  private var outputStart = 0
  /// Bytes appended to `output` and bytes written, since the connection opened.
  private var bytesQueued = 0
  private var bytesWritten = 0

  /// Replies owed, in call order; a slot holds its reply once its call is answered.
  private var owed: [OwedReply] = []
  /// Calls with the backend, and how many of them change trials.
  private var callsInFlight = 0
  private var changesInFlight = 0
  /// A call that waits for every call before it to be answered (a read after changes, or a
  /// Watch).
  private var held: (call: VarlinkCall, request: ControlRequest)?
  /// A message could not be taken (too large): once the calls before it are answered, the
  /// connection closes.
  private var finishWhenAnswered = false
  /// A call is with the backend or waiting for one.
  private var busy: Bool { !owed.isEmpty || held != nil }

  /// Changing calls of one connection with the backend at once.
  static let maximumChangesInFlight = 64

  /// A reply owed to the client. Touched only on the connection's queue.
  private final class OwedReply: @unchecked Sendable {
    let oneway: Bool
    /// Nil until the call is answered.
    var reply: VarlinkReply?

    init(oneway: Bool, reply: VarlinkReply? = nil) {
      self.oneway = oneway
      self.reply = reply
    }
  }
  /// `processInput` is on the stack: whatever it would do again, its loop does.
  private var processing = false
  /// The client has closed its end for writing.
  private var peerFinished = false
  /// No more calls are read; the connection closes once its output is written.
  private var closeWhenFlushed = false
  private var closed = false
  /// Monotonic time of the last byte read or written.
  private var lastActivity: DispatchTime = .now()

  private var watch: WatchStream?

  /// The thread running `perform` on this connection's queue, while it does (0 otherwise): a
  /// completion called on that thread, before `perform` returns, runs without a hop. (Not
  /// `DispatchQueue.setSpecific`: disposing of a queue with specifics goes through a global
  /// queue, which starts libdispatch's once-a-second worker monitor for good.)
  private let performingThread = Atomic<UInt>(0)
  /// Completions that ran on the connection's queue, without a hop (for tests).
  static let inlineCompletions = Atomic<Int>(0)

  /// Reading pauses while this many bytes wait in either direction.
  private var highWater: Int { max(server.options.maximumMessageSize, 1 << 16) * 2 }

  init(id: UInt64, fd: Int32, peer: PeerCredentials?, server: ControlServer) {
    self.id = id
    self.fd = fd
    self.peer = peer
    self.server = server
    self.queue = DispatchQueue(label: "trialwatch.control.connection")
    self.decoder = VarlinkFrameDecoder(maximumMessageSize: server.options.maximumMessageSize)
    var logger = server.logger
    logger[metadataKey: "connection"] = "\(id)"
    if let peer {
      logger[metadataKey: "peer_pid"] = "\(peer.pid)"
      logger[metadataKey: "peer_uid"] = "\(peer.uid)"
    }
    self.logger = logger
  }

  func start() {
    queue.async { self.open() }
  }

  /// Closes the connection (the server is stopping).
  func shutDown() {
    queue.async { self.close(reason: "the server is stopping") }
  }

  // MARK: Sources

  private func open() {
    let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    read.setEventHandler { [unowned self] in self.readAvailable() }
    read.setCancelHandler { [self] in self.sourceCancelled() }
    let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
    write.setEventHandler { [unowned self] in self.flush() }
    write.setCancelHandler { [self] in self.sourceCancelled() }
    readSource = read
    writeSource = write
    openSources = 2
    read.resume()
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.setEventHandler { [unowned self] in self.checkIdle() }
    timer.schedule(deadline: .now() + server.options.idleTimeout.dispatchInterval)
    timer.resume()
    idleTimer = timer
    logger.debug("control connection opened")
  }

  private func pauseReading() {
    guard !readPaused, !readStopped, let readSource else { return }
    readSource.suspend()
    readPaused = true
  }

  private func resumeReading() {
    guard readPaused, !readStopped, let readSource else { return }
    readSource.resume()
    readPaused = false
  }

  private func stopReading() {
    guard !readStopped, let readSource else { return }
    readStopped = true
    readSource.cancel()
    if readPaused {
      readSource.resume()
      readPaused = false
    }
  }

  private func armWrite() {
    guard !writeArmed, !closed, let writeSource else { return }
    writeSource.resume()
    writeArmed = true
  }

  private func disarmWrite() {
    guard writeArmed, let writeSource else { return }
    writeSource.suspend()
    writeArmed = false
  }

  private func sourceCancelled() {
    openSources -= 1
    guard openSources == 0 else { return }
    ControlSocket.closeDescriptor(fd)
    server.connectionDidClose(id)
  }

  private func close(reason: String) {
    guard !closed else { return }
    closed = true
    logger.debug("control connection closed", metadata: ["reason": "\(reason)"])
    if let watch {
      self.watch = nil
      watch.end()
      server.watcherEnded()
    }
    idleTimer?.cancel()
    idleTimer = nil
    stopReading()
    if let writeSource {
      writeSource.cancel()
      if !writeArmed { writeSource.resume() }
      writeArmed = true
    }
    output = []
    outputStart = 0
  }

  // MARK: Reading

  private func readAvailable() {
    guard !closed else { return }
    var sawBytes = false
    withUnsafeTemporaryAllocation(byteCount: 65_536, alignment: 16) { buffer in
      reading: while !readStopped {
        switch ControlSocket.read(fd, into: buffer) {
        case .bytes(let count):
          sawBytes = true
          decoder.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
          if decoder.bufferedByteCount > highWater { break reading }
        case .wouldBlock:
          break reading
        case .endOfStream:
          peerFinished = true
          stopReading()
        case .failed(let error):
          close(reason: "read failed: \(ControlSocket.describe(errno: error))")
          return
        }
      }
    }
    guard !closed else { return }
    if sawBytes { lastActivity = .now() }
    processInput()
  }

  /// Takes calls from the buffer while none is running; handles the end of the client's input.
  private func processInput() {
    guard !processing else { return }
    processing = true
    defer { processing = false }
    while !closed && !closeWhenFlushed && !finishWhenAnswered && held == nil
      && changesInFlight < Self.maximumChangesInFlight
    {
      if watch != nil {
        if decoder.bufferedByteCount > 0 {
          logger.notice("closing a watching connection that sent another call; use a separate connection")
          close(reason: "call during Watch")
          return
        }
        break
      }
      if outputPending > highWater {
        pauseReading()
        return
      }
      let message: ArraySlice<UInt8>?
      do {
        message = try decoder.nextMessage()
      } catch {
        logger.notice("message too large; closing the connection", metadata: ["limit": "\(error.limit)"])
        answer(VarlinkReply(error: .messageTooLarge(limit: error.limit)))
        if owed.isEmpty {
          finishAfterFlush()
        } else {
          // The calls before it are answered first, then the connection closes.
          finishWhenAnswered = true
          stopReading()
        }
        return
      }
      guard let message else { break }
      handle(message)
    }
    guard !closed, !busy else {
      // Bound what a pipelining client can pile up while a call runs.
      if !closed && decoder.bufferedByteCount > highWater { pauseReading() }
      return
    }
    if decoder.bufferedByteCount <= highWater && outputPending <= highWater { resumeReading() }
    if peerFinished && watch == nil && !closeWhenFlushed {
      if decoder.hasPartialMessage {
        send(VarlinkReply(error: .invalidMessage("the message ended without its NUL terminator")))
      }
      finishAfterFlush()
    } else if peerFinished && watch != nil {
      close(reason: "the watcher disconnected")
    }
  }

  private func handle(_ message: ArraySlice<UInt8>) {
    let call: VarlinkCall
    do {
      call = try VarlinkCall.decode(message)
    } catch {
      logger.debug("invalid message", metadata: ["problem": "\(error.problem)"])
      answer(VarlinkReply(error: .invalidMessage(error.problem)))
      return
    }
    switch server.router.route(call, peer: peer) {
    case .failure(let error):
      if error.name == ControlError.Name.permissionDenied {
        logger.warning(
          "refused a call that changes trials: the caller is not root, the daemon's user or in the group",
          metadata: ["method": "\(call.method)"])
      }
      answer(oneway: call.oneway, VarlinkReply(error: error))
    case .success(.reply(let parameters)):
      answer(oneway: call.oneway, VarlinkReply(parameters: parameters))
    case .success(let request):
      if request.changesTrials ? callsInFlight > changesInFlight : busy {
        held = (call, request)
      } else {
        start(call, request)
      }
    }
  }

  /// Answers at once, or queues the reply behind those still owed.
  private func answer(oneway: Bool = false, _ reply: VarlinkReply) {
    if owed.isEmpty {
      if !oneway { send(reply) }
    } else {
      owed.append(OwedReply(oneway: oneway, reply: reply))
    }
  }

  private func start(_ call: VarlinkCall, _ request: ControlRequest) {
    if case .watch = request {
      startWatch()
      return
    }
    let slot = OwedReply(oneway: call.oneway)
    owed.append(slot)
    let change = request.changesTrials
    callsInFlight += 1
    if change { changesInFlight += 1 }
    performingThread.store(UInt(pthread_self()), ordering: .relaxed)
    defer { performingThread.store(0, ordering: .relaxed) }
    perform(request) { [self] result in
      // A backend that answers at once, on this queue's thread, is answered without a hop.
      if performingThread.load(ordering: .relaxed) == UInt(pthread_self()) {
        Self.inlineCompletions.add(1, ordering: .relaxed)
        self.finished(slot, change: change, result)
      } else {
        queue.async { self.finished(slot, change: change, result) }
      }
    }
  }

  private func perform(
    _ request: ControlRequest, _ done: @escaping @Sendable (Result<JSONObject, ControlError>) -> Void
  ) {
    let backend = server.backend
    switch request {
    case .startTrial(let parameters):
      backend.startTrial(parameters) { done($0.map { TrialReply(trial: $0).json }) }
    case .getTrial(let parameters):
      backend.getTrial(parameters) { done($0.map { TrialReply(trial: $0).json }) }
    case .listTrials(let parameters):
      backend.listTrials(parameters) { done($0.map(\.json)) }
    case .extendTrial(let parameters):
      backend.extendTrial(parameters) { done($0.map { TrialReply(trial: $0).json }) }
    case .endTrial(let parameters):
      backend.endTrial(parameters) { done($0.map { TrialReply(trial: $0).json }) }
    case .getPlan(let parameters):
      backend.getPlan(parameters) { done($0.map { EventsReply(events: $0).json }) }
    case .simulate(let parameters):
      backend.simulate(parameters) { done($0.map { EventsReply(events: $0).json }) }
    case .getStatus:
      let server = self.server
      backend.getStatus { result in
        done(
          result.map {
            GetStatusReply(
              version: server.options.version, status: $0, connections: server.connectionCount,
              watchers: server.watcherCount
            ).json
          })
      }
    case .reply(let parameters):
      done(.success(parameters))
    case .watch:
      done(.failure(.internalError("Watch is not a single call")))
    }
  }

  private func finished(_ slot: OwedReply, change: Bool, _ result: Result<JSONObject, ControlError>) {
    callsInFlight -= 1
    if change { changesInFlight -= 1 }
    guard !closed else { return }
    switch result {
    case .success(let parameters): slot.reply = VarlinkReply(parameters: parameters)
    case .failure(let error): slot.reply = VarlinkReply(error: error)
    }
    var answered = 0
    while answered < owed.count, let reply = owed[answered].reply {
      if !owed[answered].oneway { send(reply) }
      answered += 1
    }
    owed.removeFirst(answered)
    if finishWhenAnswered {
      if owed.isEmpty { finishAfterFlush() }
      return
    }
    if let held, owed.isEmpty {
      self.held = nil
      start(held.call, held.request)
    }
    processInput()
  }

  // MARK: Writing

  private var outputPending: Int { output.count - outputStart }

  private func send(_ reply: VarlinkReply) {
    guard !closed else { return }
    let before = output.count
    reply.encode(into: &output)
    bytesQueued += output.count - before
    if !writeArmed { flush() }
  }

  /// Writes what the socket takes; waits for writability for the rest.
  private func flush() {
    guard !closed else { return }
    while outputStart < output.count {
      let result = output.withUnsafeBytes {
        ControlSocket.write(fd, UnsafeRawBufferPointer(rebasing: $0[outputStart...]))
      }
      switch result {
      case .wrote(let count):
        outputStart += count
        bytesWritten += count
        lastActivity = .now()
      case .wouldBlock:
        if outputStart > 1 << 16 {
          output.removeSubrange(0..<outputStart)
          outputStart = 0
        }
        watch?.written(upTo: bytesWritten)
        armWrite()
        return
      case .failed(let error):
        close(reason: "write failed: \(ControlSocket.describe(errno: error))")
        return
      }
    }
    output.removeAll(keepingCapacity: output.capacity <= 1 << 20)
    outputStart = 0
    watch?.written(upTo: bytesWritten)
    disarmWrite()
    if closeWhenFlushed {
      close(reason: "finished")
    } else if readPaused {
      processInput()
    }
  }

  private func finishAfterFlush() {
    closeWhenFlushed = true
    stopReading()
    if outputPending == 0 { close(reason: "finished") }
  }

  // MARK: Idle timeout

  private func checkIdle() {
    guard !closed, let idleTimer else { return }
    let timeout = server.options.idleTimeout.dispatchInterval
    let deadline = lastActivity + timeout
    if busy || watch != nil || deadline > .now() {
      idleTimer.schedule(deadline: busy || watch != nil ? .now() + timeout : deadline)
      return
    }
    logger.debug("closing an idle control connection")
    close(reason: "idle")
  }

  // MARK: Watch

  private func startWatch() {
    let relay = WatchRelay(connection: self, backlog: server.options.watchBacklog)
    let stream = WatchStream(relay: relay)
    watch = stream
    server.watcherStarted()
    stream.subscription = server.backend.watch(relay)
    logger.debug("watch started")
    send(VarlinkReply(parameters: WatchReply(event: nil).json, continues: true))
  }

  /// An event from the relay, on the connection's queue.
  fileprivate func deliverWatchEvent(_ event: EventObject) {
    guard !closed, let watch else { return }
    let before = output.count
    VarlinkReply(parameters: WatchReply(event: event).json, continues: true).encode(into: &output)
    bytesQueued += output.count - before
    watch.queued(endingAt: bytesQueued)
    if !writeArmed { flush() }
  }

  fileprivate func watcherOverflowed(backlog: Int) {
    guard !closed else { return }
    logger.warning(
      "disconnecting a watcher that fell behind", metadata: ["backlog": "\(backlog) events"])
    close(reason: "watcher fell behind")
  }

  fileprivate func watchFinishedByBackend() {
    guard !closed, watch != nil else { return }
    close(reason: "the backend ended the watch")
  }
}

/// A running Watch on a connection: the backend's subscription, and which queued bytes end
/// an event, to count how far the watcher is behind.
private final class WatchStream {
  let relay: WatchRelay
  var subscription: (any WatchSubscription)?
  private var eventEnds: [Int] = []
  private var head = 0

  init(relay: WatchRelay) {
    self.relay = relay
  }

  func queued(endingAt offset: Int) {
    eventEnds.append(offset)
  }

  func written(upTo offset: Int) {
    var done = 0
    while head < eventEnds.count, eventEnds[head] <= offset {
      head += 1
      done += 1
    }
    if head > 1024 && head * 2 > eventEnds.count {
      eventEnds.removeSubrange(0..<head)
      head = 0
    }
    if done > 0 { relay.written(done) }
  }

  func end() {
    relay.stop()
    subscription?.cancel()
    subscription = nil
  }
}

/// The subscriber handed to the backend. `deliver` costs the backend a counter update and an
/// asynchronous hand-off, never a wait: once `backlog` events are queued and not yet taken by
/// the watcher's socket, the watcher is cut off and further events are dropped.
private final class WatchRelay: WatchSubscriber, @unchecked Sendable {
  private struct Counts {
    var queued = 0
    var stopped = false
  }

  private weak var connection: ControlConnection?
  private let queue: DispatchQueue
  private let backlog: Int
  private let counts = Mutex(Counts())

  init(connection: ControlConnection, backlog: Int) {
    self.connection = connection
    self.queue = connection.queue
    self.backlog = backlog
  }

  func deliver(_ event: EventObject) {
    enum Action { case drop, send, overflow }
    let action: Action = counts.withLock { counts in
      if counts.stopped { return .drop }
      counts.queued += 1
      if counts.queued > backlog {
        counts.stopped = true
        return .overflow
      }
      return .send
    }
    switch action {
    case .drop:
      return
    case .send:
      queue.async { [weak connection] in connection?.deliverWatchEvent(event) }
    case .overflow:
      let backlog = self.backlog
      queue.async { [weak connection] in connection?.watcherOverflowed(backlog: backlog) }
    }
  }

  func finish() {
    counts.withLock { $0.stopped = true }
    queue.async { [weak connection] in connection?.watchFinishedByBackend() }
  }

  func written(_ count: Int) {
    counts.withLock { $0.queued -= count }
  }

  func stop() {
    counts.withLock { $0.stopped = true }
  }
}

extension Duration {
  var dispatchInterval: DispatchTimeInterval {
    let (seconds, attoseconds) = components
    return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
  }
}
