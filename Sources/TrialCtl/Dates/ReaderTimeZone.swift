import FoundationEssentials
import TrialCore

/// The reader's time zone, read from `TZ` as glibc's `tzset` reads it, and applied from the
/// system's time zone database: no ICU, no global state.
///
/// - `TZ` unset: the system's zone, `/etc/localtime`; UTC when it cannot be read.
/// - `TZ` empty, or `:` alone: UTC.
/// - `TZ=:Europe/Berlin` or `TZ=Europe/Berlin` (the colon is dropped): the zone file of that
///   name under `$TZDIR` (default `/usr/share/zoneinfo`), or at that path when it starts with
///   `/`; names such as `EST5EDT` and `UTC` are zone files too.
/// - Otherwise, a POSIX rule (`CET-1CEST,M3.5.0,M10.5.0/3`, see `PosixZoneRule`); a value
///   that is neither a zone file nor a rule (`Europe/Nowhere`, `FOO`) is UTC, as in glibc.
///   A rule with a daylight-saving name but no changes (`CET-1CEST`) changes when glibc makes
///   it change: at the transitions of the zone file `posixrules` (on Debian, New York's),
///   shifted as glibc shifts them, and after that file's last transition by that file's own
///   rule, its offsets included.
public struct ReaderTimeZone: Hashable, Sendable {
  enum Rules: Hashable, Sendable {
    case file(ZoneFile)
    case rule(PosixZoneRule)
  }

  /// What the zone was read from: `TZ`'s value, or `/etc/localtime`.
  public let name: String
  let rules: Rules

  /// The default zone directory of glibc.
  public static let zoneDirectory = "/usr/share/zoneinfo"
  /// The system's zone when `TZ` is unset.
  public static let systemZone = "/etc/localtime"

  public static let utc = ReaderTimeZone(name: "UTC", rules: .rule(.utc))

  init(name: String, rules: Rules) {
    self.name = name
    self.rules = rules
  }

  /// The zone `tz` (the value of `TZ`, nil when unset) names, zone files looked up under
  /// `zoneDirectory` (the value of `TZDIR`; unset or empty: `/usr/share/zoneinfo`).
  public init(tz: String?, zoneDirectory: String? = nil) {
    guard let tz else {
      self =
        Self.file(Self.systemZone, name: Self.systemZone)
        ?? ReaderTimeZone(name: Self.systemZone, rules: .rule(.utc))
      return
    }
    var text = tz[...]
    if text.first == ":" { text = text.dropFirst() }
    guard !text.isEmpty else {
      self.init(name: tz, rules: .rule(.utc))
      return
    }
    let directory = zoneDirectory.flatMap { $0.isEmpty ? nil : $0 } ?? Self.zoneDirectory
    let path = text.first == "/" ? String(text) : directory + "/" + text
    if let zone = Self.file(path, name: tz) {
      self = zone
      return
    }
    let rule = PosixZoneRule(text)
    self.init(name: tz, rules: .rule(rule))
    if rule.lacksChanges, let posixRules = Self.file(directory + "/posixrules", name: tz),
      case .file(var file) = posixRules.rules, file.types.count >= 2
    {
      // As glibc's __tzfile_default: each of the file's transitions to the rule's standard or
      // daylight-saving offset, moved by the rule's offset before it, less the file's last
      // standard offset for standard time (less nothing for daylight-saving time, as glibc
      // leaves that figure at 0); the file's own rule after them.
      let fileStandard =
        file.transitionTypes.last { !file.types[$0].isDaylight }.map { file.types[$0].offset } ?? 0
      var daylightBefore = false
      for index in file.transitions.indices {
        let shift = daylightBefore ? rule.daylight.offset : rule.standard.offset - fileStandard
        file.transitions[index] += Int64(shift)
        daylightBefore = file.types[file.transitionTypes[index]].isDaylight
      }
      file.transitionTypes = file.transitionTypes.map { file.types[$0].isDaylight ? 1 : 0 }
      file.types = [
        ZoneFile.LocalType(offset: rule.standard.offset, isDaylight: false),
        ZoneFile.LocalType(offset: rule.daylight.offset, isDaylight: true),
      ]
      self.init(name: tz, rules: .file(file))
    }
  }

  /// The zone of the system's database named `name` (`Europe/Berlin`); nil when it has none.
  public init?(named name: String) {
    guard let zone = Self.file(Self.zoneDirectory + "/" + name, name: name) else { return nil }
    self = zone
  }

  /// The reader's zone: from `TZ` and `TZDIR` among `variables`.
  public static func reader(_ variables: [String: String]) -> ReaderTimeZone {
    ReaderTimeZone(tz: variables["TZ"], zoneDirectory: variables["TZDIR"])
  }

  private static func file(_ path: String, name: String) -> ReaderTimeZone? {
    guard let data = FileManager.default.contents(atPath: path), let file = ZoneFile(Array(data)) else {
      return nil
    }
    return ReaderTimeZone(name: name, rules: .file(file))
  }

  /// The local time at `seconds` since 1970, in seconds since 1970 as if UTC were local.
  func localSeconds(at seconds: Int64) -> Int64 {
    switch rules {
    case .file(let file): file.localSeconds(at: seconds)
    case .rule(let rule): seconds + Int64(rule.offset(at: seconds))
    }
  }

  /// The civil time of `date` in this zone, to the minute. As Foundation's formatter did:
  /// the instant is rounded to the nearest millisecond (half a millisecond up), and the
  /// zone's offset is the one in effect at the second below that.
  func localTime(_ date: Date) -> LocalTime {
    let scaled = ((date.timeIntervalSinceReferenceDate + 978_307_200) * 1000 + 0.5).rounded(.down)
    let bound = Double(PosixZoneRule.limit) * 1000
    let milliseconds = scaled.isNaN ? 0 : Int64(min(max(scaled, -bound), bound))
    let seconds = Self.floorDivision(milliseconds, 1000)
    let civil = CivilTime(millisecondsSince1970: milliseconds + (localSeconds(at: seconds) - seconds) * 1000)
    return LocalTime(
      year: civil.year, month: civil.month, day: civil.day, hour: civil.hour, minute: civil.minute)
  }

  /// The number of the calendar day of `date` in this zone, counted from 1970-01-01, as
  /// Foundation's Gregorian calendar counted it: from the local time in whole seconds below
  /// (not rounded to the millisecond, as the formatter did).
  func dayNumber(_ date: Date) -> Int64 {
    let bound = Double(PosixZoneRule.limit)
    let reference = date.timeIntervalSinceReferenceDate
    let bounded = reference.isNaN ? 0 : min(max(reference, -bound), bound)
    let seconds = Int64(bounded.rounded(.down)) + 978_307_200
    let offset = localSeconds(at: seconds) - seconds
    let local = Int64((bounded + Double(offset)).rounded(.down)) + 978_307_200
    return Self.floorDivision(local, 86_400)
  }

  private static func floorDivision(_ dividend: Int64, _ divisor: Int64) -> Int64 {
    let quotient = dividend / divisor
    return dividend % divisor < 0 ? quotient - 1 : quotient
  }
}
