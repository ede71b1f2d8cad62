import Dispatch
import Foundation
import TestSupport
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

#if canImport(Glibc)
  import Glibc
#endif

/// Collects values from the daemon queue and lets the test wait for them, bounded.
final class Collector<T>: @unchecked Sendable {
  private let lock = NSLock()
  private var items: [T] = []
  private let signal = DispatchSemaphore(value: 0)

  func add(_ item: T) {
    lock.withLock { items.append(item) }
    signal.signal()
  }

  /// Waits until `count` items arrived or `timeout` seconds passed; returns what arrived.
  func wait(for count: Int, timeout: TimeInterval = patience) -> [T] {
    var deadline = DispatchTime.now() + timeout
    while lock.withLock({ items.count }) < count {
      if signal.wait(timeout: deadline) == .timedOut { break }
      deadline = max(deadline, .now())
    }
    return lock.withLock { items }
  }

  var values: [T] { lock.withLock { items } }
}

@Suite struct DispatchWakeSchedulerTests {
  @Test func delayedAction_RunsOnTheQueue_AndCancelledOneNever() {
    let queue = DispatchQueue(label: "test.engine")
    let scheduler = DispatchWakeScheduler(queue: queue)
    let ran = Collector<String>()
    queue.sync {
      let cancelled = scheduler.schedule(after: 0.01, label: "x") { ran.add("cancelled") }
      scheduler.schedule(after: 0.02, label: "b") {
        dispatchPrecondition(condition: .onQueue(queue))
        ran.add("b")
      }
      scheduler.schedule(after: 0, label: "a") { ran.add("a") }
      // Due after the cancelled one: a wrongly uncancelled timer would have run before it.
      scheduler.schedule(after: 0.05, label: "c") { ran.add("c") }
      cancelled.cancel()
    }
    #expect(ran.wait(for: 2).prefix(2) == ["a", "b"])
    #expect(ran.wait(for: 3) == ["a", "b", "c"])
  }

  @Test func wallDeadline_FiresAtOrAfterIt() {
    let queue = DispatchQueue(label: "test.engine")
    let scheduler = DispatchWakeScheduler(queue: queue)
    let fired = Collector<Date>()
    let deadline = scheduler.clock.now().addingTimeInterval(0.03)
    _ = queue.sync { scheduler.schedule(at: deadline, label: "due") { fired.add(scheduler.clock.now()) } }
    let times = fired.wait(for: 1)
    #expect(times.count == 1)
    #expect(times.first.map { $0 >= deadline } == true)
  }

  @Test func monotonicTime_MovesForward() {
    let scheduler = DispatchWakeScheduler(queue: DispatchQueue(label: "t"))
    let first = scheduler.monotonicNow
    #expect(first > 0)
    #expect(scheduler.monotonicNow >= first)
  }
}

@Suite struct ClockStepWatcherTests {
  @Test(.enabled(if: getuid() == 0, "setting the clock needs root"))
  func settingTheClock_IsReported() throws {
    let queue = DispatchQueue(label: "test.steps")
    let steps = Collector<Int>()
    let watcher = try ClockStepWatcher(queue: queue) { steps.add(1) }
    defer { watcher.stop() }
    // Set the clock to the time it already shows: a set, though not a visible change.
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    #expect(clock_settime(CLOCK_REALTIME, &now) == 0)
    #expect(steps.wait(for: 1).count == 1)
    clock_gettime(CLOCK_REALTIME, &now)
    #expect(clock_settime(CLOCK_REALTIME, &now) == 0)
    #expect(steps.wait(for: 2).count == 2, "the watcher re-arms after each step")
  }
}

/// The engine's watchdog on the real Dispatch path: `WATCHDOG=1` is sent from the engine's
/// queue, so a stuck queue stops the pings and systemd restarts the daemon.
@Suite struct EngineWatchdogOnDispatchTests {
  /// Records each ping, and whether it came from the engine's queue.
  final class PingObserver: EngineObserver, @unchecked Sendable {
    // @unchecked: the key is immutable; `pings` has its own lock.
    let pings = Collector<Bool>()
    private let key: DispatchSpecificKey<Bool>

