import Synchronization
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// A request to stop (SIGTERM, SIGINT): a flag, and a pipe that becomes readable, so that a
/// thread blocked reading the daemon's stream, or waiting before it connects again, wakes at
/// once. Nothing polls it.
final class StopRequest: Sendable {
  private let flag = Atomic<Bool>(false)
  /// Readable once a stop was asked for.
  let descriptor: Int32
  private let writeEnd: Int32

  init() {
    var ends: [Int32] = [-1, -1]
    precondition(pipe(&ends) == 0, "cannot make a pipe: \(errno)")
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    descriptor = ends[0]
    writeEnd = ends[1]
  }

  /// Asks for the stop (once; later calls do nothing).
  func request() {
    guard !flag.exchange(true, ordering: .sequentiallyConsistent) else { return }
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  var requested: Bool { flag.load(ordering: .sequentiallyConsistent) }

  /// Waits `delay` with `poll(2)` on the pipe (no clock is read); false when a stop request
  /// ended the wait.
  func wait(_ delay: Duration) -> Bool {
    let (seconds, attoseconds) = delay.components
    var left = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    repeat {
      let chunk = Int32(clamping: left)
      var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      let ready = poll(&descriptors, 1, chunk)
      if ready > 0 || requested { return false }
      if ready == 0 { left -= Int64(chunk) }
    } while left > 0
    return !requested
  }

  /// Blocks SIGTERM and SIGINT in the calling thread, and only them (a mask survives exec:
  /// the parent's is not kept), which every thread started after inherits, and takes them on a
  /// thread of its own with `sigwaitinfo(2)`: each asks for the stop. Call it before any other
  /// thread starts.
  static func onSignals() -> StopRequest {
    let stop = StopRequest()
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    pthread_sigmask(SIG_SETMASK, &set, nil)
    let watched = set
    startThread {
      var waiting = watched
      while sigwaitinfo(&waiting, nil) < 0 {}
      stop.request()
    }
    return stop
  }
}
