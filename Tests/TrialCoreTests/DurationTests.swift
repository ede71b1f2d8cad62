import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@Suite struct DurationTests {
  @Test(arguments: [
    (0.0, Duration.zero), (1.5, .milliseconds(1_500)), (0.000_000_4, .zero), (0.000_000_5, .microseconds(1)),
    (-0.000_000_5, .microseconds(-1)), (-1.25, .milliseconds(-1_250)),
    (86_400.000_2, .microseconds(86_400_000_200)),
    (0.1, .milliseconds(100)),
  ])
  func initTimeInterval_Seconds_RoundsToTheMicrosecond(seconds: Double, span: Duration) {
    #expect(Duration(timeInterval: seconds) == span)
  }

  @Test func initTimeInterval_NotFinite_IsClampedOrZero() {
    #expect(Duration(timeInterval: .nan) == .zero)
    #expect(Duration(timeInterval: .infinity) == .seconds(9_200_000_000_000_000_000))
    #expect(Duration(timeInterval: -.infinity) == .seconds(-9_200_000_000_000_000_000))
  }

  /// Spans of whole microseconds survive a trip through `TimeInterval`, as the store's
  /// lateness and grace fields need.
  @Test func timeInterval_WholeMicroseconds_RoundTrips() {
    var generator = SeededGenerator(seed: 0x6475_7261_7469_6f6e)
    for _ in 0..<100_000 {
      let microseconds = Int64.random(in: -2_000_000_000_000_000...2_000_000_000_000_000, using: &generator)
      let span = Duration.microseconds(microseconds)
      #expect(Duration(timeInterval: span.timeInterval) == span, "\(microseconds) us")
    }
    #expect(Duration.milliseconds(100).timeInterval == 0.1)
    #expect(Duration.hours(36).timeInterval == 129_600)
    #expect(Duration.nanoseconds(1).timeInterval == 1e-9)
  }

  @Test(arguments: [
    (Duration.microseconds(1_499), Int64(1)), (.microseconds(1_500), 2), (.microseconds(-1_500), -2),
    (.microseconds(-1_499), -1), (.days(1), 86_400_000), (.seconds(Int64.max), Int64.max),
  ])
  func roundedMilliseconds_HalfAMillisecond_RoundsAwayFromZero(span: Duration, milliseconds: Int64) {
    #expect(span.roundedMilliseconds == milliseconds)
  }

  @Test func roundedMicroseconds_HalfAMicrosecond_RoundsAwayFromZero() {
    #expect(Duration.nanoseconds(1_499).roundedMicroseconds == 1)
    #expect(Duration.nanoseconds(1_500).roundedMicroseconds == 2)
    #expect(Duration.nanoseconds(-1_500).roundedMicroseconds == -2)
  }

  /// The conversions read the standard library's attosecond count; checked against the span
  /// rebuilt from its public components, for spans of either sign down to the attosecond.
  @Test func conversions_RandomSpans_AgreeWithTheComponents() {
    var generator = SeededGenerator(seed: 0x6174_746f_7365_636f)
    let perSecond: Int128 = 1_000_000_000_000_000_000
    func rounded(_ total: Int128, _ unit: Int128) -> Int64 {
      let (quotient, rest) = total.quotientAndRemainder(dividingBy: unit)
      let away = 2 * rest.magnitude >= unit.magnitude ? (total < 0 ? -1 : 1) : 0
      return Int64(clamping: quotient + Int128(away))
    }
    for round in 0..<4_000 {
      let seconds = Int64.random(in: -4_000_000_000_000...4_000_000_000_000, using: &generator)
      // Whole microseconds (every span read or stored), then any attosecond count.
      let attoseconds =
        round.isMultiple(of: 2)
        ? Int64.random(in: -999_999...999_999, using: &generator) * 1_000_000_000_000
        : Int64.random(in: -999_999_999_999_999_999...999_999_999_999_999_999, using: &generator)
      let span = Duration(secondsComponent: seconds, attosecondsComponent: attoseconds)
      let (whole, rest) = span.components
      let total = Int128(whole) * perSecond + Int128(rest)
      #expect(span.roundedMilliseconds == rounded(total, 1_000_000_000_000_000), "\(span)")
      #expect(span.roundedMicroseconds == rounded(total, 1_000_000_000_000), "\(span)")
      let expected =
        total.isMultiple(of: 1_000_000_000_000)
        ? Double(total / 1_000_000_000_000) / 1e6 : Double(total) / 1e18
      #expect(span.timeInterval == expected, "\(span)")
    }
  }

  @Test func units_DaysHoursMinutes_AreWholeSeconds() {
    #expect(Duration.days(2) == .seconds(172_800))
    #expect(Duration.hours(3) == .seconds(10_800))
    #expect(Duration.minutes(-5) == .seconds(-300))
  }

  @Test func dateArithmetic_AddingAndSince_AreInverse() {
    let start = Date(timeIntervalSince1970: 1_750_000_000.25)
    #expect(start.adding(.hours(36)) == start.addingTimeInterval(129_600))
    #expect(start.adding(.milliseconds(-250)) == Date(timeIntervalSince1970: 1_750_000_000))
    #expect(start.adding(.days(3)).duration(since: start) == .days(3))
    #expect(start.duration(since: start.adding(.seconds(90))) == .seconds(-90))
  }
}
