import Foundation
import Logging
import TestSupport
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A sink that notes the step of the run each event reached it at.
final class StepSink: EventSink {
  var step = 0
  var delivered: [(entry: LedgerEntry, step: Int)] = []

  func deliver(_ event: LoggedEvent, trial: Trial?) throws { delivered.append((event.entry, step)) }
}

/// The model-based test of the lifecycle (issue 53): random sequences of starts, extensions,
/// pauses, resumes, cancels at the end and their undoing, conversions, cancels now, time passing,
/// restarts of the engine over the same store and wall-clock steps, over 1,000 trials of plans
/// plain, with reminders, with a grace, with `RemindAfterCancel=yes`, with `MaxExtensions=` and with
/// `FollowUps=` (one with a grace too), some started by the subject of an ended trial (which calls
/// off that trial's follow-ups to come), in virtual time on each store. After each run every trial
/// is as `ModelTrial` says: its state and end, every event in its ledger fired once or skipped with
/// its reason, taken when the model says, delivered once, none fired after its call-off; the cohort
/// figures and the engine's counts by state are the model's own.
///
/// Seeded: `TRIALWATCH_MODEL_SEED=N` runs another sequence (a failure names its seed and run);
/// `TRIALWATCH_MODEL_TRIALS=N` another number of trials; `TRIALWATCH_MODEL_STORE=lmdb` (or `memory`,
/// `postgres`) runs on that store alone.
@Suite struct LifecycleModelTests {
  static let environment = ProcessInfo.processInfo.environment
  static let seed = environment["TRIALWATCH_MODEL_SEED"].flatMap { UInt64($0) } ?? 53
  static let trials = environment["TRIALWATCH_MODEL_TRIALS"].flatMap { Int($0) } ?? 1_000
  /// The trials go in runs of a store each, so that restarts and clock steps meet trials at every
  /// point of their life.
  static let runs = 8

  @Test(arguments: StoreKind.allCases)
  func randomLifecycles_MatchTheModel(store kind: StoreKind) throws {
    if let only = Self.environment["TRIALWATCH_MODEL_STORE"], only != kind.rawValue { return }
    print("lifecycle model on \(kind): seed \(Self.seed) (TRIALWATCH_MODEL_SEED=\(Self.seed) repeats it)")
    var tally: [String: Int] = [:]
    for run in 0..<Self.runs {
      let count = Self.trials / Self.runs + (run < Self.trials % Self.runs ? 1 : 0)
      let play = try ModelRun(kind, seed: Self.seed, run: run, trials: count)
      try play.play()
      let failures = play.failures
      let report =
        "seed \(Self.seed) (TRIALWATCH_MODEL_SEED=\(Self.seed)), run \(run) on \(kind): \(failures.count) "
        + "mismatches:\n\((failures.prefix(6) + ["..."] + failures.suffix(10)).joined(separator: "\n"))"
      #expect(failures.isEmpty, "\(report)")
      if !failures.isEmpty { break }
      tally.merge(play.tally, uniquingKeysWith: +)
    }
    print(
      "lifecycle model on \(kind): \(tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
    )
  }
}

/// One run: a store, an engine over it (made anew at each restart), the model's trials.
final class ModelRun {
  static let settings = EngineSettings(plans: ModelPlans.byName)

  let kind: StoreKind
  let run: Int
  var random: SeededGenerator
  let store: GraceEngineTests.Store
  let sink = StepSink()
  var scheduler: TestScheduler
  var engine: Engine
  var incarnation: UInt64 = 1
  var trials: [ModelTrial] = []
  var index: [TrialID: Int] = [:]
  /// What happened to each trial, by step, for a failure's report.
  var histories: [TrialID: [String]] = [:]
  var step = 0
  var toStart: Int
  var failures: [String] = []
  /// What the run did and what its trials' events became, for the report of a run that passes.
  var tally: [String: Int] = [:]

  init(_ kind: StoreKind, seed: UInt64, run: Int, trials: Int) throws {
    self.kind = kind
    self.run = run
    random = SeededGenerator(seed: seed &* 0x9E37_79B9 &+ UInt64(run))
    toStart = trials
    store = try GraceEngineTests.Store(kind)
    scheduler = TestScheduler(now: epoch)
    engine = Self.engine(store.repository, scheduler, sink, incarnation: 1)
    _ = try engine.start()
  }

