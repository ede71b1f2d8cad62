import Foundation

// trialwatch-locale-table: writes on standard output Sources/TrialCtl/Dates/LocaleTable.swift,
// the text of a medium date and a short time in each locale trialwatchctl supports, as
// Foundation's ICU writes it (`make locale-table`; docs/trialwatchctl.md, "Dates").
//
// The names: every locale glibc ships (/usr/share/i18n/SUPPORTED, as `LANG` names them) and
// every identifier ICU knows. Left out: a name whose calendar is not the Gregorian, whose numbers
// are not written in the digits of its day field, whose pattern has a field DatePattern does not
// render, or whose text depends on ICU's default locale (a language ICU has no data for; found by
// running this program again under two default locales). The names left are grouped by what
// their text is made of (pattern, month names, day periods, digits); a group with a name glibc
// ships is kept, under the first of `preferred` it holds, else under its first glibc name, and
// its other names are its aliases.
//
//   trialwatch-locale-table           the Swift file
//   trialwatch-locale-table --texts   NAME...: ICU's text of the sample instants in each locale,
//                                     as JSON (what the comparison of default locales reads)

/// What one locale's medium date and short time are made of (`LocaleFormat` in TrialCtl).
struct Format: Hashable {
  var pattern: String
  var months: [String] = []
  var dayPeriods: [String] = []
  /// The ten digits, empty when they are 0 to 9.
  var digits = ""
}

/// glibc's list of the locales it ships.
let glibcList = "/usr/share/i18n/SUPPORTED"
/// The field letters DatePattern renders.
let renderedLetters: Set<Character> = ["y", "M", "L", "d", "h", "H", "K", "k", "m", "a", "B"]
/// The names a group is stored under first, in this order; other groups are stored under their
/// first glibc name. `en_US_POSIX` is the fallback of every unknown name.
let preferred = [
  "en_US_POSIX", "de_DE", "el_GR", "en_IN", "fr_FR", "it_IT", "nl_NL", "sv_SE", "tl_PH", "zh_TW",
]
/// Two default locales for ICU (through `LC_ALL`): a text that differs under them depends on it.
let defaultLocales = ["C", "ja_JP.UTF-8"]

let calendar = {
  var calendar = Calendar(identifier: .gregorian)
  calendar.timeZone = TimeZone(identifier: "UTC")!
  return calendar
}()

func date(month: Int = 1, day: Int = 1, hour: Int = 0, minute: Int = 0) -> Date {
  calendar.date(from: DateComponents(year: 2025, month: month, day: day, hour: hour, minute: minute))!
}

/// The instants whose texts are compared: every digit, morning and afternoon.
let samples = [
  date(month: 6, day: 15, hour: 15, minute: 6), date(month: 1, day: 2, hour: 3, minute: 4),
  date(month: 11, day: 28, hour: 9, minute: 57), date(month: 12, day: 31, hour: 12),
]

/// A formatter in UTC: of `pattern`, or without one of the medium date and the short time.
func formatter(_ locale: Locale, _ pattern: String? = nil) -> DateFormatter {
  let formatter = DateFormatter()
  formatter.locale = locale
  formatter.timeZone = calendar.timeZone
  if let pattern {
    formatter.dateFormat = pattern
  } else {
    formatter.dateStyle = .medium
    formatter.timeStyle = .short
  }
  return formatter
}

/// The fields of a pattern (UTS #35): each run of one letter outside quotes, with its length.
func fields(_ pattern: String) -> [(letter: Character, count: Int)] {
  var fields: [(letter: Character, count: Int)] = []
  var quoted = false
  var previous: Character?
  for character in pattern {
    if character == "'" { quoted.toggle() }
    let letter = !quoted && character.isASCII && character.isLetter ? character : nil
    if let letter, letter == previous {
      fields[fields.count - 1].count += 1
    } else if let letter {
      fields.append((letter, 1))
    }
    previous = letter
  }
  return fields
}

/// What ICU writes the medium date and short time of `locale` with.
func format(_ locale: Locale) -> Format {
  let full = formatter(locale)
  var format = Format(pattern: full.dateFormat)
  for (letter, count) in fields(format.pattern) {
    switch (letter, count) {
    case ("M", 3): format.months = full.shortMonthSymbols
    case ("M", 4): format.months = full.monthSymbols
    case ("M", 5): format.months = full.veryShortMonthSymbols
    case ("L", 3): format.months = full.shortStandaloneMonthSymbols
    case ("L", 4): format.months = full.standaloneMonthSymbols
    case ("L", 5): format.months = full.veryShortStandaloneMonthSymbols
    case ("a", _): format.dayPeriods = [full.amSymbol, full.pmSymbol]
    case ("B", _):
      // The period of each hour, and the text of 12:00 exactly when it is another (noon).
      let field = formatter(locale, String(repeating: "B", count: count))
      let hours = (0..<24).map { field.string(from: date(hour: $0, minute: 30)) }
      let noon = field.string(from: date(hour: 12))
      format.dayPeriods = hours + [noon == hours[12] ? "" : noon]
    default: break
    }
  }
  let day = formatter(locale, "d")
  let digits = String((0...9).map { day.string(from: date(day: $0 == 0 ? 10 : $0)).last! })
  format.digits = digits == "0123456789" ? "" : digits
  return format
}

/// ICU's texts of the sample instants in `locale`.
func texts(_ locale: Locale) -> [String] {
  let full = formatter(locale)
  return samples.map { full.string(from: $0) }
}

