import TrialCore

/// The locale trialwatchctl writes dates in: a medium date and a short time, exactly as ICU
/// wrote them for the locales of `LocaleTable`, without ICU.
///
/// The name comes from `LC_ALL`, `LC_TIME` or `LANG` (the first set and not empty), without
/// its encoding or modifier (`de_DE.UTF-8@euro` reads as `de_DE`). `C` and `POSIX`, no name at
/// all, and a name the table does not know write dates as `en_US_POSIX`
/// (`Jun 18, 2025 at 3:06 PM`).
public struct ReaderLocale: Hashable, Sendable {
  /// The locale's name as given when the table knows it, else `en_US_POSIX`.
  public let identifier: String
  let pattern: DatePattern
  let months: [String]
  let dayPeriods: [String]
  let digits: [Character]

  /// `en_US_POSIX`: the C and POSIX locales, and the fallback.
  public static let posix = ReaderLocale(supported: "en_US_POSIX")!

  /// The locale `name` names (`de_DE`, `de`, `zh_Hant_TW`); nil when the table does not know it.
  public init?(supported name: String) {
    guard
      let format = LocaleTable.formats[name]
        ?? LocaleTable.aliases[name].flatMap({ LocaleTable.formats[$0] }),
      let pattern = DatePattern(format.pattern)
    else { return nil }
    identifier = name
    self.pattern = pattern
    months = format.months
    dayPeriods = format.dayPeriods
    digits = Array(format.digits)
  }

  /// The locale `name` names, `en_US_POSIX` when the table does not know it.
  public init(_ name: String) {
    self = ReaderLocale(supported: name) ?? .posix
  }

  /// The reader's locale: the one `LC_ALL`, `LC_TIME` or `LANG` among `variables` names.
  public static func reader(_ variables: [String: String]) -> ReaderLocale {
    let name = [variables["LC_ALL"], variables["LC_TIME"], variables["LANG"]].compactMap { $0 }
      .first { !$0.isEmpty }
    guard let name else { return .posix }
    let identifier = String(name.prefix { $0 != "." && $0 != "@" })
    if identifier.isEmpty || identifier == "C" || identifier == "POSIX" { return .posix }
    return ReaderLocale(identifier)
  }

  /// Every locale name the table knows.
  public static var supportedIdentifiers: [String] {
    (Array(LocaleTable.formats.keys) + Array(LocaleTable.aliases.keys)).sorted()
  }

  /// The medium date and short time of `time`.
  func string(_ time: CivilTime) -> String {
    pattern.render(time, months: months, dayPeriods: dayPeriods, digits: digits)
  }
}

/// One locale's medium date and short time, as ICU writes them (`LocaleTable`, generated from
/// ICU's data by Sources/trialwatch-locale-table).
struct LocaleFormat: Sendable {
  /// The pattern of the date and time together (`DatePattern`).
  var pattern: String
  /// The twelve texts of the pattern's month field, when it names months by text.
  var months: [String] = []
  /// AM and PM; or for a pattern with `B`, the period of each hour and the text of noon.
  var dayPeriods: [String] = []
  /// The locale's ten digits, when they are not 0 to 9.
  var digits = ""
}
