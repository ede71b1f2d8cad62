import Foundation
import PropertyBased
import Testing
import TrialCore
import TrialTesting

/// Random lives of many trials, driven in virtual time and checked against a reference model.
struct PlannerPropertyTests {
  /// Times move on a half-hour grid, so that deadlines of different trials often coincide;
  /// a few spans carry a small remainder, to land near the late threshold.
  static let unit: TimeInterval = 1_800
  static let remainders: [TimeInterval] = [0, 0, 0, 0.5, 1, 2, 600]

  enum Operation: Sendable, CustomStringConvertible {
    case start(length: TimeInterval, offsets: [TimeInterval])
    case extend(trial: Int, to: TimeInterval)
    case end(trial: Int)
    case advance(TimeInterval)
    case jump(TimeInterval)
    case stepForward(TimeInterval)
    case stepBackward(TimeInterval)

    init(kind: Int, a: Int, b: Int, c: Int) {
      let span = TimeInterval(1 + a % 24) * PlannerPropertyTests.unit + PlannerPropertyTests.remainders[c % 7]
      switch kind {
      case 0, 1:
        // Offsets from a bit set over 1, 2, 3, 4, 6, 8, 12 and 16 units.
        let choices: [TimeInterval] = [1, 2, 3, 4, 6, 8, 12, 16]
        let offsets = choices.indices.filter { b & (1 << $0) != 0 }.map {
          choices[$0] * PlannerPropertyTests.unit
        }
        self = .start(length: span, offsets: offsets)
      case 2: self = .extend(trial: b, to: span)
      case 3: self = .end(trial: b)
      case 4, 5: self = .advance(span)
      case 6: self = .jump(span * 2)
      case 7: self = .stepForward(span)
      default: self = .stepBackward(span)
      }
    }

    var description: String {
      switch self {
      case .start(let length, let offsets): "start(\(length)s, reminders \(offsets))"
      case .extend(let trial, let span): "extend(#\(trial), end in \(span)s)"
      case .end(let trial): "end(#\(trial))"
      case .advance(let span): "advance(\(span)s)"
      case .jump(let span): "jump(\(span)s)"
      case .stepForward(let span): "step(+\(span)s)"
      case .stepBackward(let span): "step(-\(span)s)"
      }
    }
  }

  static let operations = zip(
    Gen.int(in: 0...8), Gen.int(in: 0...1_000), Gen.int(in: 0...255), Gen.int(in: 0...6)
  ).map { Operation(kind: $0.0, a: $0.1, b: $0.2, c: $0.3) }.array(of: 1...60)

  static let graces: [Duration] = [.zero, .minutes(30), .hours(2)]
  static let thresholds: [Duration] = [.zero, .seconds(1), .minutes(15)]

  @Test(arguments: CatchUpPolicy.LateReminders.allCases)
  func randomLives_EveryEventTakenOnceOnTime_WithThePolicysDispositions(
    reminders: CatchUpPolicy.LateReminders
  ) async {
    await propertyCheck(count: 300, input: Self.operations, Gen.int(in: 0...2), Gen.int(in: 0...2)) {
      operations, grace, threshold in
      let policy = CatchUpPolicy(
        reminders: reminders, grace: Self.graces[grace], lateThreshold: Self.thresholds[threshold])
      var model = Model(policy: policy, now: .day(0))
      model.run(operations)
    }
  }

  /// The same with far trials: those whose events fall due more than two lookaheads ahead are
  /// held by id and due time alone, and read back (from the driver's store) as they come near.
  @Test(arguments: CatchUpPolicy.LateReminders.allCases, [1.0, 5.0])
  func randomLives_FarTrialsHeldBackAsTheyComeNear_EveryEventTakenOnceOnTime(
    reminders: CatchUpPolicy.LateReminders, lookaheadUnits: Double
  ) async {
    await propertyCheck(count: 200, input: Self.operations, Gen.int(in: 0...2), Gen.int(in: 0...2)) {
      operations, grace, threshold in
      let policy = CatchUpPolicy(
        reminders: reminders, grace: Self.graces[grace], lateThreshold: Self.thresholds[threshold])
      var model = Model(policy: policy, now: .day(0), far: .seconds(lookaheadUnits * Self.unit))
      model.run(operations)
    }
  }
}

