import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

struct TimeSpanTests {
  /// Every unit name systemd.time(7) lists, with the length systemd gives it.
  static let units: [(name: String, seconds: Double)] = [
    ("usec", 1e-6), ("us", 1e-6), ("µs", 1e-6),
    ("msec", 1e-3), ("ms", 1e-3),
    ("seconds", 1), ("second", 1), ("sec", 1), ("s", 1),
    ("minutes", 60), ("minute", 60), ("min", 60), ("m", 60),
    ("hours", 3_600), ("hour", 3_600), ("hr", 3_600), ("h", 3_600),
    ("days", 86_400), ("day", 86_400), ("d", 86_400),
    ("weeks", 604_800), ("week", 604_800), ("w", 604_800),
    ("months", 2_629_800), ("month", 2_629_800), ("M", 2_629_800),
    ("years", 31_557_600), ("year", 31_557_600), ("y", 31_557_600),
  ]

  @Test(arguments: TimeSpanTests.units.map(\.name))
  func parse_EachUnit_ScalesTheNumber(unit: String) throws {
    let seconds = try #require(Self.units.first { $0.name == unit }).seconds
    let parsed = try TimeSpan.parse("3\(unit)").timeInterval
    #expect(abs(parsed - 3 * seconds) <= 1e-9 * max(1, 3 * seconds), "3\(unit) parsed as \(parsed)s")
    let spaced = try TimeSpan.parse("3 \(unit)").timeInterval
    #expect(spaced == parsed)
  }

  @Test func parse_SeveralComponents_AddUp() throws {
    #expect(try TimeSpan.parse("1d 12h") == .hours(36))
    #expect(try TimeSpan.parse("1h30min").timeInterval == 5_400)
    let long: Double = 2 * 604_800 + 86_400 + 3 * 3_600 + 4 * 60 + 5
    #expect(try TimeSpan.parse("2w 1d 3h 4min 5s").timeInterval == long)
    #expect(try TimeSpan.parse("1min 500ms").timeInterval == 60.5)
  }

  @Test func parse_BareNumber_IsSeconds() throws {
    #expect(try TimeSpan.parse("90").timeInterval == 90)
    #expect(try TimeSpan.parse("0").timeInterval == 0)
    #expect(try TimeSpan.parse("1.5").timeInterval == 1.5)
    #expect(abs(try TimeSpan.parse("1h 30").timeInterval - 3_630) < 1e-9)
  }

  @Test func parse_FractionsAndSurroundingWhitespace_AreAccepted() throws {
    #expect(try TimeSpan.parse("1.5h").timeInterval == 5_400)
    #expect(try TimeSpan.parse("  2d\t").timeInterval == 172_800)
    #expect(try TimeSpan.parse(".5d").timeInterval == 43_200)
  }

