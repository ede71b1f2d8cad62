import TrialCore

/// A time zone written as a POSIX `TZ` rule (`CET-1CEST,M3.5.0,M10.5.0/3`, `<+0545>-5:45`,
/// `EST5EDT`), read and applied as glibc reads and applies it (`tzset`, `localtime`): for a
/// `TZ` that names no zone file, and for the rule a zone file states for the years after its
/// last transition.
///
/// What glibc does, kept here: a rule it cannot read leaves UTC (`FOO`, `Europe/Nowhere`); a
/// daylight-saving time without an offset is an hour ahead of standard time; the year whose
/// changes decide an instant is that instant's year in UTC; a daylight-saving name without
/// changes (`CET-1CEST`) follows the zone file `posixrules` (see `ReaderTimeZone`), else the
/// United States' rules (`M3.2.0,M11.1.0`).
struct PosixZoneRule: Hashable, Sendable {
  /// One of the two halves of a rule: standard time with the change to daylight-saving time,
  /// or daylight-saving time with the change back (glibc's `tz_rule`).
  struct Half: Hashable, Sendable {
    enum Day: Hashable, Sendable {
      /// `n`: day 0 to 365 of the year, counting 29 February.
      case zeroBased(Int)
      /// `Jn`: day 1 to 365 of the year, never counting 29 February.
      case julian(Int)
      /// `Mm.w.d`: weekday `d` (0 Sunday) of week `w` (5 the last) of month `m`.
      case month(Int, week: Int, weekday: Int)
    }

    /// Seconds east of UTC.
    var offset = 0
    var day = Day.zeroBased(0)
    /// The local time of the change on its day, in seconds (negative or past a day allowed).
    var time = 0

    /// The instant of the change in `year`, in seconds since 1970 (glibc's `compute_change`).
    func change(in year: Int) -> Int64 {
      var days = CivilTime.daysSince1970(year: year, month: 1, day: 1)
      switch day {
      case .zeroBased(let number):
        days += Int64(number)
      case .julian(let number):
        days += Int64(number - 1) + (number >= 60 && CivilTime.isLeapYear(year) ? 1 : 0)
      case .month(let month, let week, let weekday):
        let first = CivilTime.daysSince1970(year: year, month: month, day: 1)
        // 1970-01-01 was a Thursday (4).
        let firstWeekday = Int((first % 7 + 7 + 4) % 7)
        var dayOfMonth = (weekday - firstWeekday + 7) % 7
        let length = CivilTime.daysInMonth(month, of: year)
        for _ in 1..<week where dayOfMonth + 7 < length { dayOfMonth += 7 }
        days = first + Int64(dayOfMonth)
      }
      return days * 86_400 - Int64(offset) + Int64(time)
    }
  }

  /// Standard time, and the change to daylight-saving time.
  var standard = Half()
  /// Daylight-saving time, and the change back to standard time.
  var daylight = Half()
  /// Whether the rule names a daylight-saving time but no changes (`CET-1CEST`), for which
  /// glibc takes the changes of its `posixrules` zone file when it has one.
  var lacksChanges = false

  /// UTC, as glibc leaves a rule it cannot read.
  static let utc = PosixZoneRule()

  /// Reads `text` as glibc's `__tzset_parse_tz` does; what it cannot read leaves UTC.
  init(_ text: Substring) {
    var reader = Reader(text: text.utf8[...])
    guard reader.name(), let offset = reader.offset() else { return }
    standard.offset = offset
    guard !reader.atEnd else {
      daylight.offset = standard.offset
      return
    }
    // Without a daylight-saving name glibc still reads the changes, and daylight-saving time
    // is then UTC.
    if reader.name() {
      daylight.offset = reader.offset() ?? standard.offset + 3600
      lacksChanges = reader.atEnd || reader.text.elementsEqual(",".utf8)
    }
    if let change = reader.change(first: true) {
      (standard.day, standard.time) = change
      if let back = reader.change(first: false) { (daylight.day, daylight.time) = back }
    }
  }

  private init() {}

  /// A bound on the seconds since 1970 that rules are applied to: over 3 million years.
  static let limit: Int64 = 100_000_000_000_000

  /// Seconds east of UTC at `seconds` since 1970 (glibc's `__tz_compute`).
  func offset(at seconds: Int64) -> Int {
    let year = CivilTime(millisecondsSince1970: min(max(seconds, -Self.limit), Self.limit) * 1000).year
    let start = standard.change(in: year)
    let end = daylight.change(in: year)
    // In the southern hemisphere daylight-saving time spans the new year.
    let isDaylight = start > end ? seconds < end || seconds >= start : seconds >= start && seconds < end
    return isDaylight ? daylight.offset : standard.offset
  }

