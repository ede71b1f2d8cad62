import TrialCore

/// The parsers of the configuration's values: each takes a value as written and returns it
/// as the configuration holds it, or says why it cannot be used.
extension ConfigurationSchema {
  static let nodeNameRule =
    "not a node name (1 to \(PostgreSQLSettings.maximumNodeNameLength) ASCII letters, digits, \"-\", \"_\" or "
    + "\".\", starting with a letter or digit)"

  static let passwordAdvice =
    "put it in a .pgpass file instead (named by PGPASSFILE; under systemd, passed with LoadCredential= "
    + "as trialwatch-fleet.conf does)"

  /// A libpq connection string or URI, checked for form only, and refused when it holds a
  /// password.
  static func connection(_ value: String) throws(InvalidValue) -> String {
    let lowered = value.lowercased()
    if let scheme = ["postgresql://", "postgres://"].first(where: { lowered.hasPrefix($0) }) {
      try connectionURI(value.dropFirst(scheme.count))
    } else if let separator = value.firstRange(of: "://") {
      throw InvalidValue(
        reason:
          "unknown URI scheme \"\(value[..<separator.lowerBound])\"; expected postgresql:// or postgres://")
    } else {
      try connectionKeywords(value)
    }
    return value
  }

  /// The part of a URI after `postgresql://`: `[user[:password]@][hosts][/db][?params]`.
  private static func connectionURI(_ rest: Substring) throws(InvalidValue) {
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") {
      throw InvalidValue(reason: "holds a password (user:password@); " + passwordAdvice)
    }
    guard let question = rest.firstIndex(of: "?") else { return }
    let query = rest[rest.index(after: question)...].prefix { $0 != "#" }
    for parameter in query.split(separator: "&") {
      let name = String(parameter.prefix { $0 != "=" })
      if (percentDecoded(name) ?? name).lowercased() == "password" {
        throw InvalidValue(reason: "holds a password (password=); " + passwordAdvice)
      }
    }
  }

  /// `keyword=value` pairs separated by spaces, as libpq reads them: spaces around `=`, a
  /// value in single quotes with `\'` and `\\` escapes, or unquoted with backslash escapes.
  private static func connectionKeywords(_ value: String) throws(InvalidValue) {
    let chars = Array(value)
    var index = 0
    func skipSpaces() { while index < chars.count, chars[index].isWhitespace { index += 1 } }
    skipSpaces()
    while index < chars.count {
      var keyword = ""
      while index < chars.count, !chars[index].isWhitespace, chars[index] != "=" {
        keyword.append(chars[index])
        index += 1
      }
      skipSpaces()
      guard index < chars.count, chars[index] == "=" else {
        throw InvalidValue(
          reason: "missing \"=\" after \"\(keyword)\"; expected keyword=value pairs separated by spaces, "
            + "or a postgresql:// URI")
      }
      guard !keyword.isEmpty else {
        throw InvalidValue(
          reason: "missing keyword before \"=\"; expected keyword=value pairs separated by spaces")
      }
      if keyword.lowercased() == "password" {
        throw InvalidValue(reason: "holds a password (password=); " + passwordAdvice)
      }
      index += 1
      skipSpaces()
      if index < chars.count, chars[index] == "'" {
        index += 1
        var closed = false
        while index < chars.count {
          if chars[index] == "\\" {
            index += 2
          } else if chars[index] == "'" {
            index += 1
            closed = true
            break
          } else {
            index += 1
          }
        }
        guard closed else { throw InvalidValue(reason: "unterminated quoted value of \(keyword)=") }
      } else {
        while index < chars.count, !chars[index].isWhitespace {
          index += chars[index] == "\\" ? 2 : 1
        }
      }
      skipSpaces()
    }
  }

  static func positiveSpan(_ value: String, infinity: Bool = false) throws(InvalidValue) -> Duration {
    let span = try span(value)
    guard span > .zero else {
      throw InvalidValue(
        reason: "must be longer than 0" + (infinity ? " (use \"infinity\" for no timeout)" : ""))
    }
    return span
  }

  /// A plan's grace (`Grace=`): 0 to `Trial.maximumGrace`, whole milliseconds.
  static func grace(_ value: String) throws(InvalidValue) -> Duration {
    let grace = try span(value)
    guard grace <= Trial.maximumGrace else {
      throw InvalidValue(reason: "must be at most 365d")
    }
    guard grace == .milliseconds(grace.roundedMilliseconds) else {
      throw InvalidValue(reason: "must be a whole number of milliseconds")
    }
    return grace
  }

  static func span(_ value: String) throws(InvalidValue) -> Duration {
    do {
      return try TimeSpan.parse(value)
    } catch {
      throw InvalidValue(reason: "not a time span (like 5d, 36h, 90s or 1d 12h): \(error.problem)")
    }
  }

  static func reminders(_ value: String) throws(InvalidValue) -> ReminderSchedule {
    if value == "none" { return .none }
    let offsets = try spans(value, item: "reminder offset", or: ", or none")
    do {
      return try ReminderSchedule(offsets)
    } catch {
      throw InvalidValue(reason: error.description)
    }
  }

  /// Follow-ups: spans after the expiry, separated by commas.
  static func followUps(_ value: String) throws(InvalidValue) -> FollowUpSchedule {
    let spans = try spans(value, item: "follow-up", or: ", or none")
    guard spans.allSatisfy({ $0 == .milliseconds($0.roundedMilliseconds) }) else {
      throw InvalidValue(reason: "must be a whole number of milliseconds")
    }
    do {
      return try FollowUpSchedule(spans)
    } catch {
      throw InvalidValue(reason: error.description)
    }
  }

  /// Milestones: spans after the start, separated by commas.
  static func milestones(_ value: String) throws(InvalidValue) -> MilestoneSchedule {
    let spans = try spans(value, item: "milestone", or: ", or none")
    guard spans.allSatisfy({ $0 == .milliseconds($0.roundedMilliseconds) }) else {
      throw InvalidValue(reason: "must be a whole number of milliseconds")
    }
    do {
      return try MilestoneSchedule(spans)
    } catch {
      throw InvalidValue(reason: error.description)
    }
  }

  /// Time spans separated by commas; `item` names one in the error for an empty one, `or` adds
  /// what else the value may be.
  static func spans(_ value: String, item: String, or: String = "") throws(InvalidValue) -> [Duration] {
    var spans: [Duration] = []
    for part in value.split(separator: ",", omittingEmptySubsequences: false) {
      let text = ConfigurationSyntax.trimmed(part)
      guard !text.isEmpty else {
        throw InvalidValue(reason: "empty \(item); expected time spans separated by commas\(or)")
      }
      spans.append(try span(text))
    }
    return spans
  }

  /// Names separated by spaces (or commas), each taken by `validate` (nil) or refused (its
  /// problem); at least one.
  static func names(_ value: String, validate: (String) -> String?) throws(InvalidValue) -> Set<String> {
    let names = value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }).map(String.init)
    guard !names.isEmpty else { throw InvalidValue(reason: "names at least one") }
    for name in names {
      if let problem = validate(name) { throw InvalidValue(reason: "\"\(name)\" \(problem)") }
    }
    return Set(names)
  }

  /// A boolean as systemd reads one: 1, yes, y, true, t or on; 0, no, n, false, f or off (any case).
  static func boolean(_ value: String) throws(InvalidValue) -> Bool {
    switch value.lowercased() {
    case "1", "yes", "y", "true", "t", "on": return true
    case "0", "no", "n", "false", "f", "off": return false
    default: throw InvalidValue(reason: "not a boolean (yes or no)")
    }
  }

  /// One of the raw values of `choices`, as written.
  static func choice<Choice: RawRepresentable<String> & CaseIterable>(
    _ value: String, of choices: Choice.Type
  )
    throws(InvalidValue) -> Choice
  {
    guard let choice = Choice(rawValue: value) else {
      throw InvalidValue(reason: "not one of " + Choice.allCases.map(\.rawValue).joined(separator: ", "))
    }
    return choice
  }

  static func absolutePath(_ value: String) throws(InvalidValue) -> String {
    guard value.utf8.first == UInt8(ascii: "/") else {
      throw InvalidValue(reason: "must be an absolute path")
    }
    guard !value.utf8.contains(0) else { throw InvalidValue(reason: "must not contain NUL") }
    return value
  }

  /// An absolute path that fits a Unix socket's address.
  static func socketPath(_ value: String) throws(InvalidValue) -> String {
    let path = try absolutePath(value)
    guard path.utf8.count <= maximumSocketPathLength else {
      throw InvalidValue(
        reason: "longer than \(maximumSocketPathLength) bytes, the limit of a Unix socket address")
    }
    return path
  }

  /// A group name as useradd(8) accepts it, or a numeric group id.
  static func groupName(_ value: String) throws(InvalidValue) -> String {
    if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
      guard UInt32(value) != nil, value != "4294967295" else {
        throw InvalidValue(reason: "group id out of range")
      }
      return value
    }
    let bytes = Array(value.utf8)
    let isLetter = { (b: UInt8) in (b >= 97 && b <= 122) || (b >= 65 && b <= 90) }
    let isDigit = { (b: UInt8) in b >= 48 && b <= 57 }
    guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_"),
      bytes.count <= 32,
      bytes.dropFirst().allSatisfy({
        isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
          || $0 == UInt8(ascii: ".")
      })
    else {
      throw InvalidValue(
        reason: "not a group name (a letter or \"_\", then letters, digits, \"_\", \"-\" or \".\", "
          + "at most 32) or a numeric group id")
    }
    return value
  }
}

/// `text` with its `%XX` escapes decoded (RFC 3986), or nil when an escape is incomplete or the
/// result is not UTF-8.
func percentDecoded(_ text: some StringProtocol) -> String? {
  var bytes: [UInt8] = []
  var rest = Substring(text).utf8[...]
  while let byte = rest.popFirst() {
    guard byte == UInt8(ascii: "%") else {
      bytes.append(byte)
      continue
    }
    guard rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
    else {
      return nil
    }
    bytes.append(value)
    rest = rest.dropFirst(2)
  }
  return String(validating: bytes, as: UTF8.self)
}