/// The texts of each of `names`, from this program run again with ICU's default locale `name`.
func textsUnderDefault(_ name: String, of names: [String]) throws -> [String: [String]] {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
  process.arguments = ["--texts"] + names
  process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": name]) { $1 }
  let output = Pipe()
  process.standardOutput = output
  try process.run()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else { throw Failure("the run with LC_ALL=\(name) failed") }
  return try JSONDecoder().decode([String: [String]].self, from: data)
}

struct Failure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Whether the table leaves out `name`, whose text is made of `format`.
func isLeftOut(_ name: String, _ format: Format) -> Bool {
  let locale = Locale(identifier: name)
  guard locale.calendar.identifier == .gregorian,
    fields(format.pattern).allSatisfy({ renderedLetters.contains($0.letter) })
  else { return true }
  // The numbers: ICU's texts less the month names and day periods, the longest taken out first.
  let words = (format.months + format.dayPeriods).filter { !$0.isEmpty }.sorted { $0.count > $1.count }
  var numbers = texts(locale).joined(separator: " ")
  for word in words { numbers = numbers.replacingOccurrences(of: word, with: " ") }
  let digits = Set(format.digits.isEmpty ? "0123456789" : format.digits)
  return numbers.contains { character in
    character.unicodeScalars.first?.properties.numericType == .decimal && !digits.contains(character)
  }
}

/// `text` as a Swift string literal; invisible characters (format characters, spaces other than
/// the ASCII one) escaped.
func literal(_ text: String) -> String {
  var result = "\""
  for scalar in text.unicodeScalars {
    switch scalar.properties.generalCategory {
    case _ where scalar == "\"" || scalar == "\\": result += "\\" + String(scalar)
    case _ where scalar == " ": result += " "
    case .format, .spaceSeparator, .control, .lineSeparator, .paragraphSeparator:
      result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
    default: result.unicodeScalars.append(scalar)
    }
  }
  return result + "\""
}

func list(_ texts: [String]) -> String {
  "[" + texts.map(literal).joined(separator: ", ") + "]"
}

/// The Swift file: the formats of the kept groups, and every alias with its group's name.
func table(_ groups: [String: (format: Format, aliases: [String])]) -> String {
  var lines = [
    "// Generated by Sources/trialwatch-locale-table/main.swift; do not edit.",
    "// Regenerated by `make locale-table`, from the ICU data of Foundation: for each supported locale,",
    "// the pattern of its medium date and short time, the texts of its month field and of its day",
    "// periods, and its digits when they are not 0 to 9 (`LocaleFormat`). The locales left out, and",
    "// why, are said in the generator and in docs/trialwatchctl.md (\"Dates\").",
    "enum LocaleTable {",
    "  /// Each locale's format, under one name of the locale's group.",
    "  static let formats: [String: LocaleFormat] = [",
  ]
  for (name, group) in groups.sorted(by: { $0.key < $1.key }) {
    var arguments = ["pattern: " + literal(group.format.pattern)]
    if !group.format.months.isEmpty { arguments.append("months: " + list(group.format.months)) }
    if !group.format.dayPeriods.isEmpty { arguments.append("dayPeriods: " + list(group.format.dayPeriods)) }
    if !group.format.digits.isEmpty { arguments.append("digits: " + literal(group.format.digits)) }
    lines.append("    \(literal(name)): LocaleFormat(\(arguments.joined(separator: ", "))),")
  }
  lines += [
    "  ]",
    "",
    "  /// Every other supported name, with the name in `formats` whose text ICU writes exactly as",
    "  /// its own.",
    "  static let aliases: [String: String] = [",
  ]
  let aliases = groups.flatMap { name, group in group.aliases.map { ($0, name) } }.sorted { $0.0 < $1.0 }
  lines += aliases.map { "    \(literal($0.0)): \(literal($0.1))," }
  lines += ["  ]", "}"]
  return lines.joined(separator: "\n") + "\n"
}

func run() throws {
  let arguments = CommandLine.arguments.dropFirst()
  if arguments.first == "--texts" {
    let names = arguments.dropFirst()
    let all = Dictionary(uniqueKeysWithValues: names.map { ($0, texts(Locale(identifier: $0))) })
    FileHandle.standardOutput.write(try JSONEncoder().encode(all))
    return
  }
  guard arguments.isEmpty else { throw Failure("usage: trialwatch-locale-table [--texts NAME...]") }
  guard let list = FileManager.default.contents(atPath: glibcList) else {
    throw Failure("\(glibcList): cannot be read (Debian: the locales package)")
  }
  let glibc = Set(
    String(decoding: list, as: UTF8.self).split(separator: "\n").map {
      String($0.prefix { $0 != " " && $0 != "." && $0 != "@" })
    }.filter { $0 != "C" })
  let names = glibc.union(Locale.availableIdentifiers).union(["en_US_POSIX"]).sorted()
  let underDefaults = try defaultLocales.map { try textsUnderDefault($0, of: names) }
  var members: [Format: [String]] = [:]
  for name in names where underDefaults.allSatisfy({ $0[name] == underDefaults[0][name] }) {
    let format = format(Locale(identifier: name))
    if !isLeftOut(name, format) { members[format, default: []].append(name) }
  }
  var groups: [String: (format: Format, aliases: [String])] = [:]
  for (format, names) in members {
    guard let name = preferred.first(where: names.contains) ?? names.first(where: glibc.contains) else {
      continue
    }
    groups[name] = (format, names.filter { $0 != name })
  }
  FileHandle.standardOutput.write(Data(table(groups).utf8))
}

do {
  try run()
} catch {
  FileHandle.standardError.write(Data("trialwatch-locale-table: \(error)\n".utf8))
  exit(1)
}
