import Dispatch
import Foundation
import TestSupport
import TrialCore
import TrialDaemon
import TrialEngine
import TrialStore

/// Records when each event is delivered (after its commit) and signals when all are in.
private final class LatenessSink: EventSink, @unchecked Sendable {
  // @unchecked: written on the engine queue, read after `done` is signalled.
  let clock: any WallClock
  let expected: Int
  var lateness = Latencies()
  var lastDelivery: Date?
  let done = DispatchSemaphore(value: 0)

  init(clock: any WallClock, expected: Int) {
    self.clock = clock
    self.expected = expected
  }

  func deliver(_ event: LoggedEvent, trial: Trial?) throws {
    record(due: event.entry.event.due)
  }

  /// Notes an action for something due at `due` taken now; signals once `expected` are in.
  func record(due: Date) {
    let now = clock.now()
    lateness.record(seconds: now.timeIntervalSince(due))
    lastDelivery = now
    if lateness.count == expected { done.signal() }
  }
}

/// `count` instants at random within `span` seconds after `start`, the same for a seed.
private func randomInstants(_ count: Int, over span: TimeInterval, after start: Date, seed: UInt64) -> [Date]
{
  var generator = SeededGenerator(seed: seed)
  return (0..<count).map { _ in start.addingTimeInterval(Double.random(in: 0..<span, using: &generator)) }
}

/// Runs the real Dispatch engine over `repository` with trials ending at `ends`, and
/// returns the sink once every expiry was delivered.
private func runEngine(repository: any TrialRepository, ends: [Date], label: String) throws -> LatenessSink {
  let queue = DispatchQueue(label: "trialwatch.bench.\(label)")
  let scheduler = DispatchWakeScheduler(queue: queue)
  let sink = LatenessSink(clock: scheduler.clock, expected: ends.count)
  let commits = DispatchCommitLane(
    repository: repository, engineQueue: queue, monotonicNow: { scheduler.monotonicNow })
  let engine = Engine(repository: repository, scheduler: scheduler, sinks: [sink], commits: commits)
  try queue.sync {
    _ = try engine.start()
    for (index, end) in ends.enumerated() {
      engine.submit(
        try .start(subject: "\(label)-\(index)", end: .at(end), reminders: [])
      ) { _ in }
    }
  }
  guard sink.done.wait(timeout: .now() + 120) == .success else {
    throw BenchError("\(label): not every event was delivered within 120 s")
  }
  queue.sync { engine.stop() }
  return sink
}

/// The scheduler's wall-clock wakes alone: 2,000 due at random over 2 s, each action noting
/// how late it started. What a due event costs before the engine's own work.
private func runTimerWakes() throws {
  let queue = DispatchQueue(label: "trialwatch.bench.timer")
  let scheduler = DispatchWakeScheduler(queue: queue)
  let deadlines = randomInstants(
    2_000, over: 2, after: scheduler.clock.now().addingTimeInterval(0.5), seed: 0x7469_6D65)
  let wakes = LatenessSink(clock: scheduler.clock, expected: deadlines.count)
  queue.sync {
    for deadline in deadlines {
      scheduler.schedule(at: deadline, label: "bench") { wakes.record(due: deadline) }
    }
  }
  guard wakes.done.wait(timeout: .now() + 30) == .success else {
    throw BenchError("timer: not every wake ran within 30 s")
  }
  wakes.lateness.reportFigures(
    p50: "engine_timer_wake_p50", p99: "engine_timer_wake_p99", max: "engine_timer_wake_max")
}

/// The engine on the real Dispatch path, with durable commits to `makeRepository`'s store.
func runEngineBench(makeRepository: (URL) throws -> any TrialRepository) throws {
  let clock = SystemWallClock()
  try runTimerWakes()

  // 10,000 events due at random instants over 10 s.
  do {
    let scratch = try TemporaryDirectory("bench-lateness")
    let directory = scratch.url
    let ends = randomInstants(10_000, over: 10, after: clock.now().addingTimeInterval(1), seed: 0x6C61_7465)
    let sink = try runEngine(repository: try makeRepository(directory), ends: ends, label: "lateness")
    sink.lateness.reportFigures(
      p50: "engine_fire_lateness_p50", p99: "engine_fire_lateness_p99", max: "engine_fire_lateness_max")
  }

  // 500 events 10 ms apart: no event falls due while the one before is committed, so each
  // lateness is one timer wake, one wake's commit and the hand-over, with no queueing.
  do {
    let scratch = try TemporaryDirectory("bench-sparse")
    let start = clock.now().addingTimeInterval(1)
    let ends = (0..<500).map { start.addingTimeInterval(Double($0) / 100) }
    let sink = try runEngine(repository: try makeRepository(scratch.url), ends: ends, label: "sparse")
    sink.lateness.reportFigures(
      p50: "engine_fire_lateness_sparse_p50", p99: "engine_fire_lateness_sparse_p99",
      max: "engine_fire_lateness_sparse_max")
  }

  // 100,000 events due in the same second.
  do {
    let scratch = try TemporaryDirectory("bench-burst")
    let directory = scratch.url
    let due = clock.now().addingTimeInterval(5)
    let ends = (0..<100_000).map { due.addingTimeInterval(Double($0 % 1000) / 1000) }
    let sink = try runEngine(repository: try makeRepository(directory), ends: ends, label: "burst")
    let last = sink.lastDelivery ?? due
    report("engine_burst_100k_done", last.timeIntervalSince(due.addingTimeInterval(0.999)), "s")
  }
}
