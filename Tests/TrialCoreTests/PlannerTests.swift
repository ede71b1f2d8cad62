import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

/// The planner driven in virtual time, as the engine drives it.
struct PlannerTimingTests {
  @Test func remindersAndExpiry_FireAtTheirDueInstants() {
    let driver = PlannerDriver(now: .day(0))
    let trial = makeTrial(1, start: .day(0), days: 5)
    #expect(driver.start(trial).isEmpty)
    #expect(driver.planner.pendingEventCount == 3)
    #expect(driver.planner.nextDeadline == .day(2))

    driver.scheduler.advance(by: 2 * 86_400 - 1)
    #expect(driver.taken.isEmpty, "nothing fires a second early")
    driver.scheduler.advance(by: 1)
    #expect(driver.wakes.map(\.at) == [.day(2)])

    driver.scheduler.advance(to: .day(10))
    #expect(driver.wakes.map(\.at) == [.day(2), .day(4), .day(5)], "the clock read each deadline")
    #expect(driver.taken.map(\.event) == trial.events)
    for due in driver.taken {
      #expect(due.fires)
      #expect(due.takenAt == due.event.due)
      #expect(!due.isLate)
      #expect(due.lateness == .zero)
    }
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.planner.nextDeadline == nil)
    #expect(driver.planner.trialCount == 0)
    #expect(driver.scheduler.pending.isEmpty)
    #expect(driver.scheduler.now == .day(10))
  }

  @Test func start_WithReminderAlreadyDue_SkipsItWithAlreadyDueAtStart() {
    let driver = PlannerDriver(now: .day(0))
    // A 2-day trial: the 3-day reminder fell due a day before it started.
    let trial = makeTrial(1, start: .day(0), days: 2)
    let skipped = driver.start(trial)
    #expect(skipped.map(\.event) == [trial.events[0]])
    #expect(skipped.map(\.disposition) == [.skip(.alreadyDueAtStart)])
    #expect(skipped.map(\.takenAt) == [.day(0)])
    #expect(driver.planner.pendingEventCount == 2)

    driver.scheduler.advance(to: .day(3))
    #expect(driver.taken.map(\.event) == Array(trial.events.dropFirst()))
    #expect(driver.wakes.map(\.at) == [.day(1), .day(2)])
    #expect(driver.fired.count == 2)
  }

  @Test func start_ReminderDueExactlyNow_CountsAsAlreadyDue() {
    let driver = PlannerDriver(now: .day(0))
    let trial = makeTrial(1, start: .day(0), days: 1)
    let skipped = driver.start(trial)
    #expect(skipped.map(\.event.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1))])
    #expect(driver.planner.pendingEvents(of: trial.id) == [trial.events[2]])
  }

  @Test func extend_OldRevisionNeverFires_NewOnesDo() {
    let (driver, started) = PlannerDriver.started(days: 5)
    var trial = started
    driver.scheduler.advance(to: .day(2.5))
    #expect(driver.taken.map(\.event.id) == [trial.events[0].id])

    let skipped = driver.extend(&trial, to: .day(10))
    #expect(skipped.isEmpty)
    #expect(trial.revision == 2)
    #expect(driver.planner.pendingEvents(of: trial.id) == trial.events)

    driver.scheduler.advance(to: .day(11))
    let later = driver.taken.dropFirst()
    #expect(later.map(\.event) == trial.events)
    #expect(later.allSatisfy { $0.event.revision == 2 && $0.fires && $0.takenAt == $0.event.due })
    #expect(driver.wakes.map(\.at) == [.day(2), .day(7), .day(9), .day(10)])
  }

  @Test func extend_ReminderOfNewRevisionAlreadyDue_SkippedWithAlreadyDueAtExtension() {
    let (driver, started) = PlannerDriver.started(days: 5)
    var trial = started
    driver.scheduler.advance(to: .day(4.5))
    #expect(driver.fired.count == 2)

    // The new end lies 1.5 days ahead: its 3-day reminder is already due.
    let skipped = driver.extend(&trial, to: .day(6))
    #expect(skipped.map(\.event) == [trial.events[0]])
    #expect(skipped.map(\.disposition) == [.skip(.alreadyDueAtExtension)])
    #expect(skipped.map(\.event.revision) == [2])
    #expect(driver.planner.pendingEvents(of: trial.id) == Array(trial.events.dropFirst()))

    driver.scheduler.advance(to: .day(7))
    #expect(driver.wakes.map(\.at) == [.day(2), .day(4), .day(5), .day(6)])
    #expect(driver.taken.suffix(2).map(\.event) == Array(trial.events.dropFirst()))
  }

  @Test func extend_ToAnEarlierEnd_ReplacesThePlan() {
    let (driver, started) = PlannerDriver.started(days: 30)
    var trial = started
    driver.extend(&trial, to: .day(4))
    driver.scheduler.advance(to: .day(40))
    #expect(driver.taken.map(\.event) == trial.events)
    #expect(driver.wakes.map(\.at) == [.day(1), .day(3), .day(4)])
  }

  @Test func end_NothingMoreFires() {
    let driver = PlannerDriver(now: .day(0))
    let trial = makeTrial(1, start: .day(0), days: 5)
    let other = makeTrial(2, start: .day(0), days: 6)
    driver.start(trial)
    driver.start(other)
    driver.scheduler.advance(to: .day(2.5))
    #expect(driver.end(trial.id))
    #expect(!driver.end(trial.id), "a second end finds nothing to cancel")
    #expect(driver.planner.pendingEvents(of: trial.id).isEmpty)
    #expect(driver.planner.pendingEventCount == 3, "the other trial keeps its three events")

    driver.scheduler.advance(to: .day(30))
    #expect(driver.taken.filter { $0.event.trialID == trial.id }.map(\.event) == [trial.events[0]])
    #expect(driver.taken.filter { $0.event.trialID == other.id }.map(\.event) == other.events)
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.scheduler.pending.isEmpty)
  }

  @Test func jump_OverdueEventsTakenOnceAtTheNewTime_WithLateness() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .all))
    let trial = makeTrial(1, start: .day(0), days: 5)
    driver.start(trial)
    driver.scheduler.jump(by: 4.5 * 86_400)
    #expect(driver.wakes.map(\.at) == [.day(4.5)], "one wake after resume")
    #expect(driver.taken.map(\.event) == Array(trial.events.prefix(2)))
    #expect(driver.taken.map(\.takenAt) == [.day(4.5), .day(4.5)])
    #expect(driver.taken.map(\.lateness) == [.hours(60), .hours(12)])
    #expect(driver.taken.allSatisfy { $0.isLate && $0.fires })

    driver.scheduler.advance(to: .day(6))
    #expect(driver.taken.count == 3)
    #expect(driver.taken.last?.takenAt == .day(5))
    #expect(driver.taken.last?.isLate == false)
  }

  @Test func jump_PastTheEnd_ExpiryFiresLate() {
    let (driver, _) = PlannerDriver.started(days: 5)
    driver.scheduler.jump(by: 6 * 86_400)
    #expect(driver.wakes.count == 1)
    let expiry = driver.taken.last
    #expect(expiry?.event.kind == .expiry)
    #expect(expiry?.fires == true)
    #expect(expiry?.isLate == true)
    #expect(expiry?.lateness == .days(1))
    #expect(driver.planner.pendingEventCount == 0)
  }

  @Test func forwardStep_FiresWhatBecameDue_ThenLaterEventsOnTime() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .all))
    let trial = makeTrial(1, start: .day(0), days: 5)
    driver.start(trial)
    driver.scheduler.advance(to: .day(1))
    driver.stepClock(to: .day(3.5))
    #expect(driver.wakes.map(\.at) == [.day(3.5)])
    #expect(driver.taken.map(\.event) == [trial.events[0]])
    #expect(driver.taken.first?.lateness == .hours(36))

    driver.scheduler.advance(by: 0.5 * 86_400)
    #expect(driver.wakes.map(\.at) == [.day(3.5), .day(4)])
    driver.scheduler.advance(by: 86_400)
    #expect(driver.taken.map(\.event) == trial.events)
    #expect(driver.taken.suffix(2).allSatisfy { $0.takenAt == $0.event.due && !$0.isLate })
  }

  @Test func backwardStep_NothingFiresAgain_LaterEventsFireAtTheirWallDueTime() {
    let (driver, trial) = PlannerDriver.started(days: 5)
    driver.scheduler.advance(to: .day(2.5))
    #expect(driver.taken.count == 1)

    driver.stepClock(to: .day(1))
    #expect(driver.taken.count == 1, "the step back re-fires nothing")
    driver.scheduler.advance(to: .day(3.9))
    #expect(driver.taken.count == 1, "the reminder taken before the step does not come again")
    driver.scheduler.advance(to: .day(6))
    #expect(driver.taken.map(\.event) == trial.events)
    #expect(driver.wakes.map(\.at) == [.day(2), .day(4), .day(5)])
    #expect(driver.taken.allSatisfy { $0.fires && !$0.isLate })
  }

  @Test func equalDeadlinesAcrossTrials_AreTakenFirstInFirstOut() {
    let driver = PlannerDriver(now: .day(0))
    let ids: [UInt64] = [30, 10, 20, 40]
    var trials = ids.map { makeTrial($0, start: .day(0), days: 5, reminders: .none) }
    for trial in trials { driver.start(trial) }
    // Re-planning a trial puts it behind the others, even at the same deadline.
    driver.extend(&trials[1], to: .day(5))
    driver.scheduler.advance(to: .day(5))
    #expect(driver.wakes.count == 1)
    #expect(driver.taken.map(\.event.trialID.rawValue) == [30, 20, 40, 10])
    #expect(driver.taken.map(\.event.revision) == [1, 1, 1, 2])
  }

  @Test func equalDeadlinesOfDifferentKinds_AreTakenFirstInFirstOut() {
    let driver = PlannerDriver(now: .day(0))
    // Trial 2's expiry and trial 1's 1-day reminder both fall due on day 4.
    let first = makeTrial(1, start: .day(0), days: 5)
    let second = makeTrial(2, start: .day(0), days: 4, reminders: .none)
    driver.start(first)
    driver.start(second)
    driver.scheduler.advance(to: .day(4))
    #expect(driver.wakes.last?.taken.map(\.event.id) == [first.events[1].id, second.events[0].id])
  }

  @Test func thirtyDaysOfManyTrials_EveryEventFiresOnceOnTime() {
    let driver = PlannerDriver(now: .day(0))
    var generator = SeededGenerator(seed: 30)
    var expected: [EventID: Date] = [:]
    var trials: [Trial] = []
    for raw in 1...2_000 as ClosedRange<UInt64> {
      let start = Date.day(Double(generator.next() % (20 * 24)) / 24)
      let days = Double(1 + generator.next() % 10)
      trials.append(makeTrial(raw, start: start, days: days))
    }
    trials.sort { $0.period.startDate < $1.period.startDate }
    // Trials start at their start time, each day's worth at once.
    for day in 0..<30 {
      for trial in trials
      where trial.period.startDate >= .day(Double(day))
        && trial.period.startDate < .day(Double(day + 1))
      {
        driver.scheduler.advance(to: trial.period.startDate)
        let skipped = driver.start(trial)
        for event in trial.events where !skipped.contains(where: { $0.event.id == event.id }) {
          expected[event.id] = event.due
        }
      }
      driver.scheduler.advance(to: .day(Double(day + 1)))
    }
    #expect(driver.taken.count == expected.count)
    #expect(Set(driver.taken.map(\.event.id)).count == expected.count)
    #expect(driver.taken.allSatisfy { $0.fires && $0.takenAt == expected[$0.event.id] })
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.scheduler.pending.isEmpty)
  }
}

