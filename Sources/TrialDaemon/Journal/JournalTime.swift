import FoundationEssentials
import TrialCore

/// The numeric fields of journal entries (`*_REALTIME_USEC`, `*_USEC`, `REMINDER_OFFSET_SEC`).
/// Dates and spans in messages are printed by `CivilTime`, `RFC3339` and `TimeSpan`. Pure
/// arithmetic on the values given: no clock is read (this runs once per fired event, so it
/// has to be cheap).
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
    var fraction = zeroPadded(rest, width: 3)
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return (millis < 0 && whole == 0 ? "-" : "") + "\(whole).\(fraction)"
  }
}
