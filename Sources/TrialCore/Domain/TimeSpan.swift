import Foundation

/// systemd's time-span syntax (`5d`, `36h`, `90s`, `1d 12h`, `1h30min`), as in systemd.time(7).
public enum TimeSpan {
  public struct ParseError: Error, Equatable, CustomStringConvertible {
    public var input: String
    public var problem: String
    public var description: String { "invalid time span \"\(input)\": \(problem)" }
  }

  private static let units: [(names: [String], seconds: Double)] = [
    (["usec", "us", "µs"], 1e-6),
    (["msec", "ms"], 1e-3),
    (["seconds", "second", "sec", "s"], 1),
    (["minutes", "minute", "min", "m"], 60),
    (["hours", "hour", "hr", "h"], 3_600),
    (["days", "day", "d"], 86_400),
    (["weeks", "week", "w"], 604_800),
    (["months", "month", "M"], 2_629_800),
    (["years", "year", "y"], 31_557_600),
  ]

  private static let unitTable: [String: Double] = {
    var table: [String: Double] = [:]
    for unit in units {
      for name in unit.names { table[name] = unit.seconds }
    }
    return table
  }()

  /// Parses a time span. A bare number is seconds, as in systemd.
  public static func parse(_ text: String) throws(ParseError) -> Days {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { throw ParseError(input: text, problem: "empty") }
    var total = 0.0
    var index = trimmed.startIndex
    var sawComponent = false
    while index < trimmed.endIndex {
      while index < trimmed.endIndex, trimmed[index] == " " || trimmed[index] == "\t" {
        index = trimmed.index(after: index)
      }
      guard index < trimmed.endIndex else { break }
      let numberStart = index
      while index < trimmed.endIndex, trimmed[index].isASCII,
        trimmed[index].isNumber || trimmed[index] == "."
      {
        index = trimmed.index(after: index)
      }
      let numberText = trimmed[numberStart..<index]
      guard !numberText.isEmpty, let value = Double(numberText) else {
        let found = trimmed[numberStart...].prefix(while: { $0 != " " })
        throw ParseError(input: text, problem: "expected a number at \"\(found)\"")
      }
      guard value.isFinite else {
        throw ParseError(input: text, problem: "number too large at \"\(numberText)\"")
      }
      while index < trimmed.endIndex, trimmed[index] == " " {
        index = trimmed.index(after: index)
      }
      let unitStart = index
      while index < trimmed.endIndex, trimmed[index].isLetter || trimmed[index] == "µ" {
        index = trimmed.index(after: index)
      }
      let unit = String(trimmed[unitStart..<index])
      let factor: Double
      if unit.isEmpty {
        factor = 1
      } else if let known = unitTable[unit] {
        factor = known
      } else {
        throw ParseError(input: text, problem: "unknown unit \"\(unit)\"")
      }
      total += value * factor
      sawComponent = true
    }
    guard sawComponent else { throw ParseError(input: text, problem: "empty") }
    guard total.isFinite else { throw ParseError(input: text, problem: "too large") }
    return Days(timeInterval: total)
  }

  /// Formats a span the way systemd prints one: `1d 12h`, `90s` as `1min 30s`, `500ms`.
  public static func format(_ span: Days) -> String {
    var seconds = span.timeInterval
    if seconds == 0 { return "0" }
    if seconds.isNaN { return "nan" }
    if seconds.isInfinite { return seconds < 0 ? "-infinity" : "infinity" }
    var parts: [String] = []
    if seconds < 0 {
      parts.append("-")
      seconds = -seconds
    }
    let steps: [(String, Double)] = [
      ("y", 31_557_600), ("month", 2_629_800), ("w", 604_800), ("d", 86_400), ("h", 3_600),
      ("min", 60), ("s", 1),
    ]
    var body: [String] = []
    for (name, size) in steps where seconds >= size {
      let count = (seconds / size).rounded(.down)
      seconds -= count * size
      body.append("\(wholeNumber(count))\(name)")
    }
    let millis = (seconds * 1000).rounded()
    if millis >= 1 {
      body.append("\(Int(millis))ms")
    } else if body.isEmpty {
      body.append("\(Int((seconds * 1e6).rounded()))us")
    }
    return parts.joined() + body.joined(separator: " ")
  }
}

/// A whole, non-negative number too large for `Int` is still printed, digit by digit.
private func wholeNumber(_ value: Double) -> String {
  value < 9e18 ? String(Int(value)) : String(format: "%.0f", value)
}

extension String {
  func trimmingWhitespace() -> Substring {
    var slice = Substring(self)
    while let first = slice.first, first.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.isWhitespace { slice.removeLast() }
    return slice
  }
}
