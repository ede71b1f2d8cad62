import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialCtl

/// The reader's time zone against ICU (the zones Foundation could name) and glibc (every
/// value of `TZ`): the same civil time for every instant of the grid, and the same text in
/// every supported locale.
@Suite struct TimeZoneComparisonTests {
  static let locales = ReaderLocale.supportedIdentifiers

  /// Every half hour from 2025 to 2027 and the far instants, in each zone ICU knows, each
  /// instant in another locale (all of them in turn): the text ICU wrote.
  @Test(arguments: ComparedZones.named)
  func namedZone_OverTheGrid_WritesAsICUDid(zone name: String) throws {
    let zone = try #require(ReaderTimeZone(named: name))
    let icuZone = try #require(TimeZone(identifier: name))
    var old: [String: FoundationDates] = [:]
    var new: [String: TrialPresenter] = [:]
    var mismatches: [String] = []
    for (index, seconds) in ComparedZones.grid.enumerated() {
      let locale = Self.locales[(index * 7 + name.count) % Self.locales.count]
      let date = Date(timeIntervalSince1970: TimeInterval(seconds))
      let reference = old[locale, default: FoundationDates(zone: icuZone, locale: Locale(identifier: locale))]
      old[locale] = reference
      let presenter = new[locale, default: LocaleComparisonTests.presenter(zone, ReaderLocale(locale))]
      new[locale] = presenter
      if reference.date(date) != presenter.date(date) {
        mismatches.append("\(seconds) \(locale): ICU \(reference.date(date)), now \(presenter.date(date))")
      }
    }
    #expect(mismatches.isEmpty, "\(name): \(mismatches.count), \(mismatches.prefix(10))")
  }