/// The reference model: what must be pending, and what each wake must take, computed
/// from the trials alone, without the planner.
struct Model {
  struct Planned {
    var event: TrialEvent
    /// Order in which the trial was (re)planned: first in, first out for equal deadlines.
    var planOrder: Int
  }

  struct Record {
    var trial: Trial
    var isEnded = false
  }

  let policy: CatchUpPolicy
  let driver: PlannerDriver
  var trials: [Record] = []
  var pending: [EventID: Planned] = [:]
  var planOrder = 0
  /// Events that stopped being current (old revision, ended trial) before they were taken.
  var withdrawn: Set<EventID> = []
  var takenCount: [EventID: Int] = [:]
  var everPlanned: Set<EventID> = []

  /// Whether the planner holds far trials: equal due times of different trials may then come
  /// in another order than planned (a far trial is planned again when it comes near).
  let far: Bool

  /// `planner`, if given, must have `policy`.
  init(policy: CatchUpPolicy, now: Date, planner: Planner? = nil, far: Duration? = nil) {
    self.policy = policy
    self.far = far != nil
    driver = PlannerDriver(now: now, policy: policy, planner: planner, far: far)
  }

  var now: Date { driver.now }

  mutating func run(_ operations: [PlannerPropertyTests.Operation]) {
    for operation in operations {
      apply(operation)
      checkSteadyState(after: operation)
    }
    // Let every trial run out.
    let wakesBefore = driver.wakes.count
    driver.scheduler.advance(by: 400 * PlannerPropertyTests.unit)
    check(wakesFrom: wakesBefore, onTime: true, after: "the final advance")
    checkSteadyState(after: "the final advance")
    #expect(pending.isEmpty)
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.scheduler.pending.isEmpty)
    // Every event that stayed current was taken exactly once; none that stopped being current was.
    #expect(Set(takenCount.keys) == everPlanned.subtracting(withdrawn))
    #expect(takenCount.values.allSatisfy { $0 == 1 })
  }

  // MARK: Operations

  mutating func apply(_ operation: PlannerPropertyTests.Operation) {
    let wakesBefore = driver.wakes.count
    switch operation {
    case .start(let length, let offsets):
      let schedule = try! ReminderSchedule(offsets.map { .seconds($0) })
      let trial = Trial(
        id: TrialID(UInt64(trials.count + 1)), subject: "s\(trials.count + 1)",
        period: TrialPeriod(startDate: now, endDate: now.addingTimeInterval(length)), reminders: schedule)
      trials.append(Record(trial: trial))
      let expectedSkipped = plan(trial, reason: .alreadyDueAtStart)
      #expect(driver.start(trial) == expectedSkipped, "start of \(trial.id)")

    case .extend(let index, let span):
      guard !trials.isEmpty else { return }
      let slot = index % trials.count
      guard !trials[slot].isEnded else { return }
      var trial = trials[slot].trial
      withdraw(trial.id)
      let skipped = driver.extend(&trial, to: now.addingTimeInterval(span))
      #expect(trial.revision == trials[slot].trial.revision + 1)
      trials[slot].trial = trial
      #expect(skipped == plan(trial, reason: .alreadyDueAtExtension), "extension of \(trial.id)")

    case .end(let index):
      guard !trials.isEmpty else { return }
      let slot = index % trials.count
      let id = trials[slot].trial.id
      let hadPending = pending.values.contains { $0.event.trialID == id }
      #expect(hadPending == !trials[slot].isEnded)
      withdraw(id)
      trials[slot].isEnded = true
      #expect(driver.end(id) == hadPending)

    case .advance(let span):
      let through = now.addingTimeInterval(span)
      let simulated = driver.planner.simulate(now: now, through: through)
      let simulates = !driver.planner.holdsFarTrials(dueThrough: through)
      driver.scheduler.advance(by: span)
      check(wakesFrom: wakesBefore, onTime: true, after: operation)
      if simulates {
        #expect(
          inOrder(simulated) == inOrder(driver.wakes[wakesBefore...].flatMap(\.taken)),
          "simulate before \(operation)")
      }

    case .jump(let span):
      driver.scheduler.jump(by: span)
      #expect(driver.wakes.count - wakesBefore <= 1, "one wake after resume")
      check(wakesFrom: wakesBefore, onTime: false, after: operation)

    case .stepForward(let span):
      driver.stepClock(to: now.addingTimeInterval(span))
      #expect(driver.wakes.count - wakesBefore <= 1, "one wake after the step")
      check(wakesFrom: wakesBefore, onTime: false, after: operation)

    case .stepBackward(let span):
      driver.stepClock(to: now.addingTimeInterval(-span))
      #expect(driver.wakes.count == wakesBefore, "a step back takes nothing")
    }
  }

  /// Adds the trial's current events to the model; returns the reminders already due, as
  /// the planner must report them.
  mutating func plan(_ trial: Trial, reason: SkipReason) -> [DueEvent] {
    planOrder += 1
    let end = trial.period.endDate
    var skipped: [DueEvent] = []
    for offset in trial.reminders.offsets {
      let id = EventID(trialID: trial.id, revision: trial.revision, kind: .reminder(before: offset))
      let event = TrialEvent(id: id, due: end.addingTimeInterval(-offset.timeInterval))
      if event.due <= now {
        skipped.append(DueEvent(event: event, takenAt: now, disposition: .skip(reason), isLate: false))
      } else {
        pending[id] = Planned(event: event, planOrder: planOrder)
        everPlanned.insert(id)
      }
    }
    let expiry = TrialEvent(id: EventID(trialID: trial.id, revision: trial.revision, kind: .expiry), due: end)
    pending[expiry.id] = Planned(event: expiry, planOrder: planOrder)
    everPlanned.insert(expiry.id)
    return skipped.sorted { $0.event.due < $1.event.due }
  }

  mutating func withdraw(_ trial: TrialID) {
    for (id, planned) in pending where planned.event.trialID == trial {
      pending[id] = nil
      withdrawn.insert(id)
    }
  }

  // MARK: Checks

  /// Checks each wake since `first` against what the model says it must take.
  mutating func check(wakesFrom first: Int, onTime: Bool, after operation: some CustomStringConvertible) {
    for wake in driver.wakes[first...] {
      let expected = expectedTake(at: wake.at)
      #expect(!expected.isEmpty || wake.held > 0, "a wake at \(wake.at) with nothing due, in \(operation)")
      #expect(inOrder(wake.taken) == inOrder(expected), "wake at \(wake.at) in \(operation)")
      let dues = wake.taken.map(\.event.due)
      #expect(dues == dues.sorted(), "taken in due order")
      for due in wake.taken {
        #expect(due.event.due <= due.takenAt, "\(due.event.id) taken before it fell due")
        #expect(due.takenAt == wake.at)
        if onTime { #expect(due.takenAt == due.event.due, "\(due.event.id) late in \(operation)") }
        takenCount[due.event.id, default: 0] += 1
        if due.event.kind == .expiry {
          #expect(due.fires, "an expiry always fires")
          if let slot = trials.firstIndex(where: { $0.trial.id == due.event.trialID }) {
            trials[slot].isEnded = true
          }
        }
      }
    }
  }

  /// Taken events as compared: in the order taken; with far trials, equal due times of
  /// different trials by trial id.
  func inOrder(_ taken: [DueEvent]) -> [DueEvent] {
    guard far else { return taken }
    return taken.sorted { ($0.event.due, $0.event.trialID) < ($1.event.due, $1.event.trialID) }
  }

  /// What a wake at `now` must take, with each disposition; removes it from the model.
  mutating func expectedTake(at now: Date) -> [DueEvent] {
    let due = pending.values.filter { $0.event.due <= now }.sorted {
      ($0.event.due, $0.planOrder) < ($1.event.due, $1.planOrder)
    }.map(\.event)
    for event in due { pending[event.id] = nil }
    // The last event taken for each trial in this wake.
    var lastOfTrial: [TrialID: TrialEvent] = [:]
    for event in due { lastOfTrial[event.trialID] = event }
    return due.map { event in
      let lateness = now.duration(since: event.due)
      let isLate = lateness > policy.lateThreshold
      guard case .reminder = event.kind, isLate else {
        return DueEvent(event: event, takenAt: now, disposition: .fire, isLate: isLate)
      }
      let disposition: DueEvent.Disposition
      switch policy.reminders {
      case .all:
        disposition = .fire
      case .skip:
        disposition =
          lateness > policy.grace ? .skip(.beyondGrace(lateness: lateness, grace: policy.grace)) : .fire
      case .latest:
        let last = lastOfTrial[event.trialID]!
        if last.id == event.id {
          disposition = .fire
        } else if last.kind == .expiry {
          disposition = .skip(.supersededByExpiry)
        } else {
          disposition = .skip(.supersededByReminder(last.id))
        }
      }
      return DueEvent(event: event, takenAt: now, disposition: disposition, isLate: true)
    }
  }

  /// Between operations: nothing is overdue, and the planner agrees with the model.
  func checkSteadyState(after operation: some CustomStringConvertible) {
    #expect(!pending.values.contains { $0.event.due <= now }, "overdue events left after \(operation)")
    #expect(driver.planner.pendingEventCount == pending.count, "count after \(operation)")
    let earliest = pending.values.map(\.event.due).min()
    if far, let due = driver.planner.nextEventDue, let earliest, due != earliest {
      // A far trial's event first: known to the second at or before it.
      #expect(due < earliest && due.distance(to: earliest) < 1, "next event after \(operation)")
      #expect(driver.planner.nextHeldEvent.map { $0.due > due } ?? true)
    } else {
      #expect(driver.planner.nextEventDue == earliest, "next event after \(operation)")
    }
    if !far { #expect(driver.planner.nextDeadline == earliest, "next deadline after \(operation)") }
    let deadline = driver.planner.nextDeadline
    #expect(driver.scheduler.pending.map(\.deadline) == (deadline.map { [$0] } ?? []))
    for record in trials {
      let expected = pending.values.filter { $0.event.trialID == record.trial.id }.map(\.event)
        .sorted { $0.due < $1.due }
      let held = driver.planner.pendingEvents(of: record.trial.id)
      if far, held.isEmpty, let first = expected.first {
        // A far trial: only its next event is known, read from its trial.
        #expect(driver.planner.farEvent(of: record.trial) == first, "far trial \(record.trial.id)")
      } else {
        #expect(held == expected)
      }
    }
    if let next = driver.planner.nextEvent {
      #expect(next.due == earliest, "next event after \(operation)")
    } else if let id = driver.planner.nextFarTrial, let record = trials.first(where: { $0.trial.id == id }) {
      // As the engine shows it: the far trial falling due in the earliest second (of several,
      // the smaller id), or the event held in full when that comes first.
      let far = driver.planner.farEvent(of: record.trial)?.due
      let held = driver.planner.nextHeldEvent?.due
      let shown = [far, held].compactMap { $0 }.min()
      #expect(far != nil, "next far event after \(operation)")
      #expect(
        shown.map { $0 >= earliest! && $0.timeIntervalSince(earliest!) < 1 } ?? false,
        "next after \(operation)")
    } else {
      #expect(earliest == nil, "no next event after \(operation)")
    }
  }
}
