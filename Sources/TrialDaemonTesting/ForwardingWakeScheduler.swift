import Foundation
import TrialCore

/// A scheduler that hands to `inner` whatever it does not do itself: the clocks and the
/// wall-clock deadlines; its own `schedule(after:)` is what a test changes.
public protocol ForwardingWakeScheduler: WakeScheduler {
  var inner: any WakeScheduler { get }
}

extension ForwardingWakeScheduler {
  public var clock: any WallClock { inner.clock }
  public var monotonicNow: TimeInterval { inner.monotonicNow }

  @discardableResult
  public func schedule(at deadline: Date, label: String, _ action: @escaping () -> Void) -> any ScheduledWake
  {
    inner.schedule(at: deadline, label: label, action)
  }
}