    init(key: DispatchSpecificKey<Bool>) {
      self.key = key
    }

    func engineWatchdogPing() { pings.add(DispatchQueue.getSpecific(key: key) == true) }
    func engineStatusChanged(_ status: String) {}
    func engineDetectedClockStep(from expected: Date, to actual: Date) {}
  }

  /// The engine's scheduler, telling the test when each watchdog ping falls due: for each
  /// watchdog wake, a timer on a queue of its own fires at the same moment, free or stuck as
  /// the engine's queue may be.
  final class DueTellingScheduler: ForwardingWakeScheduler, @unchecked Sendable {
    // @unchecked: the schedulers hold no state of their own; `watchdogWakes` has a lock.
    private let scheduler: DispatchWakeScheduler
    private let side = DispatchWakeScheduler(queue: DispatchQueue(label: "test.due"))
    private let scheduled = Collector<Int>()
    /// The number of each watchdog wake that has fallen due, in order.
    let due = Collector<Int>()

    init(queue: DispatchQueue) {
      scheduler = DispatchWakeScheduler(queue: queue)
    }

    /// Watchdog wakes armed so far.
    var watchdogWakes: Int { scheduled.values.count }

    var inner: any WakeScheduler { scheduler }

    @discardableResult
    func schedule(after delay: TimeInterval, label: String, _ action: @escaping () -> Void)
      -> any ScheduledWake
    {
      guard label == "watchdog" else { return scheduler.schedule(after: delay, label: label, action) }
      let wake = WatchdogWake()
      wake.wake = scheduler.schedule(after: delay, label: label) { [wake] in
        wake.fired = true
        action()
      }
      let number = watchdogWakes + 1
      scheduled.add(number)
      let due = due
      wake.marker = side.schedule(after: delay, label: "due") { due.add(number) }
      return wake
    }

    /// A watchdog wake and its marker. Called off before it fires, both are; after (the
    /// engine arms the next one from the ping), the marker still tells when it fell due.
    private final class WatchdogWake: ScheduledWake {
      // Touched on the engine's queue only.
      var wake: (any ScheduledWake)?
      var marker: (any ScheduledWake)?
      var fired = false

      func cancel() {
        wake?.cancel()
        if !fired { marker?.cancel() }
      }
    }
  }

  @Test func watchdog_WhileTheEngineQueueIsStuck_StopsPingingAndResumesAfter() throws {
    let interval = Duration.milliseconds(50)
    let queue = DispatchQueue(label: "test.engine")
    let key = DispatchSpecificKey<Bool>()
    queue.setSpecific(key: key, value: true)
    let observer = PingObserver(key: key)
    let scheduler = DueTellingScheduler(queue: queue)
    let engine = makeEngine(
      scheduler: scheduler, settings: EngineSettings(watchdogInterval: interval), observer: observer)
    _ = try queue.sync { try engine.start() }
    defer { queue.sync { engine.stop() } }

    // Free: pings arrive, from the engine's queue.
    #expect(observer.pings.wait(for: 2).count >= 2)

    // Stuck: a block holds the queue. Counted once the block runs, so no ping is in flight:
    // pings run on the same serial queue.
    let running = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    queue.async {
      running.signal()
      release.wait()
    }
    #expect(running.wait(timeout: .now() + 5) == .success)
    let atBlock = observer.pings.values.count
    // The ping armed before the block falls due while the queue is stuck.
    let armed = scheduler.watchdogWakes
    #expect(scheduler.due.wait(for: armed).count == armed, "the armed ping fell due")
    let whileStuck = observer.pings.values.count - atBlock
    release.signal()
    #expect(whileStuck == 0, "no ping while the engine's queue is stuck")

    // Free again: pings resume.
    let after = observer.pings.wait(for: atBlock + 2)
    #expect(after.count >= atBlock + 2)
    #expect(after.allSatisfy { $0 }, "every ping is sent from the engine's queue")
  }
}
