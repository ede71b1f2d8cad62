import Foundation
import Testing
import TrialCore

/// Virtual time: a `WakeScheduler` that owns a manual clock and runs actions only when the
/// test moves time. Synchronous and deterministic: nothing waits in real time.
///
/// Two timelines move together: the wall clock (for `schedule(at:)`) and a monotonic one
/// (for `schedule(after:)`). `advance` and `jump` move both; `setWallTime` steps only the
/// wall clock, as a clock step on a real machine does.
public final class TestScheduler: WakeScheduler {
  public enum Timeline: Hashable, Sendable {
    case wall
    case monotonic
  }

  /// An action waiting for its deadline.
  public struct PendingAction: Hashable, Sendable, CustomStringConvertible {
    public var label: String
    public var timeline: Timeline
    /// For wall actions the wall date; for monotonic ones, the wall date it would fall due
    /// if the wall clock is not stepped.
    public var deadline: Date
    public var description: String { "\(label) at \(deadline) (\(timeline))" }
  }

  fileprivate final class Action: ScheduledWake {
    let seq: UInt64
    let label: String
    let timeline: Timeline
    /// Wall: seconds since the reference date. Monotonic: seconds of virtual monotonicNow.
    let deadline: Double
    var body: (() -> Void)?
    weak var owner: TestScheduler?

    init(seq: UInt64, label: String, timeline: Timeline, deadline: Double, body: @escaping () -> Void) {
      self.seq = seq
      self.label = label
      self.timeline = timeline
      self.deadline = deadline
      self.body = body
    }

    func cancel() {
      body = nil
      owner?.remove(self)
    }
  }

  public let manualClock: ManualWallClock
  public var clock: any WallClock { manualClock }
  /// Virtual monotonic time since the scheduler was made.
  public private(set) var monotonicNow: TimeInterval = 0
  private var actions: [Action] = []
  private var seq: UInt64 = 0
  /// Counts `setWallTime` calls, so that `advance` knows whether the wall clock was stepped.
  private var wallSteps = 0
  /// Every action run, in order, with the wall time it ran at.
  public private(set) var log: [(label: String, at: Date)] = []

  public init(now: Date) {
    manualClock = ManualWallClock(now)
  }

  public var now: Date { manualClock.now() }

  @discardableResult
  public func schedule(at deadline: Date, label: String, _ action: @escaping () -> Void) -> any ScheduledWake
  {
    add(label: label, timeline: .wall, deadline: deadline.timeIntervalSinceReferenceDate, action)
  }

  @discardableResult
  public func schedule(after delay: TimeInterval, label: String, _ action: @escaping () -> Void)
    -> any ScheduledWake
  {
    add(label: label, timeline: .monotonic, deadline: monotonicNow + max(0, delay), action)
  }

  private func add(label: String, timeline: Timeline, deadline: Double, _ body: @escaping () -> Void)
    -> Action
  {
    seq += 1
    let action = Action(seq: seq, label: label, timeline: timeline, deadline: deadline, body: body)
    action.owner = self
    actions.append(action)
    return action
  }

  fileprivate func remove(_ action: Action) {
    actions.removeAll { $0 === action }
  }

  /// Virtual seconds from now until the action falls due (negative when overdue).
  private func remaining(_ action: Action) -> Double {
    switch action.timeline {
    case .wall: action.deadline - now.timeIntervalSinceReferenceDate
    case .monotonic: action.deadline - monotonicNow
    }
  }

  /// The earliest action due by the limits (wall: seconds since the reference date;
  /// monotonic: monotonicNow); ties go to the one scheduled first.
  private func nextAction(wallLimit: Double, uptimeLimit: Double) -> (Action, Double)? {
    var best: (Action, Double)?
    for action in actions {
      let limit = action.timeline == .wall ? wallLimit : uptimeLimit
      guard action.deadline <= limit else { continue }
      let wait = remaining(action)
      if let current = best, current.1 < wait || (current.1 == wait && current.0.seq < action.seq) {
        continue
      }
      best = (action, wait)
    }
    return best
  }