  @Test(arguments: [
    ("", "empty"),
    ("   ", "empty"),
    ("5x", "unknown unit \"x\""),
    ("1d 2fortnights", "unknown unit \"fortnights\""),
    ("abc", "expected a number at \"abc\""),
    ("1d x", "expected a number at \"x\""),
    ("-5s", "expected a number at \"-5s\""),
    ("1..5s", "expected a number at \"1..5s\""),
    ("3d 12h,", "expected a number at \",\""),
  ])
  func parse_BadInput_NamesTheBadToken(input: String, problem: String) {
    #expect {
      _ = try TimeSpan.parse(input)
    } throws: { error in
      guard let error = error as? TimeSpan.ParseError else { return false }
      return error.problem == problem && error.input == input
        && error.description == "invalid time span \"\(input)\": \(problem)"
    }
  }

  @Test func format_MixedUnits_PrintsLargestFirst() {
    #expect(TimeSpan.format(.hours(36)) == "1d 12h")
    #expect(TimeSpan.format(.seconds(90)) == "1min 30s")
    #expect(TimeSpan.format(.milliseconds(500)) == "500ms")
    #expect(TimeSpan.format(.milliseconds(90_061_500)) == "1d 1h 1min 1s 500ms")
    #expect(TimeSpan.format(.microseconds(250)) == "250us")
    #expect(TimeSpan.format(.days(14)) == "2w")
    #expect(TimeSpan.format(.seconds(2_629_800)) == "1month")
    #expect(TimeSpan.format(.seconds(31_557_600)) == "1y")
  }

  @Test func format_ZeroAndNegative() {
    #expect(TimeSpan.format(.zero) == "0")
    #expect(TimeSpan.format(.days(-1)) == "-1d")
    #expect(TimeSpan.format(.seconds(-5_400)) == "-1h 30min")
  }

  @Test(arguments: [1.0, 59, 60, 3_599, 5_400, 86_400, 129_600, 604_801, 0.25, 7_776_000] as [Double])
  func format_ThenParse_GivesTheSameSpan(seconds: Double) throws {
    let span = Duration(timeInterval: seconds)
    let text = TimeSpan.format(span)
    let parsed = try TimeSpan.parse(text)
    #expect(parsed == span, "\(seconds)s formatted as \(text)")
  }

  @Test(arguments: [
    ("0.1s", Duration.milliseconds(100)), ("1.5h", .minutes(90)), (".5d", .hours(12)),
    ("2.5y", .seconds(78_894_000)),
    ("1.0000005s", .microseconds(1_000_001)), ("1.0000004999s", .seconds(1)), ("1.5us", .microseconds(2)),
    ("0.3", .milliseconds(300)), ("1.123456789123456789123456789s", .microseconds(1_123_457)),
    ("5.", .seconds(5)), ("0.000001y", .microseconds(31_557_600)),
  ])
  func parse_Fractions_AreExactToTheMicrosecond(text: String, span: Duration) throws {
    #expect(try TimeSpan.parse(text) == span)
  }

  @Test(arguments: [
    (Duration.microseconds(1_999_600), "2s"), (.microseconds(1_999_499), "1s 999ms"),
    (.microseconds(500), "1ms"),
    (.microseconds(499), "499us"), (.nanoseconds(400), "0us"), (.milliseconds(-1_500), "-1s 500ms"),
    (.microseconds(59_999_999), "1min"),
  ])
  func format_SpanBetweenMilliseconds_RoundsToTheNearest(span: Duration, text: String) {
    #expect(TimeSpan.format(span) == text)
  }
}

/// The short forms people read: in the status line, journal messages and trialwatchctl.
@Suite struct TimeSpanStyleTests {
  @Test(arguments: [
    (0.0, "0s"), (-5.0, "0s"), (0.000_4, "0s"), (0.25, "250ms"), (0.3, "300ms"), (0.9994, "999ms"),
    (0.9996, "1s"),
    (1.0, "1s"), (59.9, "59s"), (59.9996, "1min"), (60.0, "1min"), (90.0, "1min 30s"), (125.0, "2min 5s"),
    (3600.0, "1h"), (3605.0, "1h"), (7985.0, "2h 13min"), (8039.999, "2h 13min"), (86_400.0, "1d"),
    (90_000.0, "1d 1h"), (90_061.0, "1d 1h"), (172_799.0, "1d 23h"), (400 * 86_400.0, "400d"),
  ])
  func formatBrief_Spans_ShowTwoUnitsRoundedDown(seconds: Double, text: String) {
    #expect(TimeSpan.format(Duration(timeInterval: seconds), style: .brief) == text)
  }

  @Test(arguments: [
    (86_400.0, "1 day"), (86_401.0, "2 days"), (2.5 * 86_400, "3 days"), (43_200.0, "12h"),
    (86_399.0, "1 day"), (86_399.995, "1 day"), (86_400.000_4, "1 day"), (84_600.0, "23h 30min"),
    (84_600.5, "23h 31min"), (29.997, "30s"), (1.5, "2s"), (0.25, "250ms"), (3_599.2, "1h"), (0.0, "0s"),
    (-1.0, "0s"), (59.5, "1min"), (3_660.001, "1h 2min"),
  ])
  func formatTimeLeft_Spans_AreRoundedUp(seconds: Double, text: String) {
    #expect(TimeSpan.format(Duration(timeInterval: seconds), style: .timeLeft) == text)
  }

  @Test func formatExact_IsTheSystemdForm() {
    #expect(TimeSpan.format(.seconds(90_061), style: .exact) == "1d 1h 1min 1s")
    #expect(TimeSpan.format(.seconds(90_061), style: .exact) == TimeSpan.format(.seconds(90_061)))
  }