/// What can be asked of the planner, and rebuilding it.
struct PlannerQueryTests {
  @Test func pendingEvent_FindsCurrentEventsOnly() {
    let (driver, started) = PlannerDriver.started(days: 5)
    var trial = started
    for event in trial.events {
      #expect(driver.planner.pendingEvent(event.id) == event)
    }
    let unknown = EventID(trialID: TrialID(99), revision: 1, kind: .expiry)
    #expect(driver.planner.pendingEvent(unknown) == nil)
    let otherOffset = EventID(trialID: trial.id, revision: 1, kind: .reminder(before: .days(2)))
    #expect(driver.planner.pendingEvent(otherOffset) == nil)

    driver.scheduler.advance(to: .day(2))
    #expect(driver.planner.pendingEvent(trial.events[0].id) == nil, "taken events are no longer pending")
    #expect(driver.planner.pendingEvent(trial.events[1].id) == trial.events[1])

    let old = trial.events
    driver.extend(&trial, to: .day(8))
    #expect(old.allSatisfy { driver.planner.pendingEvent($0.id) == nil })
    #expect(trial.events.allSatisfy { driver.planner.pendingEvent($0.id) == $0 })
  }

  @Test func pendingEventsOfTrial_InDueOrder_ShrinkAsTaken() {
    let (driver, trial) = PlannerDriver.started(days: 5)
    #expect(driver.planner.pendingEvents(of: trial.id) == trial.events)
    driver.scheduler.advance(to: .day(4))
    #expect(driver.planner.pendingEvents(of: trial.id) == [trial.events[2]])
    #expect(driver.planner.pendingEvents(of: TrialID(2)).isEmpty)
  }

