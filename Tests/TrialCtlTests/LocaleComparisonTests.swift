import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialCtl

/// The locale table against ICU: every locale trialwatchctl supports writes every instant as
/// the Foundation code did, and the others fall back to `en_US_POSIX`.
@Suite struct LocaleComparisonTests {
  /// Every month and every hour; one- and two-digit days, hours and minutes; noon and
  /// midnight on the hour; years far apart.
  static let instants: [Date] = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    var dates: [Date] = []
    for (index, year) in [2025, 1970, 1999, 2038, 2100, 10_000].enumerated() {
      for month in 1...12 {
        for hour in 0..<24 {
          let day = (month * 7 + hour + index) % 28 + 1
          let minute = [0, 5, 30, 59][(hour + month + index) % 4]
          dates.append(
            calendar.date(
              from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute))!)
        }
      }
    }
    return dates
  }()

  static func presenter(_ zone: ReaderTimeZone, _ locale: ReaderLocale) -> TrialPresenter {
    TrialPresenter(
      output: SpyOutput(), clock: StaticWallClock(PresenterTests.now), timeZone: zone, locale: locale)
  }

  @Test func everySupportedLocale_WritesDatesAsICUDid() {
    let names = ReaderLocale.supportedIdentifiers
    #expect(names.count > 600)
    var mismatches: [String] = []
    for name in names {
      let old = FoundationDates(zone: TimeZone(identifier: "UTC")!, locale: Locale(identifier: name))
      let locale = ReaderLocale(name)
      #expect(locale.identifier == name)
      let new = Self.presenter(.utc, locale)
      for date in Self.instants where old.date(date) != new.date(date) {
        mismatches.append(
          "\(name) \(date): ICU \(old.date(date).debugDescription), now \(new.date(date).debugDescription)")
        break
      }
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(20).joined(separator: "\n"))")
  }

  /// The locales named in the documentation, each in the table.
  @Test func documentedLocales_AreSupported() {
    let documented = [
      "en_US_POSIX", "en_US", "en_GB", "en_AU", "en_CA", "en_IE", "en_IN", "en_NZ", "de_DE", "de_AT", "de_CH",
      "fr_FR", "fr_CA", "fr_BE", "fr_CH", "es_ES", "es_MX", "es_US", "it_IT", "nl_NL", "nl_BE", "pt_BR",
      "pt_PT",
      "sv_SE", "da_DK", "nb_NO", "nn_NO", "fi_FI", "pl_PL", "cs_CZ", "sk_SK", "hu_HU", "ro_RO", "el_GR",
      "tr_TR",
      "ru_RU", "uk_UA", "he_IL", "ar_EG", "hi_IN", "ja_JP", "zh_CN", "zh_TW", "zh_HK", "ko_KR", "vi_VN",
      "id_ID",
    ]
    for name in documented {
      #expect(ReaderLocale(supported: name) != nil, "\(name)")
    }
  }

  /// The locales the documentation leaves out (docs/trialwatchctl.md).
  static let exceptions: Set<String> = [
    "th_TH", "fa_IR", "ps_AF", "az_IR", "ar_SA", "bo_CN", "bo_IN", "aa_DJ", "aa_ER", "aa_ET", "agr_PE",
    "an_ES",
    "anp_IN", "ayc_PE", "bhb_IN", "bi_VU", "crh_UA", "csb_PL", "hak_TW", "hif_FJ", "hne_IN", "ik_CA", "li_BE",
    "li_NL", "lzh_TW", "mag_IN", "mhr_RU", "miq_NI", "mjw_IN", "mnw_MM", "nan_TW", "nhn_MX", "niu_NU",
    "niu_NZ",
    "pap_AW", "pap_CW", "quz_PE", "rif_MA", "sgs_LT", "shn_MM", "shs_CA", "sid_ET", "tcy_IN", "the_NP",
    "tpi_PG",
    "unm_US", "yuw_PG",
  ]

  /// Every locale glibc ships is supported, but the documented exceptions.
  @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/i18n/SUPPORTED")))
  func glibcLocales_AreSupported_ButTheDocumentedExceptions() throws {
    let names = try String(contentsOfFile: "/usr/share/i18n/SUPPORTED", encoding: .utf8).split(
      separator: "\n"
    )
    .map { String($0.prefix { $0 != " " && $0 != "." && $0 != "@" }) }.filter { $0 != "C" }
    for name in Set(names) {
      #expect((ReaderLocale(supported: name) == nil) == Self.exceptions.contains(name), "\(name)")
    }
  }

  @Test func locale_FromTheEnvironment_IsReadAsBefore() {
    #expect(ReaderLocale.reader(["LANG": "de_DE.UTF-8@euro"]).identifier == "de_DE")
    #expect(ReaderLocale.reader(["LANG": "de_DE", "LC_TIME": "", "LC_ALL": ""]).identifier == "de_DE")
    #expect(ReaderLocale.reader(["LANG": "de_DE", "LC_TIME": "fr_FR.UTF-8"]).identifier == "fr_FR")
    #expect(ReaderLocale.reader(["LC_TIME": "fr_FR", "LC_ALL": "POSIX"]).identifier == "en_US_POSIX")
    #expect(ReaderLocale.reader(["LANG": "C.UTF-8"]).identifier == "en_US_POSIX")
    #expect(ReaderLocale.reader([:]).identifier == "en_US_POSIX")
  }

  /// A name the table does not know, a locale of another calendar or of a language ICU had
  /// no data for: `en_US_POSIX`.
  @Test(arguments: ["xx_YY", "th_TH", "fa_IR", "ar_SA", "bo_CN", "an_ES", "li_NL", "de-DE", "DE_de", ""])
  func unsupportedLocale_FallsBackToPOSIX(name: String) {
    #expect(ReaderLocale(supported: name) == nil)
    let fallback = ReaderLocale(name)
    #expect(fallback.identifier == "en_US_POSIX")
    let date = Date(timeIntervalSince1970: 1_750_000_000)
    #expect(Self.presenter(.utc, fallback).date(date) == "Jun 15, 2025 at 3:06\u{202F}PM")
  }

  /// An alias writes as its locale; the pattern's letters and quotes are read as ICU reads them.
  @Test func aliasAndPattern_AreReadAsICUReadsThem() throws {
    let date = Date(timeIntervalSince1970: 1_750_000_000)
    #expect(Self.presenter(.utc, ReaderLocale("de_LU")).date(date) == "15.06.2025, 15:06")
    #expect(ReaderLocale("de_LU").identifier == "de_LU")
    let pattern = try #require(DatePattern("h 'o''clock' B, yy-M-d K k a"))
    let time = try #require(CivilTime(year: 2007, month: 3, day: 4, hour: 0, minute: 9))
    let periods = (0..<24).map { "p\($0)" } + ["noon"]
    #expect(
      pattern.render(time, months: [], dayPeriods: periods, digits: []) == "12 o'clock p0, 07-3-4 0 24 p0")
    #expect(DatePattern("y G") == nil)
    #expect(DatePattern("y 'open") == nil)
  }
}