  static func engine(
    _ repository: any TrialRepository, _ scheduler: TestScheduler, _ sink: StepSink, incarnation: UInt64
  )
    -> Engine
  {
    // Ids count up from a start of each incarnation's own, so that none is handed out twice.
    makeEngine(
      repository: repository, scheduler: scheduler, settings: settings, ids: [],
      idFallbackStart: incarnation << 32,
      sinks: [sink], logger: quiet)
  }

  /// The engine's notices of the clock steps and restarts the run makes on purpose are not news.
  static let quiet = Logger(label: "trialwatch.engine") { _ in SwiftLogNoOpLogHandler() }

  var now: Date { scheduler.now }
  var hour: Int { Int(now.timeIntervalSince(epoch) / 3_600) }

  func fail(_ message: String, trial: TrialID? = nil) {
    let history = trial.flatMap { histories[$0] }.map { "\n    " + $0.joined(separator: "\n    ") } ?? ""
    failures.append("step \(step) (hour \(hour)): \(message)\(history)")
  }

  func note(_ id: TrialID, _ what: String) {
    histories[id, default: []].append("step \(step) hour \(hour): \(what)")
  }

  /// Notes a step that touches every open trial (time, a restart, a clock step).
  func noteAll(_ what: String) {
    // Ended trials with follow-ups still to come too.
    for trial in trials where trial.isOpen || !trial.pending.isEmpty { note(trial.id, what) }
  }

  // MARK: The run

