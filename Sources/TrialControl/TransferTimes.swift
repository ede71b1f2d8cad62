import FoundationEssentials
import TrialCore

/// An RFC 3339 time in UTC with six fraction digits (`2025-03-01T12:00:00.250000Z`): a
/// transfer's times, exact to the microsecond. Any offset and fraction is read.
public struct PreciseTime: Codable, Hashable, Sendable, CustomStringConvertible {
  /// Rounded to the microsecond.
  public var date: Date

  public init(_ date: Date) {
    self.date = TransferTime.rounded(date)
  }

  public var description: String {
    let (seconds, micros) = Self.split(TransferTime.microseconds(date) + Self.referenceMicroseconds)
    var text = CivilTime(millisecondsSince1970: seconds * 1000).rfc3339
    text.removeLast()  // Z
    let fraction = String(micros)
    return text + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + "Z"
  }

  public init(parsing text: String) throws(WireProblem) {
    let characters = Array(text)
    var whole = characters
    var micros: Int64 = 0
    let digits = characters.dropFirst(20).prefix { $0.isASCII && $0.isNumber }
    if characters.count > 19, characters[19] == ".", !digits.isEmpty {
      var scaled = Array(digits.prefix(7)).map { Int64(String($0))! }
      while scaled.count < 7 { scaled.append(0) }
      micros = (scaled.prefix(6).reduce(0) { $0 * 10 + $1 }) + (scaled[6] >= 5 ? 1 : 0)
      whole = Array(characters[..<19]) + Array(characters[(20 + digits.count)...])
    }
    let seconds: Date
    do {
      seconds = try RFC3339.parse(String(whole))
    } catch {
      throw WireProblem(
        path: [], problem: error.description.replacing(String(whole), with: text))
    }
    let reference = Int64(seconds.timeIntervalSinceReferenceDate.rounded())
    date = TransferTime.date(microseconds: reference * 1_000_000 + micros)
    // The seventh digit, or a `Date`'s resolution (30 µs in 9999), may carry the last second of
    // 9999 into a year that cannot be written.
    guard TransferTime.microseconds(date) < Self.year10000 else {
      throw WireProblem(path: [], problem: "\"\(text)\" lies after the year 9999")
    }
  }

  /// 10000-01-01T00:00:00Z in microseconds since 2001-01-01T00:00:00Z.
  private static let year10000: Int64 = (253_402_300_800 - 978_307_200) * 1_000_000

  public init(from decoder: any Decoder) throws {
    self = try decoder.decodeText { try PreciseTime(parsing: $0) }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }

  /// 2001-01-01T00:00:00Z in microseconds since 1970.
  private static let referenceMicroseconds: Int64 = 978_307_200_000_000

  private static func split(_ micros: Int64) -> (seconds: Int64, micros: Int64) {
    let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
    return (seconds, micros - seconds * 1_000_000)
  }
}

/// A span in systemd's syntax exact to the microsecond (`1min 30s 250ms 7us`): a transfer's
/// latenesses and graces.
public struct PreciseSpan: Codable, Hashable, Sendable, CustomStringConvertible {
  /// Rounded to the microsecond.
  public var duration: Duration

  public init(_ duration: Duration) {
    self.duration = TransferTime.rounded(duration)
  }

  public var description: String { TimeSpan.format(duration, style: .precise) }

  public init(from decoder: any Decoder) throws {
    self.init(try decoder.decodeText { try TimeSpan.parse($0) })
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}
