import TrialCore

/// A problem found in the configuration, with the file and line it is on.
public struct ConfigurationDiagnostic: Hashable, Sendable, CustomStringConvertible {
  public enum Severity: String, Hashable, Sendable {
    /// Ignored input (an unknown key or section): the rest of the configuration applies.
    case warning
    /// Input that cannot be used (bad syntax, an invalid value, an unreadable file).
    case error
  }

  public var severity: Severity
  public var file: String
  /// 1-based; nil for problems with a whole file.
  public var line: Int?
  public var message: String

  public init(_ severity: Severity, file: String, line: Int?, _ message: String) {
    self.severity = severity
    self.file = file
    self.line = line
    self.message = message
  }

  /// `FILE:LINE: error: message`, as compilers print them.
  public var description: String {
    let location = line.map { "\(file):\($0)" } ?? file
    return "\(location): \(severity.rawValue): \(message)"
  }
}

/// One `Key=Value` line of a configuration file.
struct ConfigurationAssignment: Hashable, Sendable {
  var file: String
  var line: Int
  /// Nil when the assignment comes before any section header.
  var section: String?
  var key: String
  var value: String
}

/// systemd's INI-style syntax (systemd.syntax(7)): `[Section]` headers, `Key=Value`
/// assignments with whitespace around key and value trimmed, comment lines starting with
/// `#` or `;`, and lines ending in a backslash continued on the next line (the backslash
/// becomes a space; comment lines inside a continuation are skipped).
enum ConfigurationSyntax {
  /// Where assignments go while reading.
  enum Context {
    case beforeAnySection
    case section(String)
    /// After a malformed header: assignments are dropped, the header was reported.
    case invalidSection
  }

  struct Parsed {
    var assignments: [ConfigurationAssignment] = []
    /// Section headers, with where each appears.
    var sections: [(name: String, line: Int)] = []
    var diagnostics: [ConfigurationDiagnostic] = []
  }

  /// Reads `text` by bytes, as systemd does: a mark after `#`, `[`, `=` or a backslash is one
  /// `Character` with it, yet the line is still a comment, a header, an assignment or continued.
  /// `"\r\n"` ends a line as `"\n"` does (the `"\r"` is trimmed).
  static func parse(_ text: String, file: String) -> Parsed {
    var parsed = Parsed()
    var section = Context.beforeAnySection
    var pending: (text: ArraySlice<UInt8>, line: Int)?
    let bytes = Array(text.utf8)
    let lines = bytes.split(separator: newline, omittingEmptySubsequences: false)
    for (index, rawLine) in lines.enumerated() {
      let number = index + 1
      var line = trimmedBytes(rawLine)
      let isComment = line.first == UInt8(ascii: "#") || line.first == UInt8(ascii: ";")
      if let start = pending {
        if isComment { continue }
        line = start.text + [UInt8(ascii: " ")] + line
      } else if line.isEmpty || isComment {
        continue
      }
      let firstLine = pending?.line ?? number
      if line.last == UInt8(ascii: "\\") {
        pending = (line.dropLast(), firstLine)
        continue
      }
      pending = nil
      interpret(line, line: firstLine, file: file, section: &section, into: &parsed)
    }
    if let unfinished = pending {
      interpret(unfinished.text, line: unfinished.line, file: file, section: &section, into: &parsed)
    }
    return parsed
  }

  private static let newline = UInt8(ascii: "\n")

  private static func interpret(
    _ bytes: ArraySlice<UInt8>, line number: Int, file: String, section: inout Context,
    into parsed: inout Parsed
  ) {
    let line = text(bytes)
    if bytes.first == UInt8(ascii: "[") {
      guard bytes.last == UInt8(ascii: "]"), bytes.count >= 2 else {
        parsed.diagnostics.append(
          .init(.error, file: file, line: number, "invalid section header \"\(line)\": missing \"]\""))
        section = .invalidSection
        return
      }
      let nameBytes = trimmedBytes(bytes.dropFirst().dropLast())
      guard !nameBytes.isEmpty, !nameBytes.contains(UInt8(ascii: "[")), !nameBytes.contains(UInt8(ascii: "]"))
      else {
        parsed.diagnostics.append(
          .init(.error, file: file, line: number, "invalid section header \"\(line)\""))
        section = .invalidSection
        return
      }
      let name = text(nameBytes)
      section = .section(name)
      parsed.sections.append((name, number))
      return
    }
    guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else {
      parsed.diagnostics.append(
        .init(.error, file: file, line: number, "missing \"=\" in \"\(line)\": expected Key=Value"))
      return
    }
    let key = text(trimmedBytes(bytes[..<equals]))
    let value = text(trimmedBytes(bytes[(equals + 1)...]))
    guard !key.isEmpty else {
      parsed.diagnostics.append(
        .init(.error, file: file, line: number, "missing key name before \"=\" in \"\(line)\""))
      return
    }
    switch section {
    case .invalidSection:
      return
    case .beforeAnySection:
      parsed.assignments.append(
        ConfigurationAssignment(file: file, line: number, section: nil, key: key, value: value))
    case .section(let name):
      parsed.assignments.append(
        ConfigurationAssignment(file: file, line: number, section: name, key: key, value: value))
    }
  }

  /// Without the spaces, tabs and carriage returns at either end.
  static func trimmed(_ text: some StringProtocol) -> String {
    Self.text(trimmedBytes(ArraySlice(text.utf8)))
  }

  private static func trimmedBytes(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let blank: (UInt8) -> Bool = {
      $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
    }
    guard let first = bytes.firstIndex(where: { !blank($0) }),
      let last = bytes.lastIndex(where: { !blank($0) })
    else {
      return []
    }
    return bytes[first...last]
  }

  /// Bytes cut at ASCII bytes of valid UTF-8: valid UTF-8.
  private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}

extension ConfigurationDiagnostic {
  /// The warning for `trials` of `length` with `reminders` when they miss the card networks'
  /// rule (`TrialPlan.meetsCardNetworkRule`), saying what is wrong and what to do; nil when
  /// they meet it. `keys` are the reminders' key and the assignment that silences the warning.
  static func cardNetworkRule(
    _ trials: String, length: Duration, reminders: ReminderSchedule,
    keys: (reminders: String, silence: String), file: String, line: Int?
  ) -> ConfigurationDiagnostic? {
    guard !TrialPlan.meetsCardNetworkRule(length: length, reminders: reminders) else { return nil }
    let notice = TrialPlan.cardNetworkNotice
    let days = notice.components.seconds / 86_400
    let spans = { (offsets: [Duration]) in offsets.map(TimeSpan.format).joined(separator: ", ") }
    let have = reminders.offsets.isEmpty ? "none" : spans(reminders.offsets)
    let advised = (["\(days)d"] + reminders.offsets.filter { $0 < notice }.map(TimeSpan.format))
      .joined(separator: ", ")
    return ConfigurationDiagnostic(
      .warning, file: file, line: line,
      "\(trials) last \(TimeSpan.format(length)) and no reminder comes \(days) days or more before their end "
        + "(\(keys.reminders)=\(have)): Visa (since April 2020) and Mastercard require one for a free trial longer "
        + "than \(days) days that converts to paid; add one (\(keys.reminders)=\(advised)), or set \(keys.silence) "
        + "if these trials do not convert to paid")
  }
}
