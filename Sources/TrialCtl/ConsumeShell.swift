import Dispatch
import FoundationEssentials
import Synchronization
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// SIGTERM and SIGINT as a stop request for `consume`: blocked in every thread and taken by
/// one thread of its own with `sigwaitinfo(2)` (as trialwatchd takes its signals), which
/// raises a flag, makes a pipe readable, and calls the handlers. Waits on the pipe end early.
public final class StopSignal: StopAwareWaiting, Sendable {
  private let flag = Atomic<Bool>(false)
  /// Readable once a stop was asked for: the Watch stream's read watches it.
  public let descriptor: Int32
  private let writeEnd: Int32
  private let handlers = Mutex<[@Sendable () -> Void]>([])

  private init() {
    let pipe = closeOnExecPipe() ?? (-1, -1)
    descriptor = pipe.read
    writeEnd = pipe.write
  }

  /// Blocks SIGTERM and SIGINT in the calling thread, which every thread started after
  /// inherits (call it before any other starts; Dispatch's own threads block them anyway),
  /// and takes them on a thread of its own.
  public static func install() -> StopSignal {
    let stop = StopSignal()
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    let watched = set
    startThread {
      var waiting = watched
      while sigwaitinfo(&waiting, nil) < 0 {}
      stop.stop()
    }
    return stop
  }

  /// `handler` runs once, on the thread that asks for the stop.
  public func onStop(_ handler: @escaping @Sendable () -> Void) {
    handlers.withLock { $0.append(handler) }
  }

  public func stop() {
    guard !flag.exchange(true, ordering: .sequentiallyConsistent) else { return }
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
    for handler in handlers.withLock({ $0 }) { handler() }
  }

  public var isStopping: Bool { flag.load(ordering: .sequentiallyConsistent) }

  /// Waits `delay` with `poll(2)` on the pipe (no clock is read); false when a stop request
  /// ended the wait.
  public func wait(_ delay: Duration) -> Bool {
    var left = Int64(delay.components.seconds) * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
    repeat {
      let chunk = Int32(clamping: left)
      var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      let ready = poll(&descriptors, 1, chunk)
      if ready > 0 || isStopping { return false }
      if ready == 0 { left -= Int64(chunk) }
    } while left > 0
    return !isStopping
  }
}

/// The daemon as the consume loop reaches it: a connection for GetConsumer, CreateConsumer,
/// GetEventLog and AcknowledgeEvent, and one that each Watch takes over.
public final class DaemonConsumerLink: ConsumerLink {
  /// The longest wait for connecting and for each reply of the calls (not of the Watch).
  public static let callTimeout = 60.0

  private let path: String
  private let interrupt: Int32
  private var calls: VarlinkClient?
  private var watching: VarlinkClient?

  /// - Parameter interrupt: a descriptor that becomes readable on a stop request; it ends a
  ///   wait for the next event.
  public init(path: String, interrupt: Int32) {
    self.path = path
    self.interrupt = interrupt
  }

  public func consumer(named name: String) throws(LinkFailure) -> ConsumerObject {
    try call(Trials.getConsumer, ConsumerNameParameters(name: name)).consumer
  }

  public func createConsumer(_ parameters: CreateConsumerParameters) throws(LinkFailure) -> ConsumerObject {
    try call(Trials.createConsumer, parameters).consumer
  }

  public func eventLog() throws(LinkFailure) -> EventLogObject {
    try call(Trials.getEventLog, NoParameters()).log
  }

  public func sendAcknowledgement(_ cursor: EventCursor, consumer: String) throws(LinkFailure) {
    let parameters = AcknowledgeEventParameters(consumer: consumer, cursor: cursor)
    do throws(VarlinkClientError) {
      try callClient().send(
        OutgoingCall(method: Trials.acknowledgeEvent.qualifiedName, parameters: parameters))
    } catch {
      throw dropCalls(error)
    }
  }

  public func acknowledgementReply() throws(LinkFailure) -> ConsumerObject {
    do throws(VarlinkClientError) {
      let client = try callClient()
      return try client.decode(try client.receive(), as: ConsumerReply.self).consumer
    } catch {
      throw dropCalls(error)
    }
  }

  public func watch(after cursor: EventCursor) throws(LinkFailure) -> any EventStream {
    watching?.close()
    watching = nil
    do {
      let client = try VarlinkClient(path: path)
      try client.send(
        OutgoingCall(
          method: Trials.watch.qualifiedName, parameters: WatchParameters(after: cursor), more: true))
      watching = client
      return DaemonEventStream(client: client, interrupt: interrupt)
    } catch {
      throw Self.failure(error)
    }
  }

  public func reset() {
    calls?.close()
    calls = nil
    watching?.close()
    watching = nil
  }

  private func call<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P) throws(LinkFailure) -> R {
    do throws(VarlinkClientError) {
      return try callClient().call(method, parameters)
    } catch {
      throw dropCalls(error)
    }
  }

  /// The connection for calls, connected first if need be.
  private func callClient() throws(VarlinkClientError) -> VarlinkClient {
    if let calls { return calls }
    let client = try VarlinkClient(path: path, timeout: Self.callTimeout)
    calls = client
    return client
  }

  /// The failure `error` means; the connection is dropped unless it carried a reply with an
  /// error, which leaves it usable.
  private func dropCalls(_ error: VarlinkClientError) -> LinkFailure {
    if error.kind != .remote {
      calls?.close()
      calls = nil
    }
    return Self.failure(error)
  }

  static func failure(_ error: VarlinkClientError) -> LinkFailure {
    if let remote = error.remoteError { return .refused(remote) }
    let failure = CtlFailure(error)
    if failure.exitCode == .permissionDenied { return .denied(failure.message) }
    return .unavailable(error.description)
  }
}

/// The events of one Watch call, read as they come.
final class DaemonEventStream: EventStream {
  private let client: VarlinkClient
  private let interrupt: Int32

  init(client: VarlinkClient, interrupt: Int32) {
    self.client = client
    self.interrupt = interrupt
  }

  func next(beforeWaiting: () throws(LinkFailure) -> Void) throws(LinkFailure) -> EventObject? {
    var waited = false
    do {
      while true {
        if !waited && !client.hasReplyArriving {
          waited = true
          try beforeWaiting()
        }
        guard let reply = try client.receive(interruptedBy: interrupt) else { return nil }
        let watched = try client.decode(reply, as: WatchReply.self)
        if let event = watched.event { return event }
        // The first reply: the watch is in place.
        if !reply.continues {
          throw LinkFailure.unavailable("the daemon at \(client.path) ended the watch")
        }
      }
    } catch let failure as LinkFailure {
      throw failure
    } catch let error as VarlinkClientError {
      throw DaemonConsumerLink.failure(error)
    } catch {
      throw .unavailable("\(error)")
    }
  }
}

/// A pipe whose ends are closed on exec (made before any command is spawned from another
/// thread: consume spawns from one thread only).
func closeOnExecPipe() -> (read: Int32, write: Int32)? {
  var ends: [Int32] = [-1, -1]
  guard pipe(&ends) == 0 else { return nil }
  for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
  return (ends[0], ends[1])
}
