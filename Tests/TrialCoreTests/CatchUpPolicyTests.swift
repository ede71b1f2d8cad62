import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

/// The catch-up policies, each with the dispositions it must give.
struct CatchUpPolicyTests {
  /// A 10-day trial with reminders due on days 3, 5, 7 and 9; the machine sleeps from day 0
  /// to day 8, so three reminders are found late by 5, 3 and 1 days.
  func sleepThroughReminders(_ policy: CatchUpPolicy) -> (Trial, PlannerDriver) {
    let driver = PlannerDriver(now: .day(0), policy: policy)
    let trial = makeTrial(1, start: .day(0), days: 10, reminders: reminders(7, 5, 3, 1))
    driver.start(trial)
    driver.scheduler.jump(by: 8 * 86_400)
    return (trial, driver)
  }

  @Test func latest_OnlyTheMostRecentLateReminderFires() {
    let (trial, driver) = sleepThroughReminders(CatchUpPolicy(reminders: .latest))
    let events = trial.events
    #expect(driver.taken.map(\.event) == Array(events.prefix(3)))
    let expected: [DueEvent.Disposition] = [
      .skip(.supersededByReminder(events[2].id)), .skip(.supersededByReminder(events[2].id)), .fire,
    ]
    #expect(driver.taken.map(\.disposition) == expected)
    #expect(driver.taken.map(\.lateness) == [.days(5), .days(3), .days(1)])
    #expect(driver.taken.allSatisfy { $0.isLate })
  }

  @Test func latest_ExpiryInTheSameWake_SupersedesEveryLateReminder() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .latest))
    let trial = makeTrial(1, start: .day(0), days: 10, reminders: reminders(7, 5, 3, 1))
    driver.start(trial)
    driver.scheduler.jump(by: 12 * 86_400)
    #expect(driver.taken.map(\.event) == trial.events)
    let expected: [DueEvent.Disposition] = Array(repeating: .skip(.supersededByExpiry), count: 4) + [.fire]
    #expect(driver.taken.map(\.disposition) == expected)
    #expect(driver.taken.last?.lateness == .days(2))
  }

  @Test func latest_BarelyLateReminders_AreStillSuperseded() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .latest, lateThreshold: .zero))
    let trial = makeTrial(1, start: .day(0), days: 5, reminders: reminders(2, 2 - 0.5 / 86_400))
    driver.start(trial)
    // Found a quarter and three quarters of a second late.
    driver.stepClock(to: trial.events[1].due.addingTimeInterval(0.25))
    let expected: [DueEvent.Disposition] = [.skip(.supersededByReminder(trial.events[1].id)), .fire]
    #expect(driver.taken.map(\.disposition) == expected)
    #expect(driver.taken.map(\.isLate) == [true, true])
  }

  @Test func latest_OtherTrialsDoNotSupersede() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .latest))
    let first = makeTrial(1, start: .day(0), days: 5)
    let second = makeTrial(2, start: .day(0), days: 10)
    driver.start(first)
    driver.start(second)
    driver.scheduler.jump(by: 8 * 86_400)
    let byTrial = Dictionary(grouping: driver.taken, by: \.event.trialID)
    let expected: [DueEvent.Disposition] = [.skip(.supersededByExpiry), .skip(.supersededByExpiry), .fire]
    #expect(byTrial[first.id]?.map(\.disposition) == expected)
    #expect(byTrial[second.id]?.map(\.disposition) == [.fire])
  }

  @Test func all_EveryLateReminderFires() {
    let (trial, driver) = sleepThroughReminders(CatchUpPolicy(reminders: .all))
    #expect(driver.taken.map(\.event) == Array(trial.events.prefix(3)))
    #expect(driver.taken.allSatisfy { $0.fires && $0.isLate })
    #expect(driver.taken.map(\.lateness) == [.days(5), .days(3), .days(1)])
  }

  @Test func skip_RemindersBeyondTheGraceAreSkipped_WithinItFire() {
    let grace = Duration.days(2)
    let (trial, driver) = sleepThroughReminders(CatchUpPolicy(reminders: .skip, grace: grace))
    #expect(driver.taken.map(\.event) == Array(trial.events.prefix(3)))
    let expected: [DueEvent.Disposition] = [
      .skip(.beyondGrace(lateness: .days(5), grace: grace)),
      .skip(.beyondGrace(lateness: .days(3), grace: grace)),
      .fire,
    ]
    #expect(driver.taken.map(\.disposition) == expected)
  }

  @Test func skip_ExpiryAlwaysFires_EvenBeyondTheGrace() {
    let driver = PlannerDriver(now: .day(0), policy: CatchUpPolicy(reminders: .skip, grace: .seconds(60)))
    let trial = makeTrial(1, start: .day(0), days: 5, reminders: .none)
    driver.start(trial)
    driver.scheduler.jump(by: 30 * 86_400)
    #expect(driver.taken.map(\.disposition) == [.fire])
    #expect(driver.taken.first?.lateness == .days(25))
  }

  @Test(arguments: CatchUpPolicy.LateReminders.allCases)
  func withinTheLateThreshold_NothingIsLate_EverythingFires(policy: CatchUpPolicy.LateReminders) {
    let driver = PlannerDriver(
      now: .day(0), policy: CatchUpPolicy(reminders: policy, grace: .zero, lateThreshold: .seconds(1)))
    let trial = makeTrial(1, start: .day(0), days: 5, reminders: reminders(2, 2 - 0.5 / 86_400))
    driver.start(trial)
    // Both reminders are due within one second before the wake.
    driver.stepClock(to: trial.events[1].due.addingTimeInterval(0.5))
    #expect(driver.taken.map(\.event) == Array(trial.events.prefix(2)))
    #expect(driver.taken.map(\.isLate) == [false, false])
    #expect(driver.taken.allSatisfy { $0.fires })
  }

  @Test func skipReasons_HaveCodesAndDescriptions() {
    let id = EventID(trialID: TrialID(1), revision: 2, kind: .reminder(before: .days(1)))
    let reasons: [SkipReason] = [
      .alreadyDueAtStart, .alreadyDueAtExtension, .supersededByReminder(id), .supersededByExpiry,
      .beyondGrace(lateness: .hours(2), grace: .hours(1)),
    ]
    #expect(Set(reasons.map(\.code)).count == reasons.count)
    #expect(
      SkipReason.beyondGrace(lateness: .hours(2), grace: .hours(1)).description
        == "late by 2h, beyond the grace of 1h")
    #expect(SkipReason.supersededByReminder(id).description.contains(id.description))
  }
}
