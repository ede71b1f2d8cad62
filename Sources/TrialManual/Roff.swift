import Foundation

/// Writing man(7) source: escaping, light markup of prose, and filling lines.
///
/// Every line written is at most `lineLimit` bytes long and none has trailing white space,
/// none starts a text line with a control character, and no character outside ASCII is
/// written raw: what `mandoc -T lint` asks of a page.
enum Roff {
  static let lineLimit = 80

  /// Escapes text: backslashes, characters outside ASCII (as `\[uXXXX]`), and with `code`,
  /// hyphens, which then print as the minus sign an option is typed with.
  static func escape(_ text: some StringProtocol, code: Bool = false) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\\": out += "\\e"
      case "-" where code: out += "\\-"
      case "\t": out += " "
      case _ where scalar.isASCII: out.unicodeScalars.append(scalar)
      default:
        let hex = String(scalar.value, radix: 16, uppercase: true)
        out += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
      }
    }
    return out
  }

  static func bold(_ text: some StringProtocol) -> String {
    unbroken(text) + "\\fB" + escape(text, code: true) + "\\fR"
  }

  static func italic(_ text: some StringProtocol) -> String {
    unbroken(text) + "\\fI" + escape(text, code: true) + "\\fR"
  }

  /// `\%` before a path: it is never hyphenated.
  private static func unbroken(_ text: some StringProtocol) -> String { text.contains("/") ? "\\%" : "" }

  /// An argument of a request: quoted when it holds a space.
  static func argument(_ escaped: String) -> String {
    escaped.contains(" ") || escaped.isEmpty
      ? "\"" + escaped.replacingOccurrences(of: "\"", with: "\\(dq") + "\"" : escaped
  }

  /// Prose as words of roff: escaped, with options (`--socket`, `-h`), `code in backquotes`
  /// and references to pages (`trialwatch.conf(5)`) in bold, and with `keys`, configuration
  /// keys (`ReminderGrace=`) too.
  static func words(_ text: String, keys: Bool = false) -> [String] {
    // Backquoted spans first: they may hold spaces.
    var words: [String] = []
    var rest = Substring(text)
    while let open = rest.firstIndex(of: "`"),
      let close = rest[rest.index(after: open)...].firstIndex(of: "`")
    {
      words += plainWords(rest[..<open], keys: keys)
      let code = rest[rest.index(after: open)..<close]
      var marked = code.split(separator: " ").map { bold($0) }
      // A word right before the span (an opening parenthesis) stays attached to it.
      if open > rest.startIndex, rest[rest.index(before: open)] != " ", !marked.isEmpty,
        let last = words.popLast()
      {
        marked[0] = last + marked[0]
      }
      // Punctuation right after the span stays attached to it.
      var after = rest[rest.index(after: close)...]
      let punctuation = after.prefix { ",.;:)".contains($0) }
      after = after.dropFirst(punctuation.count)
      if var last = marked.last {
        last += escape(punctuation)
        words += marked.dropLast() + [last]
      }
      if let first = after.first, first != " ", !words.isEmpty {
        // A word continues right after the span: join it.
        let continuation = plainWords(after.prefix { $0 != " " }, keys: keys)
        words[words.count - 1] += continuation.joined()
        after = after.drop { $0 != " " }
      }
      rest = after
    }
    return words + plainWords(rest, keys: keys)
  }

  private static func plainWords(_ text: Substring, keys: Bool) -> [String] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { markWord($0, keys: keys) }
  }

  /// One word: options, page references and keys marked, the rest escaped.
  static func markWord(_ word: Substring, keys: Bool) -> String {
    let opening = word.prefix { "(\"'".contains($0) }
    let trimmed = word.dropFirst(opening.count)
    // `trialwatch.conf(5).`: a reference to a page, then punctuation.
    let punctuation = trimmed.reversed().prefix { ",.;:\"'".contains($0) }
    let reference = trimmed.dropLast(punctuation.count)
    if let open = reference.firstIndex(of: "("), open > reference.startIndex, reference.last == ")",
      reference.index(open, offsetBy: 3) == reference.endIndex,
      let section = reference[reference.index(after: open)].wholeNumberValue, (1...9).contains(section)
    {
      return escape(opening) + bold(reference[..<open]) + "(\(section))"
        + escape(String(punctuation.reversed()))
    }
    let closing = trimmed.reversed().prefix { ",.;:)\"'".contains($0) }
    let core = trimmed.dropLast(closing.count)
    let trailing = String(closing.reversed())
    if core.count >= 2, core.first == "-", let second = core.dropFirst().first,
      second == "-" || second.isLetter,
      core.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    {
      return escape(opening) + bold(core) + escape(trailing)
    }
    if keys, let equals = core.firstIndex(of: "="), equals > core.startIndex,
      core.first?.isUppercase == true, core[..<equals].allSatisfy({ $0.isLetter })
    {
      let value = core[core.index(after: equals)...]
      return escape(opening) + bold(core[...equals]) + escape(value) + escape(trailing)
    }
    return unbroken(word) + escape(word)
  }

  /// Words filled into lines of at most `lineLimit` bytes (a longer word gets a line of its
  /// own), none starting with a control character.
  static func fill(_ words: [String]) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in words where !word.isEmpty {
      if line.isEmpty {
        line = word
      } else if line.utf8.count + 1 + word.utf8.count <= lineLimit {
        line += " " + word
      } else {
        lines.append(line)
        line = word
      }
    }
    if !line.isEmpty { lines.append(line) }
    return lines.map(textLine)
  }

  /// A text line as roff reads it: a leading `.` or `'` would make it a request.
  static func textLine(_ line: String) -> String {
    line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : line
  }
}
