import Foundation
import TrialCore
import TrialTesting

/// Runs a planner the way the daemon's engine does, in virtual time: one wake is armed at
/// the planner's next deadline; each wake takes what is due at the clock's time, records
/// it, and re-arms. Every change to the planner re-arms too. With far trials (`far`), it keeps
/// the trials and the events taken, as the store does, and holds far trials in full from them
/// as the engine does before each take.
final class PlannerDriver {
  struct Wake {
    /// What the clock read when the wake ran.
    var at: Date
    var taken: [DueEvent]
    /// Far trials read back and held in full before the take.
    var held = 0
  }

  static let wakeLabel = "planner-wake"

  let scheduler: TestScheduler
  private(set) var planner: Planner
  private var wake: (any ScheduledWake)?
  private(set) var wakes: [Wake] = []
  /// The trials as the store holds them, when the planner holds far trials.
  private var store: [TrialID: Trial]?
  private var ended: Set<TrialID> = []
  /// Every event taken, as the ledger holds them.
  private var ledger: Set<EventID> = []

  /// With `far`, the planner holds far the trials whose events fall due more than twice that
  /// after now (`Planner.holdFar`).
  init(now: Date, policy: CatchUpPolicy = CatchUpPolicy(), planner: Planner? = nil, far: Duration? = nil) {
    scheduler = TestScheduler(now: now)
    self.planner = planner ?? Planner(policy: policy)
    if let far {
      self.planner.holdFar(lookahead: far, now: now)
      store = [:]
    }
  }

  /// A driver at day 0 that planned trial 1, `days` long, starting then.
  static func started(days: Double) -> (PlannerDriver, Trial) {
    let driver = PlannerDriver(now: .day(0))
    let trial = makeTrial(1, start: .day(0), days: days)
    driver.start(trial)
    return (driver, trial)
  }

  var now: Date { scheduler.now }
  /// Every event taken so far, in the order taken.
  var taken: [DueEvent] { wakes.flatMap(\.taken) }
  var fired: [DueEvent] { taken.filter(\.fires) }

  /// Plans a trial that starts now.
  @discardableResult
  func start(_ trial: Trial) -> [DueEvent] {
    store?[trial.id] = trial
    return record(change { $0.add(trial, now: now, reason: .alreadyDueAtStart) })
  }

  /// Reminders skipped at a start or an extension go into the ledger, as `TrialBook` puts them.
  private func record(_ skipped: [DueEvent]) -> [DueEvent] {
    ledger.formUnion(skipped.lazy.map(\.event.id))
    return skipped
  }

  /// Moves a trial's end, starting a new revision, and plans it.
  @discardableResult
  func extend(_ trial: inout Trial, to end: Date) -> [DueEvent] {
    trial.reschedule(endDate: end)
    let current = trial
    store?[trial.id] = trial
    return record(change { $0.add(current, now: now, reason: .alreadyDueAtExtension) })
  }

  /// Ends a trial early.
  @discardableResult
  func end(_ id: TrialID) -> Bool {
    ended.insert(id)
    return change { $0.cancel(id) }
  }

  @discardableResult
  func restore(_ trial: Trial, completed: @escaping (EventID) -> Bool) -> Bool {
    change { $0.restore(trial, completed: completed) }
  }

  /// A clock step: the wall clock moves, and the engine re-evaluates at once.
  func stepClock(to date: Date) {
    scheduler.setWallTime(date)
    scheduler.advance(by: 0)
  }

  /// Any change to the planner, followed by re-arming the wake.
  func change<R>(_ body: (inout Planner) -> R) -> R {
    let result = body(&planner)
    rearm()
    return result
  }

  private func rearm() {
    wake?.cancel()
    wake = nil
    guard let deadline = planner.nextDeadline else { return }
    wake = scheduler.schedule(at: deadline, label: Self.wakeLabel) { [unowned self] in
      let now = scheduler.now
      let held = holdAhead(at: now)
      let taken = planner.takeDue(at: now)
      ledger.formUnion(taken.lazy.map(\.event.id))
      wakes.append(Wake(at: now, taken: taken, held: held))
      rearm()
    }
  }

  /// What the engine does before each take: the far trials coming within the lookahead, read
  /// back from the store and restored. Returns how many.
  private func holdAhead(at now: Date) -> Int {
    guard let store else { return 0 }
    let ids = planner.farTrialsToHold(at: now)
    planner.moveHorizon(at: now, lettingGo: ids)
    for id in ids where !ended.contains(id) {
      guard let trial = store[id] else { continue }
      planner.restore(trial) { self.ledger.contains($0) }
    }
    return ids.count
  }
}

extension Date {
  static let trialEpoch = Date(timeIntervalSinceReferenceDate: 760_000_000)

  /// The instant `days` after the test epoch.
  static func day(_ days: Double) -> Date {
    trialEpoch.addingTimeInterval(days * 86_400)
  }
}

/// A trial of `days`, starting at `start`.
func makeTrial(
  _ raw: UInt64, start: Date, days: Double, reminders: ReminderSchedule = .default, subject: String? = nil
) -> Trial {
  Trial(
    id: TrialID(raw), subject: subject ?? "subject-\(raw)",
    period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(days * 86_400)),
    reminders: reminders)
}

func reminders(_ days: Double...) -> ReminderSchedule {
  try! ReminderSchedule(days.map { Days($0).duration })
}
