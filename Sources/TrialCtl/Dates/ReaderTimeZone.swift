import FoundationEssentials
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The reader's time zone: the values of `TZ` and `TZDIR`, applied by glibc's own `tzset` and
/// `localtime_r`, which read the system's zone files and POSIX rules as for any program
/// (docs/trialwatchctl.md, "Dates").
///
/// glibc takes the zone from the process's environment only, and keeps what it read; the zone it
/// read last is kept here, and `tzset` called once for each zone. What glibc makes of a rule
/// without changes (`CET-1CEST`, moved onto the changes of `posixrules`) depends on what it read
/// before, at a second `tzset` too: read first, or after UTC's zone file, it is what `date` shows.
/// trialwatchctl's zone comes from its own environment and is read as it stands. For another zone
/// (the tests use many), glibc reads UTC's zone file, then the zone, `TZ` and `TZDIR` set to its
/// values, where they stay (unset `TZ` written `/etc/localtime`, which glibc reads alike).
public struct ReaderTimeZone: Hashable, Sendable {
  /// What the zone was read from: `TZ`'s value, or `/etc/localtime`.
  public let name: String
  /// The value of `TZ`, nil when unset.
  let tz: String?
  /// The value of `TZDIR`; nil or empty: `/usr/share/zoneinfo`.
  let directory: String?

  /// The default zone directory of glibc.
  public static let zoneDirectory = "/usr/share/zoneinfo"
  /// The system's zone when `TZ` is unset.
  public static let systemZone = "/etc/localtime"

  public static let utc = ReaderTimeZone(name: "UTC", tz: "UTC0", directory: nil)

  /// A bound on the seconds since 1970 that are converted: over 3 million years.
  static let limit: Int64 = 100_000_000_000_000

  /// The zone glibc read last, under `lock`: glibc's default mutex, with which a thread goes on
  /// in its zone rather than handing over to a thread of another zone at each conversion.
  nonisolated(unsafe) private static var current: ReaderTimeZone?
  nonisolated(unsafe) private static let lock = {
    let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(lock, nil)
    return lock
  }()

  private init(name: String, tz: String?, directory: String?) {
    self.name = name
    self.tz = tz
    self.directory = directory.flatMap { $0.isEmpty ? nil : $0 }
  }

  /// The zone `tz` (the value of `TZ`, nil when unset) names, zone files looked up under
  /// `zoneDirectory` (the value of `TZDIR`; unset or empty: `/usr/share/zoneinfo`).
  public init(tz: String?, zoneDirectory: String? = nil) {
    self.init(name: tz ?? Self.systemZone, tz: tz, directory: zoneDirectory)
  }

  /// The zone of the system's database named `name` (`Europe/Berlin`); nil when it has none.
  public init?(named name: String) {
    let path = Self.zoneDirectory + "/" + name
    guard FileManager.default.contents(atPath: path)?.starts(with: Array("TZif".utf8)) == true else {
      return nil
    }
    self.init(name: name, tz: name, directory: nil)
  }

  /// The reader's zone: from `TZ` and `TZDIR` among `variables`.
  public static func reader(_ variables: [String: String]) -> ReaderTimeZone {
    ReaderTimeZone(tz: variables["TZ"], zoneDirectory: variables["TZDIR"])
  }

  /// The local time at `seconds` since 1970, in seconds since 1970 as if UTC were local.
  func localSeconds(at seconds: Int64) -> Int64 {
    pthread_mutex_lock(Self.lock)
    defer { pthread_mutex_unlock(Self.lock) }
    if Self.current != self {
      let tz = self.tz ?? Self.systemZone
      let directory = self.directory ?? Self.zoneDirectory
      let tzdir = getenv("TZDIR").map { String(cString: $0) } ?? ""
      if getenv("TZ").map({ String(cString: $0) }) ?? Self.systemZone != tz
        || (tzdir.isEmpty ? Self.zoneDirectory : tzdir) != directory
      {
        setenv("TZ", Self.zoneDirectory + "/UTC", 1)
        tzset()
        setenv("TZDIR", directory, 1)
        setenv("TZ", tz, 1)
      }
      tzset()
      Self.current = self
    }
    var time = time_t(seconds)
    var fields = tm()
    guard localtime_r(&time, &fields) != nil else { return seconds }
    return CivilTime.daysSince1970(
      year: Int(fields.tm_year) + 1900, month: Int(fields.tm_mon) + 1, day: Int(fields.tm_mday)) * 86_400
      + Int64(fields.tm_hour * 3600 + fields.tm_min * 60 + fields.tm_sec)
  }

  /// The civil time of `date` in this zone, to the millisecond. As Foundation's formatter did:
  /// the instant is rounded to the nearest millisecond (half a millisecond up), and the
  /// zone's offset is the one in effect at the second below that.
  func localTime(_ date: Date) -> CivilTime {
    let scaled = ((date.timeIntervalSinceReferenceDate + 978_307_200) * 1000 + 0.5).rounded(.down)
    let bound = Double(Self.limit) * 1000
    let milliseconds = scaled.isNaN ? 0 : Int64(min(max(scaled, -bound), bound))
    let seconds = (milliseconds >= 0 ? milliseconds : milliseconds - 999) / 1000
    return CivilTime(millisecondsSince1970: milliseconds + (localSeconds(at: seconds) - seconds) * 1000)
  }

  /// The number of the calendar day of `date` in this zone, counted from 1970-01-01, as
  /// Foundation's Gregorian calendar counted it: from the local time in whole seconds below
  /// (not rounded to the millisecond, as the formatter did).
  func dayNumber(_ date: Date) -> Int64 {
    let reference = date.timeIntervalSinceReferenceDate
    let bounded = reference.isNaN ? 0 : min(max(reference, -Double(Self.limit)), Double(Self.limit))
    let local = localSeconds(at: Int64(bounded.rounded(.down)) + 978_307_200)
    return (local >= 0 ? local : local - 86_399) / 86_400
  }
}
