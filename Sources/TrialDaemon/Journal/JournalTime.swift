import Foundation
import TrialCore

/// Dates and spans as journal entries print them. Pure arithmetic on the values given: no
/// clock is read, no time zone database or formatter is touched (this runs once per fired
/// event, so it has to be cheap).
enum JournalTime {
  /// `2026-11-27 14:00:00 UTC` (whole seconds, rounded down).
  static func readable(_ date: Date) -> String {
    let parts = CivilTime(date)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(24)
    parts.appendDate(to: &bytes)
    bytes.append(UInt8(ascii: " "))
    parts.appendTime(to: &bytes)
    bytes.append(contentsOf: " UTC".utf8)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// RFC 3339 in UTC: `2026-11-27T14:00:00Z`, with milliseconds when there are any
  /// (`2026-11-27T14:00:00.250Z`).
  static func rfc3339(_ date: Date) -> String {
    let parts = CivilTime(date)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(25)
    parts.appendDate(to: &bytes)
    bytes.append(UInt8(ascii: "T"))
    parts.appendTime(to: &bytes)
    if parts.milliseconds != 0 {
      bytes.append(UInt8(ascii: "."))
      appendDigits(Int64(parts.milliseconds), width: 3, to: &bytes)
    }
    bytes.append(UInt8(ascii: "Z"))
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Microseconds since the Unix epoch, as journald's `*_REALTIME_USEC` fields.
  static func realtimeMicroseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
  }

  /// Whole microseconds of a non-negative span.
  static func microseconds(_ interval: TimeInterval) -> Int64 {
    Int64((max(0, interval) * 1_000_000).rounded())
  }

  /// Seconds with up to millisecond precision and no trailing zeros: `259200`, `0.5`.
  static func seconds(_ interval: TimeInterval) -> String {
    let millis = Int64((interval * 1000).rounded())
    let whole = millis / 1000
    let rest = abs(millis % 1000)
    guard rest != 0 else { return String(whole) }
    var fraction = pad(Int(rest), 3)
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return (millis < 0 && whole == 0 ? "-" : "") + "\(whole).\(fraction)"
  }

  /// A span in its two largest units, the way a person says it: `2h 13min`, `3d 4h`,
  /// `45min 10s`, `12s`, `250ms`.
  static func approximate(_ interval: TimeInterval) -> String {
    let seconds = max(0, interval)
    let millis = Int64((seconds * 1000).rounded())
    if millis < 1000 { return "\(millis)ms" }
    let units: [(String, Int64)] = [("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)]
    var remaining = max(1, Int64(seconds.rounded(.down)))
    var parts: [String] = []
    for (name, size) in units {
      if parts.count == 2 { break }
      let count = remaining / size
      remaining -= count * size
      if count > 0 {
        parts.append("\(count)\(name)")
      } else if !parts.isEmpty {
        break
      }
    }
    return parts.joined(separator: " ")
  }

  /// Time left as a reader counts it, always rounded up (as days left are): whole days from
  /// one day on (`3 days`, `1 day`), the two largest units below a day, the smaller one rounded
  /// up (`11h 59min`; a one-day reminder taken 5 ms late still reads `1 day`), milliseconds
  /// below a second.
  static func left(_ interval: TimeInterval) -> String {
    func days(_ seconds: TimeInterval) -> String {
      let days = Days(timeInterval: seconds).userFacingAmount
      return days == 1 ? "1 day" : "\(days) days"
    }
    if interval >= Days.secondsPerDay { return days(interval) }
    guard interval >= 1 else { return approximate((interval * 1000).rounded(.up) / 1000) }
    let seconds = Int64(interval.rounded(.up))
    // The smaller of the two units shown: minutes from an hour on, seconds below.
    let step: Int64 = seconds >= 3_600 ? 60 : 1
    let shown = (seconds + step - 1) / step * step
    if Double(shown) >= Days.secondsPerDay { return days(Double(shown)) }
    return approximate(Double(shown))
  }

  /// Appends the decimal digits of a non-negative `value`, zero-padded to `width`.
  static func appendDigits(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
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

  private static func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }

  /// A date split into proleptic Gregorian calendar fields in UTC.
  private struct CivilTime {
    var year: Int64
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int
    var milliseconds: Int

    init(_ date: Date) {
      let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
      let millisPerDay: Int64 = 86_400_000
      var days = totalMillis / millisPerDay
      var millisOfDay = totalMillis % millisPerDay
      if millisOfDay < 0 {
        millisOfDay += millisPerDay
        days -= 1
      }
      milliseconds = Int(millisOfDay % 1000)
      let secondsOfDay = Int(millisOfDay / 1000)
      hour = secondsOfDay / 3600
      minute = secondsOfDay / 60 % 60
      second = secondsOfDay % 60
      // Days since 1970-01-01 to year, month, day (eras of 400 years, March-based years).
      let shifted = days + 719_468
      let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
      let dayOfEra = shifted - era * 146_097
      let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
      let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
      let monthIndex = (5 * dayOfYear + 2) / 153
      day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
      month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
      year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    func appendDate(to bytes: inout [UInt8]) {
      if year < 0 { bytes.append(UInt8(ascii: "-")) }
      JournalTime.appendDigits(abs(year), width: 4, to: &bytes)
      bytes.append(UInt8(ascii: "-"))
      JournalTime.appendDigits(Int64(month), width: 2, to: &bytes)
      bytes.append(UInt8(ascii: "-"))
      JournalTime.appendDigits(Int64(day), width: 2, to: &bytes)
    }

    func appendTime(to bytes: inout [UInt8]) {
      JournalTime.appendDigits(Int64(hour), width: 2, to: &bytes)
      bytes.append(UInt8(ascii: ":"))
      JournalTime.appendDigits(Int64(minute), width: 2, to: &bytes)
      bytes.append(UInt8(ascii: ":"))
      JournalTime.appendDigits(Int64(second), width: 2, to: &bytes)
    }
  }
}