  func play() throws {
    while toStart > 0 {
      step += 1
      sink.step = step
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<16: try start()
      case 16..<62: try command()
      case 62..<92: advance(hours: Int.random(in: 1...24, using: &random))
      case 92..<96:
        tally["restarts", default: 0] += 1
        try restart()
      default:
        tally["clock steps", default: 0] += 1
        clockStep()
      }
    }
    step += 1
    sink.step = step
    advance(hours: 40 * 24)
    try check()
  }

  func start() throws {
    toStart -= 1
    let plan = ModelPlans.all.randomElement(using: &random)!
    // Now and then the subject of an ended trial starts another (mostly one with follow-ups to
    // come): it calls off the follow-ups of its earlier trials that fall due from now, the wall
    // clock stepped back before their starts or not (a subject's latest trial is the one started
    // last).
    let open = Set(trials.filter(\.isOpen).map(\.subject))
    let ended = trials.filter { $0.isEnded && !open.contains($0.subject) }
    let waiting = ended.filter { !$0.pending.isEmpty }
    var subject = "subject-\(run)-\(trials.count)"
    if Bool.random(using: &random),
      let again = (waiting.isEmpty ? ended : waiting).randomElement(using: &random)
    {
      subject = again.subject
    }
    let result = try engine.perform(try .start(subject: subject, plan: plan.name))
    for i in trials.indices where trials[i].subject == subject {
      trials[i].laterTrial = true
      trials[i].callOffFollowUps(at: step)
      note(trials[i].id, "a later trial of \(subject)")
    }
    let trial = ModelTrial(id: result.trial.id, subject: subject, plan: plan, now: now)
    index[trial.id] = trials.count
    trials.append(trial)
    note(
      trial.id,
      "start of \(subject), plan \(plan.name), ends hour \(hour + Int(ModelTrial.seconds(plan.length) / 3_600))"
    )
    if let wrong = trial.mismatch(result.trial) { fail("start of \(trial.id): \(wrong)", trial: trial.id) }
  }

  /// A command on an open trial (now and then an ended one), as the model expects it: carried
  /// out, or refused.
  func command() throws {
    let open = trials.indices.filter { trials[$0].isOpen }
    guard !open.isEmpty || !trials.isEmpty else { return try start() }
    let i =
      open.isEmpty || Int.random(in: 0..<10, using: &random) == 0
      ? Int.random(in: 0..<trials.count, using: &random) : open.randomElement(using: &random)!
    let id = trials[i].id
    let now = self.now
    let command: TrialCommand
    let refusal: ModelTrial.Refusal?
    var name: String
    let roll =
      trials[i].state == .paused && Bool.random(using: &random) ? 50 : Int.random(in: 0..<100, using: &random)
    switch roll {
    case 0..<6:
      let date = now.addingTimeInterval(3_600 * Double(Int.random(in: 1...120, using: &random)))
      name = "extend to hour \(Int(date.timeIntervalSince(epoch) / 3_600))"
      command = try .extend(id, .to(date))
      refusal = trials[i].extend(to: date, now: now)
    case 6..<22:
      let span = Duration.seconds(3_600 * Int64.random(in: 1...96, using: &random))
      name = "extend by \(TimeSpan.format(span))"
      command = try .extend(id, .by(span))
      refusal = trials[i].extend(by: span, now: now)
    case 22..<36:
      name = "pause"
      command = try .pause(.id(id))
      refusal = trials[i].pause(now: now, step: step)
    case 36..<52:
      name = "resume"
      command = try .resume(.id(id))
      refusal = trials[i].resume(now: now, step: step)
    case 52..<72:
      name = "cancel at the end"
      command = try .cancel(.id(id), atEnd: true)
      refusal = trials[i].cancelAtEnd(now: now, step: step)
    case 72..<84:
      name = "uncancel"
      command = try .uncancel(.id(id))
      refusal = trials[i].uncancel(step: step)
    case 84..<94:
      name = "convert"
      command = .end(id, .converted)
      refusal = trials[i].end(.converted, now: now, step: step)
    default:
      name = "cancel now"
      command = try .cancel(.id(id), atEnd: false)
      refusal = trials[i].end(.cancelled, now: now, step: step)
    }
    tally[refusal.map { "refused \($0)" } ?? "carried out", default: 0] += 1
    name += refusal.map { ", refused (\($0))" } ?? ""
    note(id, name)
    do {
      let result = try engine.perform(command)
      if let refusal {
        fail("\(name) of \(id) was carried out; the model refuses it: \(refusal)", trial: id)
      } else if let wrong = trials[i].mismatch(result.trial) {
        fail("\(name) of \(id): \(wrong)", trial: id)
      }
    } catch let error as TrialError {
      let got = Self.refusal(of: error)
      if got != refusal {
        fail("\(name) of \(id): \(error), the model expects \(String(describing: refusal))", trial: id)
      }
    }
  }

  static func refusal(of error: TrialError) -> ModelTrial.Refusal? {
    switch error.code {
    case .notActive: .notActive
    case .notPaused: .notPaused
    case .notCancelling: .notCancelling
    case .invalidParameter: .invalid
    case .extensionRefused(let refusal): .extensionRefused(refusal.limit)
    default: nil
    }
  }

  /// Time passes with the engine up: each event is taken at its due time.
  func advance(hours: Int) {
    noteAll("\(hours)h pass")
    let start = now
    let target = now.addingTimeInterval(Double(hours) * 3_600)
    scheduler.advance(by: Double(hours) * 3_600)
    for i in trials.indices { trials[i].advance(from: start, to: target, step: step) }
  }

  /// The engine stops and a new one starts over the store reopened, after a downtime, or with the
  /// wall clock behind the last time it saw: everything due meanwhile is taken in its first wake.
  func restart() throws {
    checkCounts("before a restart")
    engine.stop()
    scheduler.expectNoPendingActions()
    try store.reopen()
    let hours =
      Int.random(in: 0..<8, using: &random) == 0
      ? -Int.random(in: 1...24, using: &random) : Int.random(in: 0...72, using: &random)
    noteAll("restart, \(hours)h later")
    let at = now.addingTimeInterval(Double(hours) * 3_600)
    incarnation += 1
    scheduler = TestScheduler(now: at)
    engine = Self.engine(store.repository, scheduler, sink, incarnation: incarnation)
    _ = try engine.start()
    for i in trials.indices { trials[i].wake(at: at, step: step) }
    checkCounts("after a restart")
  }

  /// The wall clock steps forward or back while monotonic time stands; the engine is told, as the
  /// daemon's timer that is cancelled on a set of the clock tells it.
  func clockStep() {
    let hours =
      Bool.random(using: &random)
      ? Int.random(in: 1...48, using: &random) : -Int.random(in: 1...24, using: &random)
    noteAll("clock steps \(hours)h")
    let at = now.addingTimeInterval(Double(hours) * 3_600)
    scheduler.setWallTime(at)
    engine.clockChanged()
    for i in trials.indices { trials[i].wake(at: at, step: step) }
  }

  // MARK: Checks

  /// The engine's trials by state are the model's.
  func checkCounts(_ when: String) {
    var expected: [TrialState: Int] = [:]
    for trial in trials { expected[trial.state, default: 0] += 1 }
    let counts = engine.counts.filter { $0.value != 0 }
    if counts != expected { fail("\(when): the engine counts \(counts), the model \(expected)") }
    // Open trials by plan (the metric `trials_by_plan`), active (in grace too) and paused.
    var open: [String: [Int64]] = [:]
    for trial in trials where trial.isOpen {
      open[trial.plan.name, default: [0, 0]][trial.state == .paused ? 1 : 0] += 1
    }
    let byPlan = engine.openByPlan.plans.mapValues { [$0.active, $0.paused] }.filter { $0.value != [0, 0] }
    if byPlan != open { fail("\(when): the engine counts open by plan \(byPlan), the model \(open)") }
  }

  /// The end of a run: each trial, its ledger, the deliveries and the cohorts as the model says.
  func check() throws {
    checkCounts("at the end")
    engine.stop()
    scheduler.expectNoPendingActions()
    let stored = try store.repository.read { txn in
      try trials.map { (try txn.trial($0.id), try txn.ledgerEntries(trial: $0.id)) }
    }
    for (trial, (actual, ledger)) in zip(trials, stored) {
      guard let actual else {
        fail("trial \(trial.id) is not in the store", trial: trial.id)
        continue
      }
      if let wrong = trial.mismatch(actual) { fail("trial \(trial.id) as stored: \(wrong)", trial: trial.id) }
      for wrong in trial.ledgerMismatches(ledger) { fail("ledger of \(trial.id): \(wrong)", trial: trial.id) }
    }
    checkDeliveries()
    try checkCohorts()
    for trial in trials {
      tally["trials in state \(trial.state)", default: 0] += 1
      for (id, expected) in trial.ledger {
        let what: String
        switch expected.outcome {
        case .fired: what = "fired"
        case .skipped(let reason): what = "skipped \(reason.code)"
        }
        tally[what, default: 0] += 1
        if id.kind.followUpSpan != nil { tally["follow-ups \(what)", default: 0] += 1 }
      }
    }
  }

  /// Each event taken by a wake, a pause or a resume reached the sink once, as the ledger has it;
  /// none fired after its call-off.
  func checkDeliveries() {
    var seen = Set<EventID>()
    for (entry, step) in sink.delivered {
      guard seen.insert(entry.id).inserted else {
        fail("\(entry.id) delivered twice", trial: entry.id.trialID)
        continue
      }
      guard let trial = index[entry.id.trialID].map({ trials[$0] }) else {
        fail("\(entry.id) of no trial of the model delivered")
        continue
      }
      if entry.fired, let callOff = trial.calledOff(entry.id.kind, firedAt: step) {
        fail("\(entry.id) fired at step \(step), after its call-off \(callOff)", trial: trial.id)
      }
    }
    for trial in trials {
      for (id, expected) in trial.ledger where !seen.contains(id) {
        switch expected.outcome {
        case .skipped(.alreadyDueAtStart), .skipped(.alreadyDueAtExtension), .skipped(.alreadyDueAtResume):
          continue
        default: fail("\(id) (\(expected)) never delivered", trial: trial.id)
        }
      }
    }
  }

  /// The cohort figures, as `GetStats` reads them, are the model's count of each cohort's trials.
  func checkCohorts() throws {
    var expected: [CohortKey: CohortCounts] = [:]
    for trial in trials { expected[trial.cohort, default: CohortCounts()].addCounts(trial.cohortCounts) }
    let stored = try store.repository.read { try $0.cohorts(from: .min, through: .max) }
    var actual: [CohortKey: CohortCounts] = [:]
    for (key, counts) in stored {
      var plain = CohortCounts()
      plain.addCounts(counts)
      actual[key] = plain
    }
    for key in Set(expected.keys).union(actual.keys).sorted() where expected[key] != actual[key] {
      let show = { (counts: CohortCounts?) in
        counts.map {
          "started \($0.started) converted \($0.converted) cancelled \($0.cancelled) expired \($0.expired) "
            + "paused \($0.paused) active \($0.active)"
        } ?? "none"
      }
      fail("cohort \(key.plan) of day \(key.day): \(show(actual[key])), the model \(show(expected[key]))")
    }
  }
}
