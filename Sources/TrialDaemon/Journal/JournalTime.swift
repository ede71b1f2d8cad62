import Foundation
import TrialCore

/// Numbers and spans as journal entries print them; instants are printed by `CivilTime`.
/// Pure arithmetic on the values given: no clock is read, no formatter is touched (this runs
/// once per fired event, so it has to be cheap).
enum JournalTime {
  /// Microseconds since the Unix epoch, as journald's `*_REALTIME_USEC` fields.
  static func realtimeMicroseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
  }

  /// Whole microseconds of a span, as journald's `*_USEC` fields; 0 for a negative span.
  static func microseconds(_ span: Duration) -> Int64 {
    max(0, span.roundedMicroseconds)
  }

  /// Seconds with up to millisecond precision and no trailing zeros: `259200`, `0.5`.
  static func seconds(_ span: Duration) -> String {
    let millis = span.roundedMilliseconds
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

  private static func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
}
