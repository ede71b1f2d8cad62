import CTimerFD
import Dispatch
import ErrnoText

#if canImport(Glibc)
  import Glibc
#endif

/// Reports wall-clock steps as the kernel sees them: a CLOCK_REALTIME timerfd armed with
/// TFD_TIMER_CANCEL_ON_SET is cancelled whenever the clock is set. The only importer of
/// CTimerFD.
public final class ClockStepWatcher: @unchecked Sendable {
  // @unchecked: the source and its fd are used only from `queue`.
  public struct SetupError: Error, CustomStringConvertible {
    public var call: String
    public var errno: Int32
    public var description: String { "\(call) failed: \(errnoText(errno))" }
  }

  private let fd: Int32
  private let source: any DispatchSourceRead

  /// Calls `onStep` on `queue` after every change of the wall clock.
  public init(queue: DispatchQueue, onStep: @escaping @Sendable () -> Void) throws {
    let fd = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
    guard fd >= 0 else { throw SetupError(call: "timerfd_create", errno: errno) }
    self.fd = fd
    try ClockStepWatcher.arm(fd)
    source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    source.setEventHandler {
      var expirations: UInt64 = 0
      let count = read(fd, &expirations, MemoryLayout<UInt64>.size)
      let stepped = count < 0 && errno == ECANCELED
      // Re-arm in every case: after a cancellation the timer must be set again to keep watching.
      try? ClockStepWatcher.arm(fd)
      if stepped { onStep() }
    }
    source.setCancelHandler { close(fd) }
    source.resume()
  }

  /// Arms the timer at the far future, absolute, cancelled on any clock set.
  private static func arm(_ fd: Int32) throws {
    var spec = itimerspec()
    spec.it_value.tv_sec = Int(Int32.max)
    let flags = Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)
    guard timerfd_settime(fd, flags, &spec, nil) == 0 else {
      throw SetupError(call: "timerfd_settime", errno: errno)
    }
  }

  public func stop() {
    source.cancel()
  }
}
