import Foundation
import Testing
import TrialCore

struct DaysTests {
  @Test func timeInterval_OneDay_Is86400Seconds() {
    #expect(Days(1).timeInterval == 86_400)
  }

  @Test func timeInterval_FractionalDays_ScalesBySecondsPerDay() {
    #expect(Days(1.5).timeInterval == 129_600)
    #expect(Days(0.25).timeInterval == 21_600)
    #expect(Days(-2).timeInterval == -172_800)
  }

  @Test func initWithTimeInterval_TwelveHours_IsHalfADay() {
    #expect(Days(timeInterval: 43_200).amount == 0.5)
    #expect(Days(timeInterval: 43_200) == Days(0.5))
  }

  @Test(arguments: [0.0, 1, 90, 3_600, 86_400, 259_200, -7_200, 0.001])
  func initWithTimeInterval_RoundTripsThroughTimeInterval(seconds: Double) {
    #expect(Days(timeInterval: seconds).timeInterval == seconds)
  }

  @Test func userFacingAmount_WithFraction_RoundsUp() {
    #expect(Days(2.1).userFacingAmount == 3)
    #expect(Days(0.01).userFacingAmount == 1)
    #expect(Days(4.999).userFacingAmount == 5)
  }

  @Test func userFacingAmount_WholeNumber_IsUnchanged() {
    #expect(Days(3).userFacingAmount == 3)
    #expect(Days(0).userFacingAmount == 0)
  }

  @Test func userFacingAmount_Negative_RoundsTowardsZero() {
    // Rounded up, as always: 1.5 days overdue reads as -1.
    #expect(Days(-1.5).userFacingAmount == -1)
  }

  @Test func isPast_NegativeAmount_IsTrue() {
    #expect(Days(-0.0001).isPast)
    #expect(Days(-3).isPast)
  }

  @Test func isPast_ZeroOrPositive_IsFalse() {
    #expect(!Days(0).isPast)
    #expect(!Days(0.5).isPast)
  }

  @Test func comparison_OrdersByAmount() {
    #expect(Days(1) < Days(2))
    #expect(Days(-1) < Days(0))
    #expect([Days(3), Days(1), Days(2)].sorted() == [Days(1), Days(2), Days(3)])
  }

  @Test func defaultTrialLength_IsFiveDays() {
    #expect(Days.defaultTrialLength == Days(5))
  }

  @Test func description_UsesTimeSpanFormat() {
    #expect(Days(1.5).description == "1d 12h")
  }

  @Test func initFromDuration_WholeAndPartDays_GivesTheDays() {
    #expect(Days(Duration.hours(36)) == Days(1.5))
    #expect(Days(Duration.days(5)) == .defaultTrialLength)
    #expect(Days(Duration.seconds(-43_200)) == Days(-0.5))
  }

  @Test func duration_OfDays_IsTheSameSpan() {
    #expect(Days(1.5).duration == .hours(36))
    #expect(Days(timeInterval: 0.001).duration == .milliseconds(1))
    #expect(Days(-2).duration == .days(-2))
  }

  @Test func description_NonFiniteAmount_IsNamed() {
    #expect(Days(.infinity).description == "inf days")
    #expect(Days(.nan).description == "nan days")
  }
}
