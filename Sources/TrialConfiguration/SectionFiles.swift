/// Files of one section each, one file per named thing beside the main file (`plans/NAME.conf`,
/// `webhooks/NAME.conf`): what reading one is alike for every kind, apart from its keys' values.
enum SectionFiles {
  /// Each `*.conf` file of `directory` (`what` names them in a diagnostic: "plans") whose name
  /// (without `.conf`) `validateName` takes (nil) or refuses (its problem, reported: it cannot
  /// name `thing`, "a plan"), with its text; a masked file (linked to /dev/null) has none. The
  /// files read are added to `files`.
  static func each(
    in directory: String, what: String, thing: String, validateName: (String) -> String?,
    diagnostics: inout [ConfigurationDiagnostic], files: inout [String],
    _ body: (_ name: String, _ file: String, _ text: String?, _ diagnostics: inout [ConfigurationDiagnostic])
      -> Void
  ) {
    for entry in ConfigurationText.confFiles(in: directory, what: what, into: &diagnostics) {
      let file = directory + "/" + entry
      // By bytes: "x\u{600}.conf" ends in ".conf", yet its last five characters are "\u{600}.conf".
      let name = String(decoding: entry.utf8.dropLast(".conf".utf8.count), as: UTF8.self)
      if let problem = validateName(name) {
        diagnostics.append(
          .init(.error, file: file, line: nil, "\"\(name)\" cannot name \(thing): it \(problem)"))
        continue
      }
      switch ConfigurationText.read(file, required: true, into: &diagnostics) {
      case .absent, .unreadable: continue
      case .masked:
        files.append(file)
        body(name, file, nil, &diagnostics)
      case .text(let text):
        files.append(file)
        let before = diagnostics.count
        body(name, file, text, &diagnostics)
        diagnostics[before...].sort { ($0.line ?? 0) < ($1.line ?? 0) }
      }
    }
  }

  /// Reads `text`, a file of the one section `section` (`kind` names such a file in words: "a
  /// plan file"), handing each assignment of a known key to `assign`. Other sections, unknown
  /// keys and assignments outside a section are warnings; a value `assign` refuses is an error
  /// naming the file and line. Returns whether the file had no error, and the line each key was
  /// last assigned on (validly or not). Sections named in `others` are read elsewhere.
  static func read(
    _ text: String, file: String, section: String, keys: [String], kind: String, others: [String] = [],
    diagnostics: inout [ConfigurationDiagnostic],
    assign: (_ key: String, _ value: String, _ line: Int) throws(InvalidValue) -> Void
  ) -> (valid: Bool, assigned: [String: Int]) {
    let parsed = ConfigurationSyntax.parse(text, file: file)
    diagnostics += parsed.diagnostics
    var valid = !parsed.diagnostics.contains { $0.severity == .error }
    for (found, line) in parsed.sections where found != section && !others.contains(found) {
      diagnostics.append(
        .init(
          .warning, file: file, line: line,
          "unknown section [\(found)] in \(kind), its assignments are ignored (\(kind) has [\(section)])"))
    }
    var assigned: [String: Int] = [:]
    for assignment in parsed.assignments {
      let line = assignment.line
      guard let found = assignment.section else {
        diagnostics.append(
          .init(
            .warning, file: file, line: line,
            "assignment \(assignment.key)= outside of any section, ignored (\(kind) has [\(section)])"))
        continue
      }
      guard found == section else { continue }
      guard keys.contains(assignment.key) else {
        var message = "unknown key \"\(assignment.key)\" in [\(section)], ignored"
        if let near = keys.first(where: { $0.lowercased() == assignment.key.lowercased() }) {
          message += " (did you mean \"\(near)\"?)"
        }
        diagnostics.append(.init(.warning, file: file, line: line, message))
        continue
      }
      assigned[assignment.key] = line
      do throws(InvalidValue) {
        try assign(assignment.key, assignment.value, line)
      } catch {
        valid = false
        diagnostics.append(
          .init(
            .error, file: file, line: line,
            "invalid value \"\(assignment.value)\" for \(assignment.key)= in [\(section)]: \(error.reason)"))
      }
    }
    return (valid, assigned)
  }
}
