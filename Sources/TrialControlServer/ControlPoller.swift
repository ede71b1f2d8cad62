import CEpoll
import FoundationEssentials
import Synchronization
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// Reads the control connections: one thread of its own, blocked in `epoll_wait` (no timeout)
/// while no connection has anything to read, so an idle daemon does not wake.
///
/// When a connection's socket becomes readable the thread itself reads, parses and answers
/// on the connection's serial queue (`queue.sync`, which runs the block on the calling thread
/// once the queue is free): a read is answered and its reply written without any other
/// thread waking. Changes go on to the engine's queue, and their replies come back to the
/// connection's queue from there.
///
/// Events carry the connection's id, never a pointer: an event for a connection deregistered
/// meanwhile (or for a descriptor number closed and reused) finds nothing in the table, or
/// finds a connection that has stopped reading and ignores it. No lock is held while the
/// thread waits for a connection's queue, and a connection never waits for this thread; a
/// connection busy on its queue delays the thread, no more.
final class ControlPoller: @unchecked Sendable {
  // @unchecked: the descriptors are immutable; the table and the flags are behind `state`.
  private let epollFD: Int32
  private let wakeFD: Int32

  private struct State {
    var connections: [UInt64: ControlConnection] = [:]
    var started = false
    var stopping = false
  }

  private let state = Mutex(State())
  /// The id the wake-up descriptor carries; connection ids count up from 1.
  private static let wakeID = UInt64.max

  /// - Throws: `ControlServerError` when the kernel gives no epoll instance or eventfd.
  init() throws(ControlServerError) {
    let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epollFD >= 0 else {
      throw .system("cannot create an epoll instance for the control socket", errno: errno)
    }
    let wakeFD = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
    guard wakeFD >= 0 else {
      let error = errno
      _ = Glibc.close(epollFD)
      throw .system("cannot create an eventfd for the control socket", errno: error)
    }
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.u64 = Self.wakeID
    guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
      let error = errno
      _ = Glibc.close(wakeFD)
      _ = Glibc.close(epollFD)
      throw .system("cannot watch the control poller's eventfd", errno: error)
    }
    self.epollFD = epollFD
    self.wakeFD = wakeFD
  }

  deinit {
    _ = Glibc.close(wakeFD)
    _ = Glibc.close(epollFD)
  }

  /// Starts the thread (once; not after `stop`).
  func start() {
    let first = state.withLock { state in
      guard !state.started && !state.stopping else { return false }
      state.started = true
      return true
    }
    guard first else { return }
    startThread { self.run() }
  }

  /// Ends the thread once it has handled the events it holds.
  func stop() {
    let wake = state.withLock { state in
      defer { state.stopping = true }
      return state.started && !state.stopping
    }
    guard wake else { return }
    var one: UInt64 = 1
    _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, $0.count) }
  }

  // MARK: Registration (called on the connection's queue)

  /// Watches `fd` for `connection`, reading at once.
  func register(_ connection: ControlConnection, fd: Int32) {
    state.withLock { $0.connections[connection.id] = connection }
    control(EPOLL_CTL_ADD, fd: fd, id: connection.id)
  }

  /// Pauses or resumes watching `fd` (the connection's backpressure). Paused, the descriptor
  /// leaves the epoll set altogether: a hang-up is reported even with no events asked for,
  /// and would wake the thread again and again while the connection wants no input.
  func setReading(_ reading: Bool, _ connection: ControlConnection, fd: Int32) {
    if reading {
      control(EPOLL_CTL_ADD, fd: fd, id: connection.id)
    } else {
      var event = epoll_event()
      _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }
  }

  /// Stops watching `fd`; it may be closed once this returns.
  func deregister(_ connection: ControlConnection, fd: Int32) {
    var event = epoll_event()
    _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)  // ENOENT while paused: nothing to do
    state.withLock { _ = $0.connections.removeValue(forKey: connection.id) }
  }

  private func control(_ operation: Int32, fd: Int32, id: UInt64) {
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.u64 = id
    _ = epoll_ctl(epollFD, operation, fd, &event)
  }

  // MARK: The thread

  private func run() {
    let capacity = 64
    let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
    defer { events.deallocate() }
    while true {
      let count = epoll_wait(epollFD, events, Int32(capacity), -1)
      if count < 0 {
        if errno == EINTR { continue }
        return
      }
      for index in 0..<Int(count) {
        let id = events[index].data.u64
        if id == Self.wakeID {
          var value: UInt64 = 0
          _ = withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, $0.count) }
          if state.withLock({ $0.stopping }) { return }
          continue
        }
        guard let connection = state.withLock({ $0.connections[id] }) else { continue }
        connection.readOnPoller()
      }
    }
  }
}
