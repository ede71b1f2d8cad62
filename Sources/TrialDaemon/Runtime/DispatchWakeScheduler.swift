import Dispatch
import FoundationEssentials
import TrialCore
import TrialEngine

#if canImport(Glibc)
  import Glibc
#endif

/// The real `WakeScheduler`: Dispatch timers on the daemon's one serial queue. Wall-clock
/// deadlines use `DispatchWallTime`; delays use monotonic `DispatchTime`. Every action runs
/// on `queue`, which owns all daemon state.
public final class DispatchWakeScheduler: WakeScheduler, @unchecked Sendable {
  // @unchecked: only touched from `queue` (the engine's serial context).
  public let queue: DispatchQueue
  public let clock: any WallClock

  public init(queue: DispatchQueue, clock: any WallClock = SystemWallClock()) {
    self.queue = queue
    self.clock = clock
  }

  /// CLOCK_BOOTTIME: monotonic, and counts time spent suspended.
  public var monotonicNow: TimeInterval {
    var spec = timespec()
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1e9
  }

  /// CLOCK_MONOTONIC: stops while the system is suspended. journald counts its rate limit's
  /// windows on it, so the journal's pacing does too (`JournalEventSink`).
  public static var journalNow: TimeInterval {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1e9
  }

  private final class TimerWake: ScheduledWake, @unchecked Sendable {
    // @unchecked: created, fired and cancelled on the scheduler's queue.
    var source: (any DispatchSourceTimer)?

    func cancel() {
      source?.cancel()
      source = nil
    }
  }

  private final class AsyncWake: ScheduledWake, @unchecked Sendable {
    var cancelled = false
    func cancel() { cancelled = true }
  }

  /// Carries a non-Sendable action to the queue that owns it.
  private struct QueueBound<T>: @unchecked Sendable {
    let value: T
  }

  @discardableResult
  public func schedule(at deadline: Date, label: String, _ action: @escaping () -> Void) -> any ScheduledWake
  {
    let seconds = deadline.timeIntervalSince1970
    let whole = seconds.rounded(.down)
    let spec = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    return makeTimer(action) {
      $0.schedule(wallDeadline: DispatchWallTime(timespec: spec), leeway: .nanoseconds(0))
    }
  }

  @discardableResult
  public func schedule(after delay: TimeInterval, label: String, _ action: @escaping () -> Void)
    -> any ScheduledWake
  {
    if delay <= 0 {
      let wake = AsyncWake()
      let bound = QueueBound(value: action)
      queue.async {
        if !wake.cancelled { bound.value() }
      }
      return wake
    }
    let nanos = Int(min(delay, 1e9) * 1e9)
    return makeTimer(action) { $0.schedule(deadline: .now() + .nanoseconds(nanos), leeway: .nanoseconds(0)) }
  }

  private func makeTimer(_ action: @escaping () -> Void, arm: (any DispatchSourceTimer) -> Void) -> TimerWake
  {
    let wake = TimerWake()
    let source = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
    let bound = QueueBound(value: action)
    // The handler holds the wake (and so the source) until it fires or is cancelled, so a
    // caller may drop the returned wake without losing the action.
    source.setEventHandler {
      guard let timer = wake.source else { return }
      timer.cancel()
      wake.source = nil
      bound.value()
    }
    arm(source)
    wake.source = source
    source.resume()
    return wake
  }
}
