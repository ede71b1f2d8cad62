import FoundationEssentials

/// Time spans as text: systemd's syntax (`5d`, `36h`, `90s`, `1d 12h`, `1h30min`, as in
/// systemd.time(7)) read into a `Duration` and written back, and the short forms people read
/// in the status line, the journal and trialwatchctl. Every span printed anywhere is printed
/// here, in one of the `Style`s.
public enum TimeSpan {
  /// How `format(_:style:)` writes a span.
  public enum Style: Hashable, Sendable, CaseIterable {
    /// systemd's form, exact to the millisecond: `1d 12h`, `1min 30s`, `500ms`. How the
    /// configuration's spans are shown; see `format(_:)`.
    case exact
    /// systemd's form exact to the microsecond, the resolution `parse` reads: `exact`, then
    /// the microseconds left, if any (`1min 30s 250ms 7us`). What the wire and an export
    /// carry, so that a span written and read again is the same span.
    case precise
    /// The largest unit that is not zero, and the next smaller one unless it is zero:
    /// `2h 13min`, `3d 4h`, `1h`, `45s`; below a second, milliseconds (`250ms`). The units
    /// are days, hours, minutes and seconds. The span is rounded to the nearest millisecond,
    /// then cut down to the smaller unit shown, so it never claims more than there is:
    /// `2h 13min` stands for anything from 2h 13min to just under 2h 14min, as in the
    /// status line's `expires in 2h 13min`, a journal entry's `fired 2h 13min late`, and
    /// trialwatchctl's `late by 2h 13min` and `up 1d 1h`. Zero and negative spans are `0s`.
    case brief
    /// Time left as a reader counts it, rounded up as days left are
    /// (`userFacingAmount` of the days left), so the reader is never told less time than there is:
    /// whole days from a day on (`3 days`, `1 day`); below a day, the `brief` form with
    /// the smaller unit rounded up (`11h 59min`, `30s`); below a second, milliseconds. The
    /// span is first rounded to the nearest millisecond, so a one-day reminder taken a few
    /// milliseconds late still reads `1 day`. Zero and negative spans are `0s`.
    case timeLeft
  }

  public struct ParseError: Error, Equatable, CustomStringConvertible {
    public var input: String
    public var problem: String
    public var description: String { "invalid time span \"\(input)\": \(problem)" }
  }

  /// Every unit name systemd knows, in nanoseconds.
  private static let units: [String: Int128] = {
    let groups: [(names: [String], nanoseconds: Int128)] = [
      (["usec", "us", "µs"], 1_000),
      (["msec", "ms"], 1_000_000),
      (["seconds", "second", "sec", "s"], 1_000_000_000),
      (["minutes", "minute", "min", "m"], 60_000_000_000),
      (["hours", "hour", "hr", "h"], 3_600_000_000_000),
      (["days", "day", "d"], 86_400_000_000_000),
      (["weeks", "week", "w"], 604_800_000_000_000),
      (["months", "month", "M"], 2_629_800_000_000_000),
      (["years", "year", "y"], 31_557_600_000_000_000),
    ]
    var table: [String: Int128] = [:]
    for group in groups {
      for name in group.names { table[name] = group.nanoseconds }
    }
    return table
  }()

  /// The longest span a `Duration` made here may be: `Int64.max` seconds, in nanoseconds.
  private static let maximumNanoseconds = Int128(Int64.max) * 1_000_000_000