  @Test func nextEventAndCount_FollowTheEarliest() {
    let driver = PlannerDriver(now: .day(0))
    #expect(driver.planner.nextEvent == nil)
    #expect(driver.planner.nextDeadline == nil)
    let late = makeTrial(1, start: .day(0), days: 10)
    let soon = makeTrial(2, start: .day(0), days: 4, reminders: reminders(1))
    driver.start(late)
    #expect(driver.planner.nextEvent == late.events[0])
    driver.start(soon)
    #expect(driver.planner.nextEvent == soon.events[0])
    #expect(driver.planner.nextDeadline == .day(3))
    #expect(driver.planner.pendingEventCount == 5)
    #expect(driver.planner.trialCount == 2)
    driver.end(soon.id)
    #expect(driver.planner.nextEvent == late.events[0])
    #expect(driver.planner.nextDeadline == .day(7))
    #expect(driver.planner.pendingEventCount == 3)
    #expect(driver.planner.trialCount == 1)
  }

  @Test func restore_SchedulesFromTheFirstEventNotCompleted() {
    let driver = PlannerDriver(now: .day(0))
    let trial = makeTrial(1, start: .day(0), days: 5)
    driver.restore(trial) { $0 == trial.events[0].id }
    #expect(driver.planner.pendingEvents(of: trial.id) == Array(trial.events.dropFirst()))
    #expect(driver.planner.pendingEventCount == 2)

    // Restoring again replaces the plan rather than adding to it.
    driver.restore(trial) { _ in false }
    #expect(driver.planner.pendingEvents(of: trial.id) == trial.events)
    #expect(driver.planner.pendingEventCount == 3)

    driver.restore(trial) { _ in true }
    #expect(driver.planner.pendingEvents(of: trial.id).isEmpty)
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.planner.nextDeadline == nil)
  }

  @Test func restore_OverdueEventsFireLateOnTheNextWake_NotSkippedAsAlreadyDue() {
    // The daemon was down from day 1 to day 6; on restart the planner is rebuilt.
    let driver = PlannerDriver(now: .day(6), policy: CatchUpPolicy(reminders: .all))
    let trial = makeTrial(1, start: .day(0), days: 5)
    driver.restore(trial) { _ in false }
    driver.scheduler.advance(by: 0)
    #expect(driver.taken.map(\.event) == trial.events)
    #expect(driver.taken.allSatisfy { $0.fires && $0.isLate && $0.takenAt == .day(6) })
  }

  @Test func restore_EndedTrial_IsRemoved() {
    let (driver, started) = PlannerDriver.started(days: 5)
    var trial = started
    trial.state = .cancelled
    driver.restore(trial) { _ in false }
    #expect(driver.planner.pendingEventCount == 0)
    #expect(driver.change { $0.add(trial, now: .day(0)) }.isEmpty)
    #expect(driver.planner.pendingEventCount == 0, "an ended trial is never planned")
  }

  @Test func simulate_ChangesNothing_AndMatchesWhatTakeDueThenDoes() {
    let policy = CatchUpPolicy(reminders: .latest)
    var planner = Planner(policy: policy)
    var generator = SeededGenerator(seed: 7)
    for raw in 1...200 as ClosedRange<UInt64> {
      let start = Date.day(Double(generator.next() % 100) / 10)
      let trial = makeTrial(raw, start: start, days: Double(1 + generator.next() % 6))
      planner.add(trial, now: start)
    }
    // The planner was last awake on day 0 and wakes now on day 4: some events are overdue.
    let now = Date.day(4)
    let through = Date.day(9)
    let before = (planner.pendingEventCount, planner.nextDeadline, planner.nextEvent)
    let simulated = planner.simulate(now: now, through: through)
    #expect(planner.pendingEventCount == before.0)
    #expect(planner.nextDeadline == before.1)
    #expect(planner.nextEvent == before.2)

    var actual = planner.takeDue(at: now)
    while let deadline = planner.nextDeadline, deadline <= through {
      actual += planner.takeDue(at: deadline)
    }
    #expect(simulated.count > 100)
    #expect(simulated.contains { !$0.fires })
    #expect(simulated == actual)
  }

  @Test func manyExtends_HeapCompaction_KeepsEveryAnswerRight() {
    let driver = PlannerDriver(now: .day(0))
    var trials = (1...50 as ClosedRange<UInt64>).map { makeTrial($0, start: .day(0), days: 5) }
    for trial in trials { driver.start(trial) }
    // Thousands of extensions leave thousands of stale heap entries behind.
    for round in 1...200 {
      for index in trials.indices {
        driver.extend(&trials[index], to: .day(5 + Double(round % 7) + Double(index) / 100))
      }
    }
    #expect(driver.planner.pendingEventCount == 150)
    #expect(driver.planner.trialCount == 50)
    let earliest = trials.flatMap(\.events).min { ($0.due, $0.trialID) < ($1.due, $1.trialID) }
    #expect(driver.planner.nextEvent == earliest)
    driver.scheduler.advance(to: .day(30))
    #expect(driver.taken.count == 150)
    #expect(driver.taken.allSatisfy { $0.event.revision == 201 && $0.fires && $0.takenAt == $0.event.due })
    #expect(Set(driver.taken.map(\.event.id)) == Set(trials.flatMap(\.events).map(\.id)))
    #expect(driver.planner.nextDeadline == nil)
  }
}
