import FoundationEssentials
import TrialCore

/// A `Retry-After` header read into a wait (RFC 9110, 10.2.3): a number of seconds, or an
/// HTTP-date counted from `now`. The date, in the three forms a recipient must read (RFC 9110,
/// 5.6.7), is read by libcurl's `curl_getdate` (`HTTPClient.date`).
public enum RetryAfter {
  /// The wait the header asks for; a date in the past is no wait; nil when the value is neither
  /// form (or libcurl cannot be opened, which the request that brought the header used).
  public static func wait(_ header: String, now: Date) -> Duration? {
    let value = header.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
    let text = String(value)
    guard !text.isEmpty else { return nil }
    if text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
      // A number too large for 64 bits is a wait longer than anyone means: the longest there is.
      return .seconds(Int64(text) ?? Int64.max)
    }
    guard let seconds = (try? HTTPClient.date(text)) ?? nil else { return nil }
    return max(.zero, Date(timeIntervalSince1970: Double(seconds)).duration(since: now))
  }
}
