import FoundationEssentials

/// An instant as proleptic Gregorian calendar fields in UTC, to the millisecond.
///
/// Every instant trialwatch prints goes through here, under one rounding rule: the instant is
/// rounded once to the nearest millisecond (half a millisecond rounds up, to the later
/// instant, as Foundation's `ISO8601DateFormatter` rounds), and every field, from the year
/// down to the millisecond, is derived from that count by floor division. A form without
/// milliseconds (`readable`) drops the millisecond field rather than rounding again, so it
/// always shows the same second as the RFC 3339 form of the same instant.
///
/// Pure arithmetic on the value given: no clock is read, and no calendar, time zone
/// database or formatter is involved. The calendar is proleptic: Gregorian rules apply
/// before 1582 too, as RFC 3339 and ISO 8601 require.
public struct CivilTime: Hashable, Sendable {
  /// The astronomical year: 0 is 1 BC, -1 is 2 BC.
  public var year: Int
  /// 1 to 12.
  public var month: Int
  /// 1 to the length of the month.
  public var day: Int
  /// 0 to 23.
  public var hour: Int
  /// 0 to 59.
  public var minute: Int
  /// 0 to 59 (leap seconds do not exist in this time scale, as in Unix time).
  public var second: Int
  /// 0 to 999.
  public var millisecond: Int

  /// The fields of `date`, rounded to the nearest millisecond.
  public init(_ date: Date) {
    self.init(millisecondsSince1970: Self.millisecondsSince1970(date))
  }

  /// The fields of the instant `milliseconds` after 1970-01-01T00:00:00Z (before it when
  /// negative).
  public init(millisecondsSince1970 milliseconds: Int64) {
    let (days, millisecondOfDay) = floorDivision(milliseconds, Self.millisecondsPerDay)
    let (secondOfDay, millisecond) = floorDivision(millisecondOfDay, 1000)
    self.millisecond = Int(millisecond)
    hour = Int(secondOfDay / 3600)
    minute = Int(secondOfDay / 60 % 60)
    second = Int(secondOfDay % 60)
    (year, month, day) = Self.date(daysSince1970: days)
  }

  /// The given fields, or nil when one is out of its range (a 30 February, hour 24).
  public init?(
    year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0, millisecond: Int = 0
  ) {
    guard (1...12).contains(month), (1...Self.daysInMonth(month, of: year)).contains(day),
      (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second),
      (0..<1000).contains(millisecond)
    else { return nil }
    self.year = year
    self.month = month
    self.day = day
    self.hour = hour
    self.minute = minute
    self.second = second
    self.millisecond = millisecond
  }