  @Test func formatPrecise_IsExactToTheMicrosecond() {
    #expect(TimeSpan.format(.microseconds(604_801_086_400), style: .precise) == "1w 1s 86ms 400us")
    #expect(TimeSpan.format(.microseconds(250), style: .precise) == "250us")
    #expect(TimeSpan.format(.microseconds(-1_500), style: .precise) == "-1ms 500us")
    #expect(TimeSpan.format(.seconds(90_061), style: .precise) == "1d 1h 1min 1s")
    #expect(TimeSpan.format(.zero, style: .precise) == "0")
    #expect(TimeSpan.format(.nanoseconds(1_000_499), style: .precise) == "1ms")
    #expect(TimeSpan.format(.seconds(Int64.max), style: .precise) == "292271023045y 3month 3w 2d 2h 7s")
  }

  /// Found by the control fuzz target (FuzzTesting/Regressions/control/
  /// extension-by-a-span-finer-than-a-millisecond): a span is read to the microsecond, but the
  /// wire wrote it to the millisecond, so `"by":"7.000001d"` (7 days and 86.4 ms) went out again
  /// as `1w 86ms`. Written precisely, every span read is written as itself.
  @Test func formatPrecise_OfAnySpanRead_ParsesBackToIt() throws {
    var generator = SeededGenerator(seed: 0x7072_6563_6973_6531)
    for _ in 0..<20_000 {
      let text =
        "\(Int.random(in: 0...400, using: &generator)).\(Int.random(in: 0...999_999_999, using: &generator))"
        + ["d", "h", "s", "ms", "w", ""].randomElement(using: &generator)!
      let span = try TimeSpan.parse(text)
      let written = TimeSpan.format(span, style: .precise)
      #expect(try TimeSpan.parse(written) == span, "\(text) written as \(written)")
    }
  }

  /// Brief never says more than the span, time left never less, and both stay within one
  /// unit of what they show.
  @Test func formatStyles_RandomSpans_BracketTheSpan() throws {
    var generator = SeededGenerator(seed: 0x7374_796c_6573_3031)
    for _ in 0..<20_000 {
      let milliseconds = Int64.random(in: 1_000...40 * 86_400_000, using: &generator)
      let span = Duration.milliseconds(milliseconds)
      let brief = try TimeSpan.parse(TimeSpan.format(span, style: .brief))
      #expect(brief <= span && span - brief < .days(1), "\(milliseconds) ms")
      if span < .hours(1) { #expect(span - brief < .seconds(1)) }
      let leftText = TimeSpan.format(span, style: .timeLeft)
      let left = try TimeSpan.parse(
        leftText.replacingOccurrences(of: " days", with: "d").replacingOccurrences(of: " day", with: "d"))
      #expect(left >= span && left - span < .days(1), "\(milliseconds) ms")
    }
  }
}

struct TimeSpanEdgeTests {
  @Test func format_HugeSpan_PrintsAllDigits() {
    #expect(TimeSpan.format(.seconds(31_557_600 * 100_000_000_000)) == "100000000000y")
    #expect(TimeSpan.format(.seconds(Int64.max)) == "292271023045y 3month 3w 2d 2h 7s")
    #expect(TimeSpan.format(.seconds(Int64.min + 1)) == "-292271023045y 3month 3w 2d 2h 7s")
  }

  @Test func parse_NumberTooLargeToHold_IsRejected() {
    let huge = String(repeating: "9", count: 400)
    #expect {
      _ = try TimeSpan.parse(huge + "y")
    } throws: { error in
      (error as? TimeSpan.ParseError)?.problem == "number too large at \"\(huge)\""
    }
    #expect {
      _ = try TimeSpan.parse("300000000000y")
    } throws: { error in
      (error as? TimeSpan.ParseError)?.problem == "number too large at \"300000000000\""
    }
    #expect((try? TimeSpan.parse("9223372036854775807s")) == .seconds(Int64.max))
    #expect {
      _ = try TimeSpan.parse("9223372036854775808s")
    } throws: { error in
      (error as? TimeSpan.ParseError)?.problem == "number too large at \"9223372036854775808\""
    }
    // Each number fits, but their total does not.
    let nearLimit = "200000000000y"
    #expect {
      _ = try TimeSpan.parse(nearLimit + " " + nearLimit)
    } throws: { error in
      (error as? TimeSpan.ParseError)?.problem == "too large"
    }
  }
}
