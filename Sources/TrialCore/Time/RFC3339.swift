import FoundationEssentials

/// RFC 3339 timestamps, as the wire and the journal carry them: written in UTC to the
/// millisecond (`2025-03-01T12:00:00Z`, `2025-03-01T12:00:00.250Z`); read with any offset.
///
/// Both directions follow `CivilTime`'s rule: an instant is rounded once to the nearest
/// millisecond, half a millisecond up. A fraction finer than a millisecond is read the same
/// way, so `parse(format(parse(text)))` is `parse(text)`; a time that the offset or the rounding
/// carries outside the years 0000 to 9999 in UTC, which `format` cannot write, is refused.
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
    CivilTime(date).rfc3339
  }

  /// Reads `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)`. `T` and `Z` may be lower case, and a
  /// space may stand for `T`, as RFC 3339 allows.
  public static func parse(_ text: String) throws(ParseError) -> Date {
    var reader = Reader(text: text)
    let year = try reader.digits(4, "year")
    try reader.expect("-", "'-' after the year")
    let month = try reader.digits(2, "month")
    try reader.expect("-", "'-' after the month")
    let day = try reader.digits(2, "day")
    try reader.expect("Tt ", "'T' between the date and the time")
    let hour = try reader.digits(2, "hour")
    try reader.expect(":", "':' after the hour")
    let minute = try reader.digits(2, "minute")
    try reader.expect(":", "':' after the minute")
    let second = try reader.digits(2, "second")
    let millisecond = try reader.fraction()
    let offset = try reader.offset()
    guard reader.isAtEnd else { throw reader.fail("unexpected text after the offset") }
    guard (1...12).contains(month) else { throw reader.fail("month \(month) out of range") }
    guard (1...CivilTime.daysInMonth(month, of: year)).contains(day) else {
      throw reader.fail("day \(day) out of range for the month")
    }
    guard hour < 24 else { throw reader.fail("hour \(hour) out of range") }
    guard minute < 60 else { throw reader.fail("minute \(minute) out of range") }
    guard second < 60 else { throw reader.fail("second \(second) out of range") }
    // The rounded fraction may carry into the next second (`.9996` is 1000 ms).
    let local =
      CivilTime.daysSince1970(year: year, month: month, day: day) * CivilTime.millisecondsPerDay
      + Int64(hour * 3_600_000 + minute * 60_000 + second * 1000) + millisecond
    // The offset, or the rounding, may carry the instant out of the years RFC 3339 writes in
    // UTC (`9999-12-31T23:59:59.9996Z` is 10000-01-01): `format` could not write it back.
    guard writable.contains(local - offset) else {
      throw reader.fail("the time lies outside the years 0000 to 9999 in UTC")
    }
    return CivilTime.date(millisecondsSince1970: local - offset)
  }

  /// The instants RFC 3339 writes in UTC, in milliseconds since 1970: 0000-01-01T00:00:00Z to
  /// 9999-12-31T23:59:59.999Z.
  private static let writable: Range<Int64> = {
    let first = CivilTime.daysSince1970(year: 0, month: 1, day: 1)
    let end = CivilTime.daysSince1970(year: 10000, month: 1, day: 1)
    return first * CivilTime.millisecondsPerDay..<end * CivilTime.millisecondsPerDay
  }()

  /// Reads the text byte by byte; every error names the input.
  private struct Reader {
    let text: String
    let bytes: [UInt8]
    var index = 0

    init(text: String) {
      self.text = text
      bytes = Array(text.utf8)
    }

    var isAtEnd: Bool { index == bytes.count }

    func fail(_ problem: String) -> ParseError {
      ParseError(input: text, problem: problem)
    }

    private func isDigit(_ position: Int) -> Bool {
      position < bytes.count && bytes[position] >= UInt8(ascii: "0") && bytes[position] <= UInt8(ascii: "9")
    }

    mutating func digits(_ count: Int, _ what: String) throws(ParseError) -> Int {
      var value = 0
      for _ in 0..<count {
        guard isDigit(index) else { throw fail("expected \(count) digits for the \(what)") }
        value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
        index += 1
      }
      return value
    }

    mutating func expect(_ characters: String, _ what: String) throws(ParseError) {
      guard index < bytes.count, characters.utf8.contains(bytes[index]) else {
        throw fail("expected \(what)")
      }
      index += 1
    }

    /// The fraction of a second, if any, in milliseconds rounded to the nearest, half up:
    /// the fourth digit decides, as the digits after it cannot move the fraction across a
    /// half.
    mutating func fraction() throws(ParseError) -> Int64 {
      guard index < bytes.count, bytes[index] == UInt8(ascii: ".") else { return 0 }
      index += 1
      let start = index
      var milliseconds: Int64 = 0
      while isDigit(index) {
        let digit = Int64(bytes[index] - UInt8(ascii: "0"))
        switch index - start {
        case 0..<3: milliseconds = milliseconds * 10 + digit
        case 3 where digit >= 5: milliseconds += 1
        default: break
        }
        index += 1
      }
      guard index > start else { throw fail("expected digits after '.'") }
      for _ in min(index - start, 3)..<3 { milliseconds *= 10 }
      return milliseconds
    }

    /// The offset from UTC in milliseconds: 0 for `Z`.
    mutating func offset() throws(ParseError) -> Int64 {
      guard index < bytes.count else { throw fail("missing the time zone offset (Z or +hh:mm)") }
      switch bytes[index] {
      case UInt8(ascii: "Z"), UInt8(ascii: "z"):
        index += 1
        return 0
      case UInt8(ascii: "+"), UInt8(ascii: "-"):
        let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
        index += 1
        let hours = try digits(2, "offset hours")
        try expect(":", "':' in the offset")
        let minutes = try digits(2, "offset minutes")
        guard hours < 24, minutes < 60 else { throw fail("offset out of range") }
        return sign * Int64(hours * 3_600_000 + minutes * 60_000)
      default:
        throw fail("expected the time zone offset (Z or +hh:mm)")
      }
    }
  }
}
