import Foundation
import TestSupport
import TrialControl
import TrialCore
import TrialCtl
import TrialTesting

/// The presenter's date code as it was with Foundation (ICU), kept as the reference the new
/// code is compared with: `DateFormatter` with a medium date and a short time in the reader's
/// zone and locale, and a Gregorian `Calendar` in that zone for calendar days.
struct FoundationDates {
  let formatter: DateFormatter
  let calendar: Calendar

  init(zone: TimeZone, locale: Locale) {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    calendar.locale = locale
    self.calendar = calendar
    let formatter = DateFormatter()
    formatter.locale = locale
    formatter.timeZone = zone
    formatter.dateStyle = .medium
    formatter.timeStyle = .short
    self.formatter = formatter
  }

  func date(_ date: Date) -> String {
    formatter.string(from: date)
  }

  /// `TrialPresenter.timeLeft(_:)` as it was, for an active or an expired trial.
  func timeLeft(_ trial: TrialObject, now: Date) -> String {
    switch trial.state {
    case .active:
      let remaining = trial.endsAt.timeIntervalSince(now)
      if remaining <= 0 { return "expiring now" }
      if calendar.isDate(trial.endsAt, inSameDayAs: now) { return "ends today" }
      let days = Days(timeInterval: remaining).userFacingAmount
      return days == 1 ? "1 day left" : "\(days) days left"
    default:
      let days =
        calendar.dateComponents(
          [.day], from: calendar.startOfDay(for: trial.endsAt), to: calendar.startOfDay(for: now)
        ).day ?? 0
      switch days {
      case ..<1: return "expired today"
      case 1: return "expired 1 day ago"
      default: return "expired \(days) days ago"
      }
    }
  }

  /// The byte count of `daemon-status` as it was.
  static func byteCount(_ bytes: Int) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f", value) + " " + units[unit]
  }
}

/// The zones of the comparisons: DST in both hemispheres, half-hour and 45-minute offsets and
/// changes, zones without DST.
enum ComparedZones {
  static let named = [
    "America/New_York", "Europe/Berlin", "Europe/London", "Australia/Sydney", "Australia/Lord_Howe",
    "Pacific/Chatham", "America/St_Johns", "Asia/Kolkata", "Asia/Kathmandu", "UTC",
  ]
  /// POSIX rules, which ICU could not read: compared with glibc.
  static let rules = [
    "CET-1CEST,M3.5.0,M10.5.0/3", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "NZST-12NZDT,M9.5.0,M4.1.0/3",
    "EST5EDT4,J60/2,J300/2", "AAA3BBB,100/1,250/-1", "<+0545>-5:45", "UTC0", secondsRule,
  ]
  /// An offset with seconds, which ICU's fixed zones do not keep: compared with glibc only.
  static let secondsRule = "XYZ-3:30:15"

  /// Seconds since 1970 of a UTC date.
  static func seconds(_ year: Int, _ month: Int = 1, _ day: Int = 1, _ hour: Int = 0) -> Int64 {
    CivilTime.daysSince1970(year: year, month: month, day: day) * 86_400 + Int64(hour) * 3600
  }

  /// Every half hour of 2025 to 2027, plus the far instants: 1970, 2037 to 2040, 2100.
  static let grid: [Int64] = {
    var instants = Array(stride(from: seconds(2025), to: seconds(2028), by: 1800))
    for year in [1970, 1971, 2037, 2038, 2039, 2040, 2100] {
      instants += stride(from: seconds(year), to: seconds(year + 1), by: 86_400 * 3 + 3600 * 5 + 60 * 17)
    }
    instants += [seconds(2038, 1, 19, 3) + 14 * 60 + 7, -1, 0, 59, 60]
    return instants
  }()
}

/// The civil time glibc gives instants in a zone: `date`, run with `TZ` (nil: unset) and
/// `TZDIR`, reads the instants from a file; its `localtime` is the reference for `TZ`.
enum GlibcReference {
  struct Local {
    /// Year, month, day, hour, minute.
    var fields: [Int]
    /// Seconds east of UTC.
    var offset: Int
  }

  static func localTimes(tz: String?, tzdir: String? = nil, _ instants: [Int64]) throws -> [Local] {
    let directory = try TemporaryDirectory("glibc-zone")
    let input = directory.appending("instants")
    try instants.map { "@\($0)\n" }.joined().write(toFile: input, atomically: true, encoding: .utf8)
    var adding: [String: String] = ["LC_ALL": "C"]
    if let tz { adding["TZ"] = tz }
    if let tzdir { adding["TZDIR"] = tzdir }
    let run = try ChildProcess.run(
      .path("/bin/date"), ["-f", input, "+%Y %m %d %H %M %::z"],
      environment: ChildProcess.environment(
        adding: adding, removing: tz == nil ? ["TZ", "TZDIR"] : ["TZDIR"]))
    guard run.status.code == 0 else { throw TestSupportError("date failed: \(run.errors)") }
    return run.output.split(separator: "\n").map { line in
      let words = line.split(separator: " ")
      let zone = words[5].dropFirst().split(separator: ":").map { Int($0)! }
      let offset = (zone[0] * 3600 + zone[1] * 60 + zone[2]) * (words[5].first == "-" ? -1 : 1)
      return Local(fields: words.prefix(5).map { Int($0)! }, offset: offset)
    }
  }
}