  /// A cursor over the rule's bytes, with glibc's readers of each part.
  private struct Reader {
    var text: Substring.UTF8View.SubSequence

    var atEnd: Bool { text.isEmpty }

    static func isLetter(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// A zone name: three or more letters, or `<...>` holding three or more letters, digits,
    /// `+` or `-`.
    mutating func name() -> Bool {
      let letters = text.prefix { Self.isLetter($0) }.count
      if letters >= 3 {
        text = text.dropFirst(letters)
        return true
      }
      guard text.first == UInt8(ascii: "<") else { return false }
      let inside = text.dropFirst().prefix {
        Self.isLetter($0) || Self.isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
      }
      guard inside.count >= 3, text.dropFirst(1 + inside.count).first == UInt8(ascii: ">") else {
        return false
      }
      text = text.dropFirst(2 + inside.count)
      return true
    }

    /// An unsigned decimal number, if one is next.
    mutating func number() -> Int? {
      let digits = text.prefix { Self.isDigit($0) }
      guard !digits.isEmpty else { return nil }
      text = text.dropFirst(digits.count)
      return digits.reduce(0) { min($0 * 10 + Int($1 - UInt8(ascii: "0")), 1 << 40) }
    }

    /// `[+|-]hh[:mm[:ss]]`, each part up to 65535, as hours, minutes and seconds.
    mutating func clock() -> (Int, Int, Int)? {
      guard let hours = number() else { return nil }
      var minutes = 0
      var seconds = 0
      if text.first == UInt8(ascii: ":"), Self.isDigit(text.dropFirst().first ?? 0) {
        text = text.dropFirst()
        minutes = number()!
        if text.first == UInt8(ascii: ":"), Self.isDigit(text.dropFirst().first ?? 0) {
          text = text.dropFirst()
          seconds = number()!
        }
      }
      return (hours & 0xFFFF, minutes & 0xFFFF, seconds & 0xFFFF)
    }

    /// An offset west of UTC (POSIX's sign), returned east of UTC; hours are capped at 24,
    /// minutes and seconds at 59, as glibc caps them. Nil when there is none.
    mutating func offset() -> Int? {
      var sign = -1
      if let first = text.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
        sign = first == UInt8(ascii: "-") ? 1 : -1
        text = text.dropFirst()
      }
      guard let (hours, minutes, seconds) = clock() else { return nil }
      return sign * (min(hours, 24) * 3600 + min(minutes, 59) * 60 + min(seconds, 59))
    }

    /// `,date[/time]`: the day and time of a change; without one at the end, the United
    /// States' rule (the second Sunday of March, or the first of November), at 02:00.
    mutating func change(first: Bool) -> (Half.Day, Int)? {
      if text.first == UInt8(ascii: ",") { text = text.dropFirst() }
      let day: Half.Day
      let next = text.first ?? 0
      switch next {
      case UInt8(ascii: "J"):
        text = text.dropFirst()
        guard let number = number(), (1...365).contains(number) else { return nil }
        day = .julian(number)
      case _ where Self.isDigit(next):
        guard let number = number(), number <= 365 else { return nil }
        day = .zeroBased(number)
      case UInt8(ascii: "M"):
        text = text.dropFirst()
        guard let month = number(), text.popFirst() == UInt8(ascii: "."), let week = number(),
          text.popFirst() == UInt8(ascii: "."), let weekday = number(),
          (1...12).contains(month), (1...5).contains(week), weekday <= 6
        else { return nil }
        day = .month(month, week: week, weekday: weekday)
      case 0:
        day = first ? .month(3, week: 2, weekday: 0) : .month(11, week: 1, weekday: 0)
      default:
        return nil
      }
      var time = 7200
      switch text.first ?? 0 {
      case 0, UInt8(ascii: ","):
        break
      case UInt8(ascii: "/"):
        text = text.dropFirst()
        guard let sign = text.first else { return nil }
        if sign == UInt8(ascii: "-") { text = text.dropFirst() }
        let (hours, minutes, seconds) = clock() ?? (2, 0, 0)
        time = (sign == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60 + seconds)
      default:
        return nil
      }
      return (day, time)
    }
  }
}