  /// Milliseconds since 1970-01-01T00:00:00Z; negative before it.
  public var millisecondsSince1970: Int64 {
    let days = Self.daysSince1970(year: year, month: month, day: day)
    let seconds = Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)
    return days * Self.millisecondsPerDay + seconds * 1000 + Int64(millisecond)
  }

  /// The instant, exact to the millisecond.
  public var date: Date {
    Self.date(millisecondsSince1970: millisecondsSince1970)
  }

  // MARK: The rounding rule

  /// `date` rounded to the nearest millisecond since 1970, half a millisecond up. Instants
  /// further than about 285 million years from 1970 are clamped to that distance.
  public static func millisecondsSince1970(_ date: Date) -> Int64 {
    let scaled = (date.timeIntervalSince1970 * 1000 + 0.5).rounded(.down)
    guard !scaled.isNaN else { return 0 }
    return Int64(min(max(scaled, -maximumMilliseconds), maximumMilliseconds))
  }

  /// The instant `milliseconds` after 1970-01-01T00:00:00Z. `millisecondsSince1970(_:)`
  /// gives the same count back.
  public static func date(millisecondsSince1970 milliseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(milliseconds) / 1000)
  }

  static let millisecondsPerDay: Int64 = 86_400_000
  /// 9×10¹⁸: inside `Int64`, and every field derived from it fits.
  private static let maximumMilliseconds = 9e18

  // MARK: Calendar arithmetic

  public static func isLeapYear(_ year: Int) -> Bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
  }

  /// The number of days of `month` (1 to 12) in `year`; 0 for a month out of range.
  public static func daysInMonth(_ month: Int, of year: Int) -> Int {
    switch month {
    case 2: isLeapYear(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    case 1, 3, 5, 7, 8, 10, 12: 31
    default: 0
    }
  }

  /// The number of days from 1970-01-01 to the given date; negative before it.
  ///
  /// Counted in 400-year eras (146,097 days each) of years that start on 1 March, so that
  /// the leap day ends a year: the day of the year then follows from the month by a linear
  /// formula.
  public static func daysSince1970(year: Int, month: Int, day: Int) -> Int64 {
    let marchYear = Int64(month <= 2 ? year - 1 : year)
    let (era, yearOfEra) = floorDivision(marchYear, 400)
    let monthFromMarch = Int64(month <= 2 ? month + 9 : month - 3)
    let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * daysPerEra + dayOfEra - daysFromEraStartTo1970
  }

  /// The date `days` after 1970-01-01: the inverse of `daysSince1970(year:month:day:)`.
  static func date(daysSince1970 days: Int64) -> (year: Int, month: Int, day: Int) {
    let (era, dayOfEra) = floorDivision(days + daysFromEraStartTo1970, daysPerEra)
    // The three corrections skip the leap days of the era so far: every 4th year, not every
    // 100th, but the 400th (which ends the era, so only its last day needs the correction).
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthFromMarch = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
    let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
    let year = era * 400 + yearOfEra + (month <= 2 ? 1 : 0)
    return (Int(year), Int(month), Int(day))
  }

  private static let daysPerEra: Int64 = 146_097
  /// From 0000-03-01, the start of an era, to 1970-01-01.
  private static let daysFromEraStartTo1970: Int64 = 719_468

  // MARK: Text

  /// `2026-11-27 14:00:00 UTC`: whole seconds, the millisecond field left out.
  public var readable: String { text(between: " ", milliseconds: false, after: " UTC") }

  /// RFC 3339 in UTC: `2026-11-27T14:00:00Z`, with the milliseconds when they are not zero
  /// (`2026-11-27T14:00:00.250Z`). Years outside 0000 to 9999, which RFC 3339 cannot write,
  /// get a sign or a fifth digit (`-0001`, `10000`), as ISO 8601's expanded years.
  public var rfc3339: String { text(between: "T", milliseconds: true, after: "Z") }

  /// The date, `between`, the time (with the milliseconds when asked for and not zero), `after`.
  private func text(between: Unicode.Scalar, milliseconds: Bool, after: StaticString) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(24)
    appendDate(to: &bytes)
    bytes.append(UInt8(ascii: between))
    appendTime(to: &bytes)
    if milliseconds, millisecond != 0 {
      bytes.append(UInt8(ascii: "."))
      appendDigits(millisecond, width: 3, to: &bytes)
    }
    after.withUTF8Buffer { bytes.append(contentsOf: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  private func appendDate(to bytes: inout [UInt8]) {
    if year < 0 { bytes.append(UInt8(ascii: "-")) }
    appendDigits(Int(year.magnitude), width: 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(month, width: 2, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(day, width: 2, to: &bytes)
  }

  private func appendTime(to bytes: inout [UInt8]) {
    appendDigits(hour, width: 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(minute, width: 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(second, width: 2, to: &bytes)
  }
}

/// The quotient rounded down and the remainder that goes with it (never negative for a
/// positive divisor).
func floorDivision(_ dividend: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
  let quotient = dividend / divisor
  let remainder = dividend % divisor
  return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
}

/// Appends the decimal digits of a non-negative `value`, zero-padded to `width`.
func appendDigits(_ value: Int, width: Int, to bytes: inout [UInt8]) {
  var count = 1
  var probe = value / 10
  while probe > 0 {
    count += 1
    probe /= 10
  }
  let total = max(width, count)
  let start = bytes.count
  bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: total))
  var rest = value
  var index = start + total - 1
  while rest > 0 {
    bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
    rest /= 10
    index -= 1
  }
}