  /// Parses a time span: numbers (with an optional fraction) each followed by a unit, added
  /// up. A bare number is seconds, as in systemd. The result is exact to the microsecond,
  /// systemd's resolution: a finer remainder is rounded to the nearest microsecond.
  public static func parse(_ text: String) throws(ParseError) -> Duration {
    // Read scalar by scalar: the text is ASCII but for a `µs` unit, and Characters would cost
    // a grapheme break and a Unicode property lookup each on the path of every StartTrial.
    let scalars = text.unicodeScalars
    var index = scalars.startIndex
    var end = scalars.endIndex
    while index < end, isWhitespace(scalars[index]) { scalars.formIndex(after: &index) }
    while end > index, isWhitespace(scalars[scalars.index(before: end)]) { scalars.formIndex(before: &end) }
    guard index < end else { throw ParseError(input: text, problem: "empty") }
    var total: Int128 = 0
    var sawComponent = false
    while index < end {
      while index < end, scalars[index] == " " || scalars[index] == "\t" { scalars.formIndex(after: &index) }
      guard index < end else { break }
      let numberStart = index
      while index < end, isDigit(scalars[index]) || scalars[index] == "." { scalars.formIndex(after: &index) }
      let numberText = scalars[numberStart..<index]
      guard let number = Number(numberText) else {
        let found = scalars[numberStart..<end].prefix(while: { $0 != " " })
        throw ParseError(input: text, problem: "expected a number at \"\(Substring(found))\"")
      }
      while index < end, scalars[index] == " " { scalars.formIndex(after: &index) }
      let unitStart = index
      while index < end, isLetter(scalars[index]) { scalars.formIndex(after: &index) }
      let unit = String(Substring(scalars[unitStart..<index]))
      let factor: Int128
      if unit.isEmpty {
        factor = 1_000_000_000
      } else if let known = units[unit] {
        factor = known
      } else {
        throw ParseError(input: text, problem: "unknown unit \"\(unit)\"")
      }
      guard let nanoseconds = number.nanoseconds(unit: factor) else {
        throw ParseError(input: text, problem: "number too large at \"\(Substring(numberText))\"")
      }
      total += nanoseconds
      guard total <= maximumNanoseconds else { throw ParseError(input: text, problem: "too large") }
      sawComponent = true
    }
    guard sawComponent else { throw ParseError(input: text, problem: "empty") }
    let microseconds = (total + 500) / 1_000
    return Duration(attosecondCount: microseconds * Duration.attosecondsPerMicrosecond)
  }

  private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