  /// Instants next to the half hours, a millisecond or less away: taken to the millisecond
  /// below, as ICU did.
  @Test func instants_BesideAMinute_AreTakenAsICUTookThem() throws {
    let zone = try #require(ReaderTimeZone(named: "Europe/Berlin"))
    let old = FoundationDates(
      zone: TimeZone(identifier: "Europe/Berlin")!, locale: Locale(identifier: "de_DE"))
    let new = LocaleComparisonTests.presenter(zone, ReaderLocale("de_DE"))
    for seconds in ComparedZones.grid.prefix(2000) {
      for delta in [-0.001, -0.000_5, -0.000_001, 0.000_001, 0.000_5, 0.000_999, 59.999_9] {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds) + delta)
        #expect(old.date(date) == new.date(date), "\(seconds) \(delta)")
      }
    }
  }

  /// POSIX rules, which ICU could not read: glibc's civil time for every instant of the grid,
  /// and ICU's text at glibc's offset.
  @Test(arguments: ComparedZones.rules.filter { $0 != ComparedZones.secondsRule })
  func posixRule_OverTheGrid_FollowsGlibc(rule: String) throws {
    let zone = ReaderTimeZone(tz: rule)
    let glibc = try GlibcReference.localTimes(tz: rule, ComparedZones.grid)
    var formatters: [Int: FoundationDates] = [:]
    var mismatches: [String] = []
    for (index, seconds) in ComparedZones.grid.enumerated() {
      let offset = glibc[index].offset
      let locale = Self.locales[index % Self.locales.count]
      let key = offset * 1000 + index % Self.locales.count
      let reference = formatters[
        key,
        default: FoundationDates(zone: TimeZone(secondsFromGMT: offset)!, locale: Locale(identifier: locale))]
      formatters[key] = reference
      let date = Date(timeIntervalSince1970: TimeInterval(seconds))
      let text = LocaleComparisonTests.presenter(zone, ReaderLocale(locale)).date(date)
      if reference.date(date) != text {
        mismatches.append("\(seconds) \(locale): \(reference.date(date)), now \(text)")
      }
    }
    #expect(mismatches.isEmpty, "\(rule): \(mismatches.count), \(mismatches.prefix(10))")
  }

  /// `TZ` as glibc reads it: unset (the system's zone), `:Zone`, `Zone`, a path, zone files
  /// named like rules, leap seconds, `TZDIR`; and what is neither a zone nor a rule (UTC).
  @Test(
    arguments: [
      nil, ":Europe/Berlin", "Europe/Berlin", "EST5EDT", "EST", "UTC", "", ":", "Europe/Nowhere", "FOO",
      "right/Europe/Berlin", "/usr/share/zoneinfo/Asia/Kolkata", "Pacific/Chatham", "America/St_Johns",
      "Australia/Lord_Howe", "CET-1CEST,M3.5.0", "EST5,M3.2.0,M11.1.0", "CET-1CEST,garbage",
    ] + ComparedZones.rules as [String?])
  func tz_AsGlibcReadsIt_GivesGlibcsCivilTime(tz: String?) throws {
    try expectGlibcTimes(ReaderTimeZone.reader(tz.map { ["TZ": $0] } ?? [:]), tz: tz, tzdir: nil)
  }

  @Test func tzdir_WhenSet_IsWhereZonesAreLookedUp() throws {
    let zone = ReaderTimeZone.reader(["TZ": "Berlin", "TZDIR": "/usr/share/zoneinfo/Europe"])
    #expect(Self.localTimes(zone) == Self.localTimes(try #require(ReaderTimeZone(named: "Europe/Berlin"))))
    try expectGlibcTimes(zone, tz: "Berlin", tzdir: "/usr/share/zoneinfo/Europe")
  }

  @Test func tz_NamesAndColons_ReadTheSameZones() throws {
    let berlin = try #require(ReaderTimeZone(named: "Europe/Berlin"))
    #expect(Self.localTimes(ReaderTimeZone(tz: ":Europe/Berlin")) == Self.localTimes(berlin))
    #expect(ReaderTimeZone(tz: "Europe/Berlin").name == "Europe/Berlin")
    #expect(ReaderTimeZone(tz: nil).name == "/etc/localtime")
    for utc in ["", ":", "Europe/Nowhere", "FOO", "UTC0"] {
      let zone = ReaderTimeZone(tz: utc)
      #expect(zone.localSeconds(at: 1_750_000_000) == 1_750_000_000, "\(utc)")
      #expect(zone.localSeconds(at: 1_735_689_600) == 1_735_689_600, "\(utc)")
    }
    #expect(ReaderTimeZone(named: "Europe/Nowhere") == nil)
  }

  /// A daylight-saving name without changes: the changes of glibc's `posixrules` zone file.
  @Test(arguments: ["CET-1CEST", "AAA3BBB,", "<+11>-11<+12>-12:30"])
  func ruleWithoutChanges_FollowsPosixRules(rule: String) throws {
    try expectGlibcTimes(ReaderTimeZone(tz: rule), tz: rule, tzdir: nil)
  }

  /// The local time of every instant of the grid in `zone`, in seconds as if UTC were local.
  static func localTimes(_ zone: ReaderTimeZone) -> [Int64] {
    ComparedZones.grid.map { zone.localSeconds(at: $0) }
  }

  func expectGlibcTimes(
    _ zone: ReaderTimeZone, tz: String?, tzdir: String?, _ instants: [Int64] = ComparedZones.grid
  ) throws {
    let glibc = try GlibcReference.localTimes(tz: tz, tzdir: tzdir, instants)
    var mismatches: [String] = []
    for (index, seconds) in instants.enumerated() {
      let time = zone.localTime(Date(timeIntervalSince1970: TimeInterval(seconds)))
      let ours = [time.year, time.month, time.day, time.hour, time.minute]
      if ours != glibc[index].fields {
        mismatches.append("\(seconds): glibc \(glibc[index].fields), ours \(ours)")
      }
    }
    #expect(mismatches.isEmpty, "TZ=\(tz ?? "(unset)"): \(mismatches.count), \(mismatches.prefix(10))")
  }
}
