import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

/// The outlook (`Planner.trialsDue(through:)`): trials counted by their next pending event,
/// whether held in full, far or paused, in virtual time.
struct PlannerOutlookTests {
  static let second: TimeInterval = 1

  /// `days` after day 0, and `seconds` more.
  static func at(days: Double, seconds: TimeInterval = 0) -> Date {
    Date.day(days).addingTimeInterval(seconds)
  }

  @Test func heldTrials_CountedByTheirNextEvent_ForEveryLimitInItsOrder() {
    var planner = Planner()
    // Next events: day 2 (a reminder), day 7 (a reminder), day 1 (the expiry).
    planner.add(makeTrial(1, start: .day(0), days: 5), now: .day(0))
    planner.add(makeTrial(2, start: .day(0), days: 10), now: .day(0))
    planner.add(makeTrial(3, start: .day(0), days: 1, reminders: .none), now: .day(0))
    let limits = [Date.day(0.5), .day(1), .day(2), .day(7), .day(1), .day(100)]
    #expect(planner.trialsDue(through: limits) == [0, 1, 2, 3, 1, 3])
    #expect(planner.trialsDue(through: []) == [])
  }

  @Test func limit_CountsTheWholeSecond_OfItsInstant() {
    var planner = Planner()
    let none = ReminderSchedule.none
    let end = Self.at(days: 3, seconds: 0.75)
    planner.add(
      Trial(
        id: TrialID(1), subject: "a", period: TrialPeriod(startDate: .day(0), endDate: end), reminders: none),
      now: .day(0))
    let limits = [Self.at(days: 3, seconds: -0.25), Self.at(days: 3), Self.at(days: 3, seconds: 0.5)]
    #expect(planner.trialsDue(through: limits) == [0, 1, 1])
  }

  @Test func farTrials_CountedByTheSecondHeld_AsIfHeldInFull() {
    var far = Planner()
    far.holdFar(lookahead: .days(1), now: .day(0))
    var full = Planner()
    let trials = [
      makeTrial(1, start: .day(0), days: 30, reminders: .none),
      makeTrial(2, start: .day(0), days: 10),
      makeTrial(3, start: .day(0), days: 1.5),
      Trial(
        id: TrialID(4), subject: "d",
        period: TrialPeriod(startDate: .day(0), endDate: Self.at(days: 20, seconds: 0.25)), reminders: .none),
    ]
    for trial in trials {
      far.add(trial, now: .day(0))
      full.add(trial, now: .day(0))
    }
    #expect(far.farTrialCount == 3)
    let limits = [
      Date.day(1), .day(2), .day(7), Self.at(days: 20, seconds: -1), .day(20), .day(29), .day(30),
    ]
    #expect(far.trialsDue(through: limits) == [1, 1, 2, 2, 3, 3, 4])
    #expect(full.trialsDue(through: limits) == far.trialsDue(through: limits))
  }

  @Test func pausedTrial_CountedByItsResume_OnlyWhenItsPauseRunsOut() {
    var planner = Planner()
    let period = TrialPeriod(startDate: .day(0), endDate: .day(10))
    planner.add(
      Trial(
        id: TrialID(1), subject: "a", period: period, state: .paused,
        pause: TrialPause(since: .day(1), until: .day(4))), now: .day(1))
    planner.add(
      Trial(id: TrialID(2), subject: "b", period: period, state: .paused, pause: TrialPause(since: .day(1))),
      now: .day(1))
    #expect(planner.trialCount == 1)
    #expect(planner.trialsDue(through: [.day(3), .day(4), .day(9), .day(100)]) == [0, 1, 1, 1])
  }

  @Test func endedTrial_IsNotCounted_AndATakenEventMovesATrialOn() {
    let driver = PlannerDriver(now: .day(0))
    driver.start(makeTrial(1, start: .day(0), days: 5))
    driver.start(makeTrial(2, start: .day(0), days: 5))
    #expect(driver.planner.trialsDue(through: [.day(2), .day(5)]) == [2, 2])
    driver.end(TrialID(2))
    driver.scheduler.advance(to: .day(2.5))
    #expect(driver.taken.count == 1)
    // Trial 1's next event is its one-day reminder, at day 4.
    #expect(driver.planner.trialsDue(through: [.day(3), .day(4)]) == [0, 1])
    driver.scheduler.advance(to: .day(6))
    #expect(driver.planner.trialsDue(through: [.day(100)]) == [0])
  }

  @Test func overdueEvents_CountForEveryLimit() {
    var planner = Planner()
    // Read back from a store after the daemon was down: every event is overdue at day 10.
    planner.restore(makeTrial(1, start: .day(0), days: 5)) { _ in false }
    #expect(planner.trialsDue(through: [Self.at(days: 10, seconds: Self.second)]) == [1])
  }

  /// Random trials, some far, some with fractions of a second in their times, against the count
  /// the test makes from each trial's next event.
  @Test func randomTrials_MatchTheirNextEvents() {
    var random = SeededGenerator(seed: 0x0075_7460_6f6f_6b)
    let now = Date.day(0)
    var planner = Planner()
    planner.holdFar(lookahead: .seconds(43_200), now: now)
    var nextSeconds: [Double] = []
    for raw in 1...500 as ClosedRange<UInt64> {
      let days = Double.random(in: 0.001..<40, using: &random)
      let trial = makeTrial(raw, start: now, days: days, reminders: raw % 3 == 0 ? .none : .default)
      planner.add(trial, now: now)
      let next = trial.events.first { $0.due > now } ?? trial.events.last!
      nextSeconds.append(next.due.timeIntervalSinceReferenceDate.rounded(.down))
    }
    #expect(planner.farTrialCount > 100)
    // 20 limits: two passes of the tally.
    let limits = (0..<20).map { _ in
      now.addingTimeInterval(Double.random(in: 0..<(45 * 86_400), using: &random))
    }
    let expected = limits.map { limit in
      nextSeconds.count(where: { $0 <= limit.timeIntervalSinceReferenceDate.rounded(.down) })
    }
    #expect(planner.trialsDue(through: limits) == expected)
  }
}
