import FoundationEssentials

/// A pending wake-up that can be called off.
public protocol ScheduledWake: AnyObject {
  func cancel()
}

/// The scheduling abstraction the engine runs on. The daemon's implementation arms
/// Dispatch timers on its serial queue; the test implementation (`TestScheduler` in
/// TrialTesting) runs in virtual time. Actions run one at a time, on the owner's queue.
public protocol WakeScheduler: AnyObject {
  /// The wall clock the scheduler's deadlines refer to.
  var clock: any WallClock { get }

  /// Monotonic time in seconds, counting time spent suspended but unaffected by wall-clock
  /// steps (CLOCK_BOOTTIME on Linux). Comparing it with the wall clock reveals a step.
  var monotonicNow: TimeInterval { get }

  /// Runs `action` once the wall clock reaches `deadline`. A wall-clock deadline: a clock
  /// step moves it closer or further away.
  @discardableResult
  func schedule(at deadline: Date, label: String, _ action: @escaping () -> Void) -> any ScheduledWake

  /// Runs `action` after `delay` of monotonic time, which clock steps do not affect.
  @discardableResult
  func schedule(after delay: TimeInterval, label: String, _ action: @escaping () -> Void)
    -> any ScheduledWake
}
