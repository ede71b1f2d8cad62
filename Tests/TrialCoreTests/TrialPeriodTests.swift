import Foundation
import Testing
import TrialCore
import TrialTesting

struct TrialPeriodTests {
  let now = Date(timeIntervalSinceReferenceDate: 760_000_000)

  @Test func creation_WithClock_AddsDaysToCurrentTime() {
    let period = TrialPeriod(numberOfDays: Days(10), clock: StaticWallClock(now))
    #expect(period.startDate == now)
    #expect(period.endDate == now.addingTimeInterval(10 * 86_400))
    #expect(period.length == Days(10))
  }

  @Test func creation_WithoutNumberOfDays_LastsFiveDays() {
    let period = TrialPeriod(clock: StaticWallClock(now))
    #expect(period.endDate == now.addingTimeInterval(5 * 86_400))
    #expect(period.length == Days.defaultTrialLength)
  }

  @Test func creation_WithFractionalDays_EndsPartWayThroughADay() {
    let period = TrialPeriod(numberOfDays: Days(0.5), clock: StaticWallClock(now))
    #expect(period.endDate == now.addingTimeInterval(43_200))
  }

  @Test func creation_ReadsTheClockOnce_StartIsTheClocksNow() {
    let clock = ManualWallClock(now)
    let period = TrialPeriod(numberOfDays: Days(1), clock: clock)
    clock.advance(by: 3_600)
    #expect(period.startDate == now)
  }

  @Test func isExpired_BeforeEndDate_IsFalse() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    #expect(!period.isExpired(clock: StaticWallClock(now)))
    #expect(!period.isExpired(clock: StaticWallClock(period.endDate.addingTimeInterval(-0.001))))
  }

  @Test func isExpired_AtExactEndDate_IsTrue() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    #expect(period.isExpired(clock: StaticWallClock(period.endDate)))
  }

  @Test func isExpired_AfterEndDate_IsTrue() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    #expect(period.isExpired(clock: StaticWallClock(period.endDate.addingTimeInterval(1))))
  }

  @Test func isExpired_FollowsAManualClock() {
    let clock = ManualWallClock(now)
    let period = TrialPeriod(numberOfDays: Days(1), clock: clock)
    #expect(!period.isExpired(clock: clock))
    clock.advance(by: 86_399)
    #expect(!period.isExpired(clock: clock))
    clock.advance(by: 1)
    #expect(period.isExpired(clock: clock))
  }

  @Test func daysLeft_AtStart_IsTheWholeLength() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    #expect(period.daysLeft(clock: StaticWallClock(now)) == Days(5))
  }

  @Test func daysLeft_WithPartialDay_RoundsUp() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    // 2 days and 2.4 hours left.
    let later = StaticWallClock(period.endDate.addingTimeInterval(-2.1 * 86_400))
    let left = period.daysLeft(clock: later)
    #expect(abs(left.amount - 2.1) < 1e-9)
    #expect(left.userFacingAmount == 3)
    #expect(!left.isPast)
  }

  @Test func daysLeft_AtExactEndDate_IsZeroAndNotPast() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    let left = period.daysLeft(clock: StaticWallClock(period.endDate))
    #expect(left == Days(0))
    #expect(!left.isPast)
  }

  @Test func daysLeft_AfterEndDate_IsNegativeAndPast() {
    let period = TrialPeriod(numberOfDays: Days(5), clock: StaticWallClock(now))
    let left = period.daysLeft(clock: StaticWallClock(period.endDate.addingTimeInterval(36 * 3_600)))
    #expect(left == Days(-1.5))
    #expect(left.isPast)
  }
}