  private func run(_ action: Action) {
    remove(action)
    guard let body = action.body else { return }
    action.body = nil
    log.append((action.label, now))
    body()
  }

  /// Moves time forward by `interval`, running every action that falls due on the way, in
  /// deadline order, with the clock reading each action's deadline while it runs. Actions
  /// scheduled by a running action fire too if they fall due within the interval.
  public func advance(by interval: TimeInterval = 0) {
    precondition(interval >= 0, "virtual time only moves forward; use setWallTime for a step back")
    // Targets are computed once, so that rounding does not pile up over many steps.
    let uptimeTarget = monotonicNow + interval
    let wallTarget = now.addingTimeInterval(interval)
    let steps = wallSteps
    while true {
      let wallLimit =
        wallSteps == steps
        ? wallTarget.timeIntervalSinceReferenceDate
        : now.timeIntervalSinceReferenceDate + (uptimeTarget - monotonicNow)
      guard let (action, wait) = nextAction(wallLimit: wallLimit, uptimeLimit: uptimeTarget) else { break }
      if wait > 0 {
        // Land exactly on the deadline, on the action's own timeline.
        switch action.timeline {
        case .wall:
          manualClock.set(Date(timeIntervalSinceReferenceDate: action.deadline))
          monotonicNow += wait
        case .monotonic:
          manualClock.advance(by: wait)
          monotonicNow = action.deadline
        }
      }
      run(action)
    }
    let left = uptimeTarget - monotonicNow
    // A wall deadline can land a rounding error past the target; monotonicNow ends on it anyway.
    monotonicNow = uptimeTarget
    if wallSteps == steps {
      manualClock.set(wallTarget)
    } else if left > 0 {
      manualClock.advance(by: left)
    }
  }

  /// Moves time forward to `date` on the wall clock, as `advance(by:)`.
  public func advance(to date: Date) {
    advance(by: max(0, date.timeIntervalSince(now)))
  }

  /// Suspend and resume: time moves at once by `interval`; then each overdue action runs
  /// once, at the new time, in deadline order. Actions they schedule run only if due at
  /// the new time.
  public func jump(by interval: TimeInterval) {
    precondition(interval >= 0, "a jump moves forward; use setWallTime for a step back")
    move(by: interval)
    advance(by: 0)
  }

  /// A wall-clock step, forward or back. Runs nothing by itself: call `advance` (or let the
  /// code under test react to the step) to see what it causes.
  public func setWallTime(_ date: Date) {
    manualClock.set(date)
    wallSteps += 1
  }

  private func move(by interval: TimeInterval) {
    guard interval > 0 else { return }
    manualClock.advance(by: interval)
    monotonicNow += interval
  }

  /// The actions still waiting, in the order they would run.
  public var pending: [PendingAction] {
    actions.map { ($0, remaining($0)) }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.seq < $1.0.seq }.map {
      PendingAction(
        label: $0.0.label, timeline: $0.0.timeline,
        deadline: now.addingTimeInterval($0.1))
    }
  }

  /// The teardown check: records a test failure for every pending action whose label is
  /// not in `allowed`.
  public func expectNoPendingActions(
    allowing allowed: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    for action in pending where !allowed.contains(action.label) {
      Issue.record("action left pending at teardown: \(action)", sourceLocation: sourceLocation)
    }
  }
}

/// Runs `body` with a fresh test scheduler and fails the test if it leaves actions pending
/// other than `allowing`.
public func withTestScheduler<R>(
  now: Date, allowing allowed: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation,
  _ body: (TestScheduler) throws -> R
) rethrows -> R {
  let scheduler = TestScheduler(now: now)
  defer { scheduler.expectNoPendingActions(allowing: allowed, sourceLocation: sourceLocation) }
  return try body(scheduler)
}
