import Foundation
import TestSupport
import TrialCore
import TrialTesting

/// Planner figures for one million pending events: how fast they go in, how fast due ones
/// come out, and how much resident memory each costs while it waits.
///
/// Each case runs in a fresh process (this executable again, with the case named in the
/// environment): memory a previous case freed stays with the allocator and would be reused
/// without showing in the resident set, so measuring cases one after another under-counts.
func runPlannerBench() throws {
  if let name = ProcessInfo.processInfo.environment[PlannerBenchCase.variable] {
    guard let benchCase = PlannerBenchCase(rawValue: name) else {
      throw PlannerBenchError(description: "unknown planner bench case \"\(name)\"")
    }
    benchCase.run()
    exit(0)
  }
  for benchCase in PlannerBenchCase.allCases {
    print(try benchCase.runInChild(), terminator: "")
  }
}

struct PlannerBenchError: Error, CustomStringConvertible {
  var description: String
}

enum PlannerBenchCase: String, CaseIterable {
  /// The usual shape: the default schedule (two reminders) plus the expiry, three events a
  /// trial. The planner grows as trials come in, without room reserved first.
  case threePerTrial = "three-per-trial"
  /// The sparsest shape: expiry only, one event (and one heap entry, slot and index bucket)
  /// a trial.
  case onePerTrial = "one-per-trial"
  /// The usual shape with the daemon's lookahead of an hour: nearly every trial far, held by id
  /// and due time alone, and read back (from a dictionary standing for the store) as it comes
  /// near, before each take.
  case far = "far"

  static let variable = "TRIALWATCH_PLANNER_BENCH_CASE"
  static let eventCount = 1_000_000

  var reminders: ReminderSchedule {
    switch self {
    case .threePerTrial, .far: .default
    case .onePerTrial: .none
    }
  }

  var suffix: String {
    switch self {
    case .threePerTrial: ""
    case .onePerTrial: "_1_per_trial"
    case .far: "_far"
    }
  }

  func run() {
    let figures = measurePlanner(
      events: Self.eventCount, reminders: reminders, far: self == .far,
      origin: Date(timeIntervalSinceReferenceDate: 800_000_000))
    print("planner_insert_rate\(suffix): \(format(figures.insertRate)) events/s")
    print("planner_take_rate\(suffix): \(format(figures.takeRate)) events/s")
    print("planner_bytes_per_event\(suffix): \(format(figures.bytesPerEvent, digits: 1)) bytes")
    print("planner_outlook_ms\(suffix): \(format(figures.outlookMilliseconds, digits: 2)) ms")
  }

  /// Runs this case in a fresh copy of the executable and returns what it printed.
  func runInChild() throws -> String {
    let done = try ChildProcess.run(
      .product("trialwatch-bench"), environment: ChildProcess.environment(adding: [Self.variable: rawValue]),
      timeout: 600)
    guard done.status == .exited(0) else {
      throw PlannerBenchError(
        description: "planner bench case \(rawValue) failed (\(done.status)): \(done.errors)")
    }
    return done.output
  }
}

private struct PlannerFigures {
  var insertRate: Double
  var takeRate: Double
  var bytesPerEvent: Double
  /// `trialsDue(through:)` of 16 limits over every trial planned (GetOutlook), the median of 21.
  var outlookMilliseconds: Double
}

private func measurePlanner(
  events: Int, reminders: ReminderSchedule, far: Bool, origin: Date
) -> PlannerFigures {
  let perTrial = reminders.offsets.count + 1
  let trials = (events + perTrial - 1) / perTrial
  let length = TrialDefaults.standard.length.timeInterval
  // Trials start spread over 30 days, so their events interleave in the heap.
  let spread = Duration.days(30).timeInterval
  var generator = SeededGenerator(seed: 0x7472_6961_6c77_6174)
  let starts = (0..<trials).map { _ in
    origin.addingTimeInterval(Double(generator.next() % UInt64(spread)))
  }
  let clock = ContinuousClock()

  func trial(_ index: Int) -> Trial {
    Trial(
      id: TrialID(UInt64(index) &* 0x9E37_79B9_7F4A_7C15 | 1), subject: "bench",
      period: TrialPeriod(startDate: starts[index], endDate: starts[index].addingTimeInterval(length)),
      reminders: reminders)
  }
  // For the far case, what the store holds and the ledger: made before the memory is measured.
  var store: [TrialID: Trial] = [:]
  var taken: Set<EventID> = []
  if far {
    store = Dictionary(uniqueKeysWithValues: starts.indices.lazy.map(trial).map { ($0.id, $0) })
    taken.reserveCapacity(events)
  }

  let rssBefore = residentBytes()
  var planner = Planner(policy: CatchUpPolicy(reminders: .latest))
  if far { planner.holdFar(lookahead: .seconds(3_600), now: origin) }
  let insertTime = clock.measure {
    for index in starts.indices { planner.add(trial(index), now: origin) }
  }
  let rssAfter = residentBytes()
  let pending = planner.pendingEventCount
  precondition(pending == trials * perTrial, "planner holds \(pending) events, expected \(trials * perTrial)")

  // The outlook of every trial planned, for 16 spans from 4 hours to 43 days (the last event).
  let limits = (1...16).map { origin.addingTimeInterval(Double($0 * $0) * 4 * 3_600) }
  var outlook: [Int] = []
  let outlookTimes = (0..<21).map { _ in
    clock.measure { outlook = planner.trialsDue(through: limits) }.seconds
  }
  precondition(outlook.last == trials, "\(outlook.last ?? 0) of \(trials) trials due within 43 days")

  // Wakes as the daemon has them: the clock moves on and each wake takes what fell due,
  // about a hundred events at a time.
  let wakes = events / 100
  let horizon = spread + length + 1
  var takenCount = 0
  let takeTime = clock.measure {
    for wake in 1...wakes {
      let now = origin.addingTimeInterval(horizon * Double(wake) / Double(wakes))
      if far {
        // What the engine does before each take.
        let held = planner.farTrialsToHold(at: now)
        planner.moveHorizon(at: now, lettingGo: held)
        for id in held { planner.restore(store[id]!) { taken.contains($0) } }
        let due = planner.takeDue(at: now)
        for event in due { taken.insert(event.event.id) }
        takenCount += due.count
      } else {
        takenCount += planner.takeDue(at: now).count
      }
    }
  }
  precondition(takenCount == pending && planner.pendingEventCount == 0, "took \(takenCount) of \(pending)")

  return PlannerFigures(
    insertRate: Double(pending) / insertTime.seconds,
    takeRate: Double(takenCount) / takeTime.seconds,
    bytesPerEvent: Double(rssAfter - rssBefore) / Double(pending),
    outlookMilliseconds: outlookTimes.sorted()[outlookTimes.count / 2] * 1_000)
}

/// The resident set size of this process, from /proc/self/statm.
func residentBytes() -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

extension Duration {
  var seconds: Double {
    let parts = components
    return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
  }
}

func format(_ value: Double, digits: Int = 0) -> String {
  String(format: "%.\(digits)f", value)
}
