import Foundation

/// RFC 3339 timestamps, as the wire carries them: written in UTC with millisecond precision
/// (`2025-03-01T12:00:00Z`, `2025-03-01T12:00:00.250Z`); read with any offset.
public enum RFC3339 {
  public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var input: String
    public var problem: String
    public var description: String {
      "\"\(input)\" is not an RFC 3339 time (like 2025-03-01T12:00:00Z): \(problem)"
    }
  }

  /// Formats in UTC; fractional seconds only when the time has a millisecond part.
  public static func format(_ date: Date) -> String {
    let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
    let (seconds, millis) = floorDivide(totalMillis, 1000)
    let (days, secondOfDay) = floorDivide(seconds, 86_400)
    let (year, month, day) = civil(fromDays: days)
    var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
    text += pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
    if millis != 0 { text += "." + pad(millis, 3) }
    return text + "Z"
  }

  public static func parse(_ text: String) throws(ParseError) -> Date {
    let bytes = Array(text.utf8)
    var index = 0
    func fail(_ problem: String) -> ParseError { ParseError(input: text, problem: problem) }
    func digits(_ count: Int, _ what: String) throws(ParseError) -> Int64 {
      guard bytes.count - index >= count else { throw fail("expected \(count) digits for the \(what)") }
      var value: Int64 = 0
      for _ in 0..<count {
        let byte = bytes[index]
        guard byte >= 0x30 && byte <= 0x39 else { throw fail("expected \(count) digits for the \(what)") }
        value = value * 10 + Int64(byte - 0x30)
        index += 1
      }
      return value
    }
    func expect(_ characters: String, _ what: String) throws(ParseError) {
      guard index < bytes.count, characters.utf8.contains(bytes[index]) else {
        throw fail("expected \(what)")
      }
      index += 1
    }
    let year = try digits(4, "year")
    try expect("-", "'-' after the year")
    let month = try digits(2, "month")
    try expect("-", "'-' after the month")
    let day = try digits(2, "day")
    try expect("Tt ", "'T' between the date and the time")
    let hour = try digits(2, "hour")
    try expect(":", "':' after the hour")
    let minute = try digits(2, "minute")
    try expect(":", "':' after the minute")
    let second = try digits(2, "second")
    var fraction = 0.0
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      var scale = 0.1
      let start = index
      while index < bytes.count, bytes[index] >= 0x30 && bytes[index] <= 0x39 {
        fraction += Double(bytes[index] - 0x30) * scale
        scale /= 10
        index += 1
      }
      guard index > start else { throw fail("expected digits after '.'") }
    }
    guard index < bytes.count else { throw fail("missing the time zone offset (Z or +hh:mm)") }
    var offset: Int64 = 0
    switch bytes[index] {
    case UInt8(ascii: "Z"), UInt8(ascii: "z"):
      index += 1
    case UInt8(ascii: "+"), UInt8(ascii: "-"):
      let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
      index += 1
      let offsetHours = try digits(2, "offset hours")
      try expect(":", "':' in the offset")
      let offsetMinutes = try digits(2, "offset minutes")
      guard offsetHours < 24, offsetMinutes < 60 else { throw fail("offset out of range") }
      offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
    default:
      throw fail("expected the time zone offset (Z or +hh:mm)")
    }
    guard index == bytes.count else { throw fail("unexpected text after the offset") }
    guard (1...12).contains(month) else { throw fail("month \(month) out of range") }
    guard (1...daysInMonth(year: year, month: month)).contains(day) else {
      throw fail("day \(day) out of range for the month")
    }
    guard hour < 24 else { throw fail("hour \(hour) out of range") }
    guard minute < 60 else { throw fail("minute \(minute) out of range") }
    guard second < 60 else { throw fail("second \(second) out of range") }
    let days = self.days(fromCivil: year, month, day)
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    return Date(timeIntervalSince1970: Double(seconds) + fraction)
  }

  private static func pad(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
  }

  private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
    let quotient = a >= 0 ? a / b : (a - b + 1) / b
    return (quotient, a - quotient * b)
  }

  private static func isLeap(_ year: Int64) -> Bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
  }

  private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
    switch month {
    case 2: isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date.
  private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }
}
