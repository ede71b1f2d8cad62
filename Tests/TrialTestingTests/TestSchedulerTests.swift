import Foundation
import Testing
import TrialCore
import TrialTesting

struct TestSchedulerTests {
  let start = Date(timeIntervalSinceReferenceDate: 760_000_000)

  /// Records what ran, and what the clock read while it ran.
  final class Recorder {
    var runs: [(label: String, at: Date)] = []

    func action(_ label: String, on scheduler: TestScheduler) -> () -> Void {
      { [unowned self, unowned scheduler] in self.runs.append((label, scheduler.now)) }
    }

    /// Schedules an action for each label, at its deadline in seconds after `start`.
    func schedule(
      _ deadlines: KeyValuePairs<String, TimeInterval>, on scheduler: TestScheduler, after start: Date
    ) {
      for (label, seconds) in deadlines {
        scheduler.schedule(at: start + seconds, label: label, action(label, on: scheduler))
      }
    }

    var labels: [String] { runs.map(\.label) }
    var times: [Date] { runs.map(\.at) }
  }

  @Test func advance_RunsActionsInDeadlineOrder() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    recorder.schedule(["c": 30, "a": 10, "b": 20], on: scheduler, after: start)
    scheduler.advance(by: 25)
    #expect(recorder.labels == ["a", "b"])
    #expect(scheduler.now == start + 25)
    scheduler.advance(by: 5)
    #expect(recorder.labels == ["a", "b", "c"])
    #expect(scheduler.log.map(\.label) == ["a", "b", "c"])
    #expect(scheduler.pending.isEmpty)
  }

  @Test func advance_EqualDeadlines_RunFirstInFirstOut() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    for label in ["3", "1", "2"] {
      scheduler.schedule(at: start + 60, label: label, recorder.action(label, on: scheduler))
    }
    // A monotonic action due at the same instant keeps its place in line too.
    scheduler.schedule(after: 60, label: "m", recorder.action("m", on: scheduler))
    scheduler.schedule(at: start + 60, label: "4", recorder.action("4", on: scheduler))
    scheduler.advance(by: 60)
    #expect(recorder.labels == ["3", "1", "2", "m", "4"])
    #expect(recorder.times.allSatisfy { $0 == start + 60 })
  }

  @Test func advance_ClockReadsEachActionsDeadlineWhileItRuns() {
    // Deadlines that are not whole seconds, from an origin that is not either.
    let origin = Date(timeIntervalSinceReferenceDate: 0.7)
    let scheduler = TestScheduler(now: origin)
    let recorder = Recorder()
    let deadlines = [0.1, 0.2, 0.3, 1.9, 86_400.123].map { origin.addingTimeInterval($0) }
    for (index, deadline) in deadlines.enumerated() {
      scheduler.schedule(at: deadline, label: "\(index)", recorder.action("\(index)", on: scheduler))
    }
    scheduler.advance(by: 100_000.05)
    #expect(recorder.times == deadlines)
    #expect(scheduler.now == origin.addingTimeInterval(100_000.05))
    #expect(scheduler.monotonicNow == 100_000.05)
  }

  @Test(arguments: [(0.7, 0.1), (0.1, 0.2), (1e-3, 0.3), (760_000_000.3, 0.6), (3.3, 1e-9)])
  func advance_ByTheDistanceToADeadline_RunsIt(origin: Double, distance: Double) {
    let start = Date(timeIntervalSinceReferenceDate: origin)
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    let deadline = start.addingTimeInterval(distance)
    scheduler.schedule(at: deadline, label: "due", recorder.action("due", on: scheduler))
    scheduler.advance(by: distance)
    #expect(recorder.times == [deadline])
    #expect(scheduler.now == deadline)
    scheduler.expectNoPendingActions()
  }

  @Test func advance_ActionsScheduledByACallback_FireInTheSameAdvanceWhenDue() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    scheduler.schedule(at: start + 10, label: "first") { [unowned scheduler] in
      recorder.runs.append(("first", scheduler.now))
      scheduler.schedule(at: start + 15, label: "second", recorder.action("second", on: scheduler))
      scheduler.schedule(after: 20, label: "third", recorder.action("third", on: scheduler))
      scheduler.schedule(at: start + 5, label: "overdue", recorder.action("overdue", on: scheduler))
      scheduler.schedule(at: start + 100, label: "later", recorder.action("later", on: scheduler))
    }
    scheduler.advance(by: 30)
    #expect(recorder.labels == ["first", "overdue", "second", "third"])
    #expect(recorder.times == [start + 10, start + 10, start + 15, start + 30])
    #expect(scheduler.pending.map(\.label) == ["later"])
  }

  @Test func cancel_PreventsTheActionFromRunning() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    let doomed = scheduler.schedule(at: start + 20, label: "doomed", recorder.action("doomed", on: scheduler))
    scheduler.schedule(at: start + 10, label: "canceller") { doomed.cancel() }
    let other = scheduler.schedule(after: 5, label: "other", recorder.action("other", on: scheduler))
    other.cancel()
    other.cancel()
    scheduler.advance(by: 60)
    #expect(recorder.labels.isEmpty)
    #expect(scheduler.log.map(\.label) == ["canceller"])
  }

  @Test func jump_EachOverdueActionRunsOnceAtTheNewTime() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    recorder.schedule(["b": 100, "a": 50, "after": 7_200], on: scheduler, after: start)
    // A heartbeat that re-arms itself every minute runs once, not sixty times.
    var beats = 0
    func beat() {
      beats += 1
      scheduler.schedule(after: 60, label: "beat") { beat() }
    }
    scheduler.schedule(after: 60, label: "beat") { beat() }

    scheduler.jump(by: 3_600)
    #expect(recorder.labels == ["a", "b"])
    #expect(
      recorder.times == [start + 3_600, start + 3_600], "lateness is visible: they run at the new time")
    #expect(beats == 1)
    #expect(scheduler.now == start + 3_600)
    #expect(scheduler.pending.map(\.label) == ["beat", "after"])
    #expect(scheduler.pending.first?.deadline == start + 3_660)

    scheduler.advance(by: 3_600)
    #expect(recorder.labels == ["a", "b", "after"])
    #expect(beats == 61)
    scheduler.expectNoPendingActions(allowing: ["beat"])
  }

  @Test func setWallTime_FiresNothingByItself() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    scheduler.schedule(at: start + 60, label: "wall", recorder.action("wall", on: scheduler))
    scheduler.setWallTime(start + 3_600)
    #expect(recorder.runs.isEmpty)
    #expect(scheduler.now == start + 3_600)
    #expect(scheduler.monotonicNow == 0, "a wall step is not elapsed time")
    scheduler.advance(by: 0)
    #expect(recorder.labels == ["wall"])
    #expect(recorder.times == [start + 3_600])
  }

  @Test func setWallTime_Backward_WallActionsWaitForTheWallClock() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    scheduler.schedule(at: start + 60, label: "wall", recorder.action("wall", on: scheduler))
    scheduler.setWallTime(start - 600)
    scheduler.advance(by: 600)
    #expect(recorder.runs.isEmpty)
    #expect(scheduler.pending.first?.deadline == start + 60)
    scheduler.advance(by: 60)
    #expect(recorder.times == [start + 60])
  }

  @Test func setWallTime_MonotonicActionsAreUnaffected() {
    let scheduler = TestScheduler(now: start)
    let recorder = Recorder()
    scheduler.schedule(after: 100, label: "forward", recorder.action("forward", on: scheduler))
    scheduler.schedule(after: 200, label: "backward", recorder.action("backward", on: scheduler))
    scheduler.setWallTime(start + 10_000)
    scheduler.advance(by: 0)
    #expect(recorder.runs.isEmpty)
    #expect(scheduler.pending.map(\.deadline) == [start + 10_100, start + 10_200])
    scheduler.advance(by: 100)
    #expect(recorder.labels == ["forward"])
    #expect(recorder.times == [start + 10_100])

    scheduler.setWallTime(start)
    scheduler.advance(by: 99)
    #expect(recorder.labels == ["forward"])
    scheduler.advance(by: 1)
    #expect(recorder.labels == ["forward", "backward"])
    #expect(recorder.times.last == start + 100)
    #expect(scheduler.monotonicNow == 200)
  }

  @Test func pending_ListsActionsInTheOrderTheyWouldRun() {
    let scheduler = TestScheduler(now: start)
    scheduler.schedule(at: start + 30, label: "wall-30") {}
    scheduler.schedule(after: 10, label: "mono-10") {}
    scheduler.schedule(at: start + 10, label: "wall-10") {}
    let pending = scheduler.pending
    #expect(pending.map(\.label) == ["mono-10", "wall-10", "wall-30"])
    #expect(pending.map(\.timeline) == [.monotonic, .wall, .wall])
    #expect(pending.map(\.deadline) == [start + 10, start + 10, start + 30])
    #expect(pending[0].description.contains("mono-10"))
    scheduler.advance(by: 100)
  }

  @Test func expectNoPendingActions_RecordsAnIssuePerLeftoverAction() {
    let scheduler = TestScheduler(now: start)
    scheduler.schedule(at: start + 60, label: "forgotten") {}
    scheduler.schedule(after: 60, label: "watchdog") {}
    withKnownIssue {
      scheduler.expectNoPendingActions()
    } matching: { issue in
      issue.description.contains("forgotten") || issue.description.contains("watchdog")
    }
    withKnownIssue {
      scheduler.expectNoPendingActions(allowing: ["watchdog"])
    } matching: { issue in
      issue.description.contains("forgotten")
    }
    // Nothing is recorded when every leftover is allowed.
    scheduler.expectNoPendingActions(allowing: ["watchdog", "forgotten"])
    scheduler.advance(by: 60)
    scheduler.expectNoPendingActions()
  }

  @Test func withTestScheduler_FailsWhenActionsAreLeftPending() {
    withKnownIssue {
      withTestScheduler(now: start) { scheduler in
        _ = scheduler.schedule(at: start + 1, label: "leftover") {}
      }
    } matching: { issue in
      issue.description.contains("leftover")
    }
    let value = withTestScheduler(now: start, allowing: ["heartbeat"]) { scheduler in
      scheduler.schedule(after: 1, label: "heartbeat") {}
      return 42
    }
    #expect(value == 42)
  }

  @Test func clock_IsTheSchedulersManualClock() {
    let scheduler = TestScheduler(now: start)
    let clock: any WallClock = scheduler.clock
    scheduler.advance(by: 90)
    #expect(clock.now() == start + 90)
    #expect(scheduler.manualClock.now() == start + 90)
  }
}

struct ClockDoubleTests {
  let start = Date(timeIntervalSinceReferenceDate: 760_000_000)

  @Test func staticClock_AlwaysReadsItsDate() {
    let clock = StaticWallClock(start)
    #expect(clock.now() == start)
    #expect(clock.now() == clock.now())
  }

  @Test func manualClock_MovesOnlyWhenTold() {
    let clock = ManualWallClock(start)
    #expect(clock.now() == start)
    clock.advance(by: 1.5)
    #expect(clock.now() == start + 1.5)
    clock.set(start - 100)
    #expect(clock.now() == start - 100)
  }

  @Test func systemClock_ReadsTheSystemTime() {
    // Compared with a bound rather than an exact value: the system clock is the real one.
    let now = SystemWallClock().now()
    #expect(now > Date(timeIntervalSince1970: 1_700_000_000))
  }

  @Test func sequenceGenerator_HandsOutChosenIdsThenCountsUp() {
    let generator = SequenceTrialIDGenerator([7, 7, 9], fallbackStart: 100)
    let ids = (0..<5).map { _ in generator.nextID().rawValue }
    #expect(ids == [7, 7, 9, 101, 102])
    #expect(generator.handedOut.map(\.rawValue) == ids)
  }
}
