/// One locale's medium date and short time, as ICU writes them.
struct LocaleFormat: Sendable {
  /// The pattern of the date and time together (`DatePattern`).
  let pattern: String
  /// The twelve texts of the pattern's month field, when it names months by text.
  let months: [String]
  /// AM and PM; or for a pattern with `B`, the period of each hour and the text of noon.
  let dayPeriods: [String]
  /// The locale's ten digits, when they are not 0 to 9.
  let digits: String

  init(_ pattern: String, months: [String] = [], dayPeriods: [String] = [], digits: String = "") {
    self.pattern = pattern
    self.months = months
    self.dayPeriods = dayPeriods
    self.digits = digits
  }
}

/// The locales trialwatchctl writes dates in, with the text ICU 76 gave each: generated once
/// from ICU's own formatter, every entry checked against ICU's output at the time.
///
/// The table holds every locale glibc ships (`/usr/share/i18n/SUPPORTED`, as `LANG` names
/// them) whose medium date and short time ICU writes in the Gregorian calendar and that this
/// renderer reproduces exactly, and under `aliases` every other name (one of ICU's
/// identifiers, a language alone, another spelling such as `zh_Hant_TW`) whose text is
/// exactly one of theirs. Left out: locales whose calendar is not Gregorian (`th_TH`
/// Buddhist, `fa_IR`, `ps_AF` and `az_IR` Persian, `ar_SA` Islamic), whose date and time use
/// different digits (`bo_CN`, `bo_IN`), and those of languages ICU has no data for (`an_ES`,
/// `li_NL`, `aa_ET` and the like), whose text depended on ICU's default locale.
enum LocaleTable {
  /// The format of the locale `name` names, nil when the table has no such name.
  static func format(named name: String) -> LocaleFormat? {
    formats1[name] ?? formats2[name] ?? formats3[name] ?? aliasTargets[name].flatMap(format(named:))
  }

  /// Every name the table knows, locales and aliases.
  static var names: [String] {
    (Array(formats1.keys) + Array(formats2.keys) + Array(formats3.keys) + Array(aliasTargets.keys)).sorted()
  }

  /// Each alias with the locale it writes dates as.
  static let aliasTargets: [String: String] = {
    var targets: [String: String] = [:]
    for (target, lines) in aliases {
      for line in lines {
        for name in line.split(separator: " ") { targets[String(name)] = target }
      }
    }
    return targets
  }()
}