  /// A letter of a unit's name; `µs` is the one name that is not ASCII.
  private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII
      ? ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) : scalar.properties.isAlphabetic
  }

  private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII ? scalar == " " || ("\t"..."\r").contains(scalar) : scalar.properties.isWhitespace
  }

  /// A decimal number as written: digits, and at most one point with digits on one side.
  private struct Number {
    var whole: Int128
    /// The digits after the point, at most 20 of them (enough for a nanosecond of a year);
    /// any further ones are dropped.
    var fraction: Int128
    var fractionScale: Int128

    /// Reads ASCII digits and points, as `parse` collects them.
    init?(_ text: Substring.UnicodeScalarView) {
      var whole: Int128 = 0
      var fraction: Int128 = 0
      var fractionScale: Int128 = 1
      var digits = 0
      var afterPoint = false
      for scalar in text {
        if scalar == "." {
          guard !afterPoint else { return nil }
          afterPoint = true
          continue
        }
        guard TimeSpan.isDigit(scalar) else { return nil }
        let digit = Int128(scalar.value - 0x30)
        digits += 1
        if afterPoint {
          guard fractionScale < 100_000_000_000_000_000_000 else { continue }
          fraction = fraction * 10 + digit
          fractionScale *= 10
        } else {
          // Saturates: a number this long is too large for any unit.
          whole = whole > Int128(Int64.max) ? whole : whole * 10 + digit
        }
      }
      guard digits > 0 else { return nil }
      self.whole = whole
      self.fraction = fraction
      self.fractionScale = fractionScale
    }

    /// The number of `unit`s in nanoseconds, a fraction of a nanosecond dropped (so that
    /// rounding the total to microseconds rounds the exact value: half a microsecond is a
    /// whole number of nanoseconds); nil when more than a `Duration` holds.
    func nanoseconds(unit: Int128) -> Int128? {
      guard whole <= TimeSpan.maximumNanoseconds / unit else { return nil }
      return whole * unit + fraction * unit / fractionScale
    }
  }

  /// Formats `span` in `style`.
  public static func format(_ span: Duration, style: Style) -> String {
    switch style {
    case .exact: format(span)
    case .precise: precise(span)
    case .brief: brief(milliseconds: span.roundedMilliseconds)
    case .timeLeft: timeLeft(milliseconds: span.roundedMilliseconds)
    }
  }

  /// Formats a span the way systemd prints one (`Style.exact`): `1d 12h`, `90s` as
  /// `1min 30s`, `500ms`.
  ///
  /// The span is rounded to the nearest millisecond (below one millisecond, to the nearest
  /// microsecond: `250us`), then written in every unit from years down to milliseconds that
  /// is not zero, largest first. Zero is `0`; a negative span starts with `-`. The text of
  /// a positive span parses back to the span, to the millisecond.
  public static func format(_ span: Duration) -> String {
    let attoseconds = span.attosecondCount
    if attoseconds == 0 { return "0" }
    let sign = attoseconds < 0 ? "-" : ""
    let magnitude = attoseconds.magnitude
    var milliseconds =
      (magnitude + UInt128(Duration.attosecondsPerMillisecond / 2))
      / UInt128(Duration.attosecondsPerMillisecond)
    if milliseconds == 0 {
      let microseconds =
        (magnitude + UInt128(Duration.attosecondsPerMicrosecond / 2))
        / UInt128(Duration.attosecondsPerMicrosecond)
      return sign + "\(microseconds)us"
    }
    var parts: [String] = []
    for (name, size) in exactUnits where milliseconds >= size {
      parts.append("\(milliseconds / size)\(name)")
      milliseconds %= size
    }
    return sign + parts.joined(separator: " ")
  }

  private static func precise(_ span: Duration) -> String {
    let unit = Duration.attosecondsPerMicrosecond
    let attoseconds = span.attosecondCount
    let microseconds = (attoseconds + (attoseconds < 0 ? -unit / 2 : unit / 2)) / unit
    let rest = microseconds % 1000
    let whole = format(Duration(attosecondCount: (microseconds - rest) * unit))
    guard rest != 0 else { return whole }
    return whole == "0" ? "\(rest)us" : "\(whole) \(rest.magnitude)us"
  }

  private static func brief(milliseconds: Int64) -> String {
    guard milliseconds > 0 else { return "0s" }
    guard milliseconds >= 1000 else { return "\(milliseconds)ms" }
    let seconds = milliseconds / 1000
    let largest = briefUnits.firstIndex { seconds >= $0.seconds }!
    let (name, size) = briefUnits[largest]
    var text = "\(seconds / size)\(name)"
    if largest + 1 < briefUnits.count {
      let (smallerName, smallerSize) = briefUnits[largest + 1]
      let smaller = seconds % size / smallerSize
      if smaller > 0 { text += " \(smaller)\(smallerName)" }
    }
    return text
  }

  private static func timeLeft(milliseconds: Int64) -> String {
    guard milliseconds > 0 else { return "0s" }
    guard milliseconds >= 1000 else { return "\(milliseconds)ms" }
    let seconds = (milliseconds - 1) / 1000 + 1
    // The smaller of the two units shown: minutes from an hour on, seconds below.
    let step: Int64 = seconds >= 3_600 ? 60 : 1
    let shown = (seconds - 1) / step * step + step
    guard shown >= 86_400 else { return brief(milliseconds: shown * 1000) }
    let days = (shown - 1) / 86_400 + 1
    return days == 1 ? "1 day" : "\(days) days"
  }

  /// The units of the `brief` style, in seconds.
  private static let briefUnits: [(name: String, seconds: Int64)] = [
    ("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1),
  ]

  /// The units of `format(_:)`, in milliseconds.
  private static let exactUnits: [(String, UInt128)] = [
    ("y", 31_557_600_000), ("month", 2_629_800_000), ("w", 604_800_000), ("d", 86_400_000),
    ("h", 3_600_000), ("min", 60_000), ("s", 1_000), ("ms", 1),
  ]
}
