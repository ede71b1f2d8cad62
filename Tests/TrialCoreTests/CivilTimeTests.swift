import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

/// `CivilTime` and `RFC3339` checked against Foundation's `ISO8601DateFormatter` and
/// `Calendar` in UTC.
///
/// Foundation's Gregorian calendar is Julian before 15 October 1582; trialwatch's is
/// proleptic, as RFC 3339 asks. The proleptic calendar repeats every 400 years (146,097
/// days), so an earlier instant is compared by moving it 1,600 years later, asking Foundation
/// there, and taking the 1,600 years off its answer.
@Suite struct CivilTimeTests {
  /// 1600-01-01T00:00:00Z: from here on both calendars agree.
  static let gregorianSince: TimeInterval = -11_676_096_000
  /// Four 400-year eras.
  static let shift: TimeInterval = 4 * 146_097 * 86_400
  static let shiftYears = 1_600
  /// 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z.
  static let yearOne: Int64 = -62_135_596_800_000
  static let yearTenThousand: Int64 = 253_402_300_800_000

  static func foundationFormatter(_ zone: TimeZone = TimeZone(identifier: "UTC")!) -> ISO8601DateFormatter {
    let formatter = ISO8601DateFormatter()
    formatter.timeZone = zone
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter
  }

  static var utcCalendar: Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar
  }

  /// Foundation's RFC 3339 text for `date`, with `.000` left out as trialwatch leaves it out,
  /// moved back by `years` (`date` is that many years later than the instant meant).
  static func foundationText(_ date: Date, formatter: ISO8601DateFormatter, yearsBack years: Int = 0)
    -> String
  {
    var text = formatter.string(from: date)
    if let range = text.range(of: ".000") { text.removeSubrange(range) }
    guard years != 0 else { return text }
    let year = Int(text.prefix(4))! - years
    return String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year) + text.dropFirst(4)
  }

  // MARK: Formatting

  @Test(arguments: [
    (0.0, "1970-01-01T00:00:00Z", "1970-01-01 00:00:00 UTC"),
    (-1.0, "1969-12-31T23:59:59Z", "1969-12-31 23:59:59 UTC"),
    (951_782_400.0, "2000-02-29T00:00:00Z", "2000-02-29 00:00:00 UTC"),
    (1_709_251_199.25, "2024-02-29T23:59:59.250Z", "2024-02-29 23:59:59 UTC"),
    (1_795_788_000.0, "2026-11-27T14:00:00Z", "2026-11-27 14:00:00 UTC"),
    (4_107_542_400.0, "2100-03-01T00:00:00Z", "2100-03-01 00:00:00 UTC"),
    (1_750_000_000.0, "2025-06-15T15:06:40Z", "2025-06-15 15:06:40 UTC"),
    (-62_135_596_800.0, "0001-01-01T00:00:00Z", "0001-01-01 00:00:00 UTC"),
    (253_402_300_799.999, "9999-12-31T23:59:59.999Z", "9999-12-31 23:59:59 UTC"),
    (-62_167_219_200.0, "0000-01-01T00:00:00Z", "0000-01-01 00:00:00 UTC"),
    (-62_198_755_200.0, "-0001-01-01T00:00:00Z", "-0001-01-01 00:00:00 UTC"),
    (253_402_300_800.0, "10000-01-01T00:00:00Z", "10000-01-01 00:00:00 UTC"),
  ])
  func format_KnownInstants_PrintTheirText(seconds: Double, rfc3339: String, readable: String) {
    let date = Date(timeIntervalSince1970: seconds)
    #expect(RFC3339.format(date) == rfc3339)
    #expect(CivilTime(date).rfc3339 == rfc3339)
    #expect(CivilTime(date).readable == readable)
  }

  /// Any instant, to the sub-microsecond, from 1600 to 9999: the rounding to the millisecond
  /// is Foundation's too.
  @Test func format_RandomInstantsSince1600_MatchFoundation() {
    let formatter = Self.foundationFormatter()
    var generator = SeededGenerator(seed: 0x6369_7669_6c74_696d)
    let end = Double(Self.yearTenThousand) / 1000
    for _ in 0..<20_000 {
      let date = Date(timeIntervalSince1970: Double.random(in: Self.gregorianSince..<end, using: &generator))
      #expect(
        RFC3339.format(date) == Self.foundationText(date, formatter: formatter),
        "\(date.timeIntervalSince1970)")
    }
  }

  /// Whole milliseconds over years 1 to 9999, before 1600 through the 400-year cycle.
  @Test func format_RandomInstantsOfYears1To9999_MatchFoundation() {
    let formatter = Self.foundationFormatter()
    var generator = SeededGenerator(seed: 0x7965_6172_7331_3939)
    for _ in 0..<20_000 {
      let milliseconds = Int64.random(in: Self.yearOne..<Self.yearTenThousand, using: &generator)
      let date = CivilTime.date(millisecondsSince1970: milliseconds)
      let expected =
        date.timeIntervalSince1970 < Self.gregorianSince
        ? Self.foundationText(date + Self.shift, formatter: formatter, yearsBack: Self.shiftYears)
        : Self.foundationText(date, formatter: formatter)
      #expect(RFC3339.format(date) == expected, "\(milliseconds) ms")
      #expect(CivilTime.millisecondsSince1970(date) == milliseconds)
    }
  }

  /// Leap days, year ends, instants before 1970 and the half milliseconds in between.
  @Test(arguments: [
    "2000-02-28T23:59:59.999Z", "2000-02-29T00:00:00.000Z", "2000-03-01T00:00:00.000Z",
    "2024-02-29T12:00:00.000Z", "2100-02-28T23:59:59.999Z", "2100-03-01T00:00:00.000Z",
    "1900-03-01T00:00:00.000Z", "2400-02-29T00:00:00.000Z", "1999-12-31T23:59:59.999Z",
    "2000-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z",
    "1600-01-01T00:00:00.000Z", "1965-06-30T12:34:56.789Z", "9999-12-31T23:59:58.000Z",
  ])
  func format_EdgeInstantsAndHalfMilliseconds_MatchFoundation(text: String) throws {
    let formatter = Self.foundationFormatter()
    let base = try #require(formatter.date(from: text)).timeIntervalSince1970
    for delta in [0, 0.0004, 0.0005, 0.0006, 0.9994, 0.9995, 0.9996, -0.0004, -0.0005, -0.0006, -0.9995] {
      let date = Date(timeIntervalSince1970: base + delta)
      let expected = Self.foundationText(date, formatter: formatter)
      #expect(RFC3339.format(date) == expected, "\(text) + \(delta)s")
      #expect(
        CivilTime(date).readable == expected.prefix(19).replacingOccurrences(of: "T", with: " ") + " UTC")
    }
  }

  @Test func format_HalfMillisecond_RoundsUp() {
    #expect(RFC3339.format(Date(timeIntervalSince1970: 0.0625)) == "1970-01-01T00:00:00.063Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: -0.0625)) == "1969-12-31T23:59:59.938Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: 0.9995)) == "1970-01-01T00:00:01Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: 0.9994)) == "1970-01-01T00:00:00.999Z")
  }

  /// The rule that keeps the two forms together: round once, then floor every field.
  @Test func readable_AnyInstant_ShowsTheSecondOfItsRFC3339Form() {
    var generator = SeededGenerator(seed: 0x7265_6164_6162_6c65)
    for _ in 0..<20_000 {
      let seconds = Double(Int64.random(in: -5_000_000_000...5_000_000_000, using: &generator))
      let date = Date(
        timeIntervalSince1970: seconds + [0.9994, 0.9995, 0.9996, 0.4995, 0][Int(seconds.magnitude) % 5])
      let rfc3339 = RFC3339.format(date)
      #expect(
        CivilTime(date).readable == rfc3339.prefix(19).replacingOccurrences(of: "T", with: " ") + " UTC")
    }
  }

  @Test func fields_RandomInstantsOfYears1To9999_MatchFoundationCalendar() {
    let calendar = Self.utcCalendar
    var generator = SeededGenerator(seed: 0x6361_6c65_6e64_6172)
    for _ in 0..<10_000 {
      let milliseconds = Int64.random(in: Self.yearOne..<Self.yearTenThousand, using: &generator)
      let fields = CivilTime(millisecondsSince1970: milliseconds)
      let early = Double(milliseconds) / 1000 < Self.gregorianSince
      // A fifth of a millisecond in, so that Foundation's floating-point fields floor to it.
      let date = CivilTime.date(millisecondsSince1970: milliseconds) + 0.0002 + (early ? Self.shift : 0)
      let expected = calendar.dateComponents(
        [.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
      #expect(fields.year == expected.year! - (early ? Self.shiftYears : 0), "\(milliseconds) ms")
      #expect(fields.month == expected.month)
      #expect(fields.day == expected.day)
      #expect(fields.hour == expected.hour)
      #expect(fields.minute == expected.minute)
      #expect(fields.second == expected.second)
      #expect(fields.millisecond == expected.nanosecond! / 1_000_000)
      #expect(fields.millisecondsSince1970 == milliseconds)
    }
  }

  @Test func daysSince1970_EveryDayOfFourHundredYears_MatchesFoundationCalendar() {
    let calendar = Self.utcCalendar
    let first = CivilTime.daysSince1970(year: 1800, month: 1, day: 1)
    #expect(first == -62_091)
    for days in first..<first + 146_097 {
      let date = Date(timeIntervalSince1970: Double(days) * 86_400)
      let parts = calendar.dateComponents([.year, .month, .day], from: date)
      #expect(CivilTime.daysSince1970(year: parts.year!, month: parts.month!, day: parts.day!) == days)
      if parts.day == 1 {
        let length = calendar.range(of: .day, in: .month, for: date)?.count
        #expect(CivilTime.daysInMonth(parts.month!, of: parts.year!) == length)
      }
    }
  }

  @Test func init_FieldsOutOfRange_AreRejected() {
    #expect(CivilTime(year: 2024, month: 2, day: 29) != nil)
    #expect(CivilTime(year: 2023, month: 2, day: 29) == nil)
    #expect(CivilTime(year: 1900, month: 2, day: 29) == nil)
    #expect(CivilTime(year: 2000, month: 2, day: 29) != nil)
    #expect(CivilTime(year: 2025, month: 13, day: 1) == nil)
    #expect(CivilTime(year: 2025, month: 0, day: 1) == nil)
    #expect(CivilTime(year: 2025, month: 4, day: 31) == nil)
    #expect(CivilTime(year: 2025, month: 1, day: 1, hour: 24) == nil)
    #expect(CivilTime(year: 2025, month: 1, day: 1, second: 60) == nil)
    #expect(CivilTime(year: 2025, month: 1, day: 1, millisecond: 1000) == nil)
  }

  @Test func init_ExtremeDates_AreClampedWithoutTrapping() {
    #expect(CivilTime(Date.distantFuture).year == 4001)
    #expect(CivilTime(Date.distantPast).rfc3339 == "0000-12-30T00:00:00Z")  // Julian 0001-01-01
    #expect(
      CivilTime(Date(timeIntervalSince1970: .infinity)).millisecondsSince1970 == 9_000_000_000_000_000_000)
    #expect(
      CivilTime(Date(timeIntervalSince1970: -.infinity)).millisecondsSince1970 == -9_000_000_000_000_000_000)
    #expect(CivilTime(Date(timeIntervalSince1970: .nan)).millisecondsSince1970 == 0)
  }

  // MARK: Parsing

  /// Foundation's texts, with offsets of every kind and 0 to 3 fraction digits, read back
  /// to the instant Foundation reads from them.
  @Test func parse_RandomTextsOfYears1To9999_MatchFoundation() throws {
    var generator = SeededGenerator(seed: 0x7061_7273_6539_3939)
    let offsets = [0, 3_600, -18_000, 19_800, -34_200, 50_400, -43_200, 345 * 60]
    var formatters: [Int: [ISO8601DateFormatter]] = [:]
    for offset in offsets {
      let zone = TimeZone(secondsFromGMT: offset)!
      let whole = ISO8601DateFormatter()
      whole.timeZone = zone
      whole.formatOptions = [.withInternetDateTime]
      formatters[offset] = [whole, Self.foundationFormatter(zone)]
    }
    for round in 0..<10_000 {
      // Whole seconds, or whole milliseconds for texts with a fraction.
      let withFraction = round % 2 == 1
      var milliseconds = Int64.random(
        in: Self.yearOne + 86_400_000..<Self.yearTenThousand - 86_400_000, using: &generator)
      if !withFraction { milliseconds -= milliseconds % 1000 + (milliseconds % 1000 < 0 ? 1000 : 0) }
      let offset = offsets[round % offsets.count]
      let formatter = formatters[offset]![withFraction ? 1 : 0]
      let early = Double(milliseconds) / 1000 < Self.gregorianSince + 2 * 86_400
      let date = CivilTime.date(millisecondsSince1970: milliseconds) + (early ? Self.shift : 0)
      let shiftedText = formatter.string(from: date)
      var text = shiftedText
      if early {
        let year = Int(text.prefix(4))! - Self.shiftYears
        text =
          String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year) + text.dropFirst(4)
      }
      let foundation = try #require(formatter.date(from: shiftedText)) - (early ? Self.shift : 0)
      let parsed = try RFC3339.parse(text)
      #expect(
        CivilTime.millisecondsSince1970(parsed) == CivilTime.millisecondsSince1970(foundation), "\(text)")
      #expect(CivilTime.millisecondsSince1970(parsed) == milliseconds, "\(text)")
      #expect(parsed == CivilTime.date(millisecondsSince1970: milliseconds))
    }
  }

  @Test(
    arguments: [
      ("2025-06-15T15:06:40Z", 1_750_000_000_000), ("2025-06-15T17:06:40+02:00", 1_750_000_000_000),
      ("2025-06-15t10:06:40.5-05:00", 1_750_000_000_500), ("2025-06-15 15:06:40z", 1_750_000_000_000),
      ("2024-02-29T23:59:59.999Z", 1_709_251_199_999), ("2024-03-01T00:00:00+23:59", 1_709_164_860_000),
      ("0001-01-01T00:00:00Z", -62_135_596_800_000), ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
      ("1969-12-31T23:59:59.999Z", -1), ("0000-03-01T00:00:00Z", -62_162_035_200_000),
    ] as [(String, Int64)])
  func parse_KnownTexts_GiveTheirInstant(text: String, milliseconds: Int64) throws {
    let date = try RFC3339.parse(text)
    #expect(date == CivilTime.date(millisecondsSince1970: milliseconds))
    #expect(CivilTime.millisecondsSince1970(date) == milliseconds)
  }

  /// Found by the text fuzz target (FuzzTesting/Regressions/text/rfc3339-rounds-into-year-10000):
  /// a time the rounding or the offset carries out of the years 0000 to 9999 in UTC was read,
  /// but the form it is written in (`10000-01-01T00:00:00Z`) was not.
  @Test(arguments: ["9999-12-31T23:59:59.9996Z", "9999-12-31T23:30:00-01:00", "0000-01-01T00:00:00+00:01"])
  func parse_TimeCarriedOutOfTheYears0000To9999_IsRejected(text: String) {
    let error = #expect(throws: RFC3339.ParseError.self) { try RFC3339.parse(text) }
    #expect(error?.problem.contains("outside the years 0000 to 9999") == true, "\(String(describing: error))")
    #expect(throws: Never.self) { try RFC3339.parse("0000-01-01T00:00:00Z") }
    #expect(throws: Never.self) { try RFC3339.parse("9999-12-31T23:59:59.9994Z") }
  }

  /// Texts with fractions finer than a millisecond, and the millisecond each rounds to.
  static let finerFractions: [(String, Int64)] = [
    ("2025-06-15T15:06:40.0004Z", 1_750_000_000_000), ("2025-06-15T15:06:40.0005Z", 1_750_000_000_001),
    ("2025-06-15T15:06:40.12349999Z", 1_750_000_000_123), ("2025-06-15T15:06:40.9995Z", 1_750_000_001_000),
    ("2025-12-31T23:59:59.9999999Z", 1_767_225_600_000), ("1969-12-31T23:59:59.9995Z", 0),
    ("1969-12-31T23:59:59.9994Z", -1), ("2025-06-15T15:06:40.5Z", 1_750_000_000_500),
    ("2025-06-15T15:06:40.25Z", 1_750_000_000_250),
  ]

  /// Finer fractions round to the nearest millisecond, half up, as formatting does.
  @Test(arguments: finerFractions)
  func parse_FractionFinerThanAMillisecond_RoundsHalfUp(text: String, milliseconds: Int64) throws {
    #expect(CivilTime.millisecondsSince1970(try RFC3339.parse(text)) == milliseconds)
    #expect(try RFC3339.parse(RFC3339.format(try RFC3339.parse(text))) == (try RFC3339.parse(text)))
  }

  @Test func parse_FormattedInstants_RoundTripToTheMillisecond() throws {
    var seconds = -2_208_988_800.0  // 1900-01-01
    while seconds < 10_413_792_000 {  // 2300-01-01
      let date = Date(timeIntervalSince1970: seconds + 3723.125)
      #expect(try RFC3339.parse(RFC3339.format(date)) == date)
      seconds += 86_400 * 7.5
    }
    var generator = SeededGenerator(seed: 0x726f_756e_6474_7269)
    for _ in 0..<10_000 {
      let date = Date(
        timeIntervalSince1970: Double.random(in: -62_135_596_800..<253_402_300_800, using: &generator))
      #expect(try RFC3339.parse(RFC3339.format(date)) == CivilTime(date).date)
    }
  }

  @Test(arguments: [
    ("2025-06-15", "'T'"), ("2025-06-15T15:06:40", "offset"), ("2025-02-29T00:00:00Z", "day 29 out of range"),
    ("1900-02-29T00:00:00Z", "day 29 out of range"), ("2024-13-01T00:00:00Z", "month 13"),
    ("2024-00-01T00:00:00Z", "month 0"), ("2024-04-31T00:00:00Z", "day 31"),
    ("2025-06-15T24:00:00Z", "hour 24"),
    ("2025-06-15T15:60:00Z", "minute 60"), ("2025-06-15T15:06:60Z", "second 60"),
    ("2025-06-15T15:06:40+2:00", "offset hours"), ("2025-06-15T15:06:40+24:00", "offset out of range"),
    ("2025-06-15T15:06:40Zjunk", "after the offset"), ("tomorrow", "year"), ("25-06-15T15:06:40Z", "year"),
    ("2025-06-15T15:06:40.Z", "digits after '.'"), ("", "year"), ("+2025-06-15T15:06:40Z", "year"),
  ])
  func parse_TextThatIsNotRFC3339_IsRejectedWithTheProblem(text: String, problem: String) {
    do {
      _ = try RFC3339.parse(text)
      Issue.record("\(text) was accepted")
    } catch {
      #expect(error.description.contains(problem), "\(error)")
      #expect(error.description.contains("\"\(text)\" is not an RFC 3339 time"))
    }
  }
}
