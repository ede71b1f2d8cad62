import ArgumentParser
import FoundationEssentials
import TrialConfiguration
import TrialCore
import TrialCtl

/// A configuration directory as an operator writes it, read as `trialwatchd --check-config`
/// reads it (`ConfigurationLoader`), and a consumer's file read as its unit uses it. The input
/// is the main file, then files introduced by a line `==> PATH <==` (as `tail` heads them):
/// `trialwatch.conf.d/NAME`, `plans/NAME`, `consumers/NAME`, or `PATH -> /dev/null` for a file
/// masked by a link to `/dev/null`. What must hold:
///
/// - every diagnostic names a file of the directory, and a line that file has;
/// - the report of `--check-config` exits 1 exactly when there is an error, and says
///   `configuration OK` otherwise;
/// - the files read are those written, the main file first, the drop-ins then the plans in
///   name order; every plan loaded is named after its file, with a valid name, a positive
///   length and reminders;
/// - reading the same files again gives the same configuration and diagnostics;
/// - a consumer's `COMMAND=` and `CONSUME_OPTIONS=` make the command line of its unit
///   (`trialwatchctl consume --create $CONSUME_OPTIONS NAME -- /bin/sh -c COMMAND`), which is
///   accepted or refused as a usage error (exit status 2, which the unit does not restart).
enum ConfigurationTarget {
  static let scratch = Scratch("configuration")

  struct File {
    var path: String
    var bytes: ArraySlice<UInt8>
    var masked = false
  }

  static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
    let files = split(Array(input))
    scratch.clear()
    for file in files {
      if file.masked {
        scratch.link(file.path, to: "/dev/null")
      } else {
        scratch.write(file.path, file.bytes)
      }
    }
    let loader = ConfigurationLoader(mainFile: scratch.path + "/trialwatch.conf", environment: [:])
    let loaded = loader.load()
    try checkDiagnostics(loaded, files)
    try checkReport(loaded)
    try checkFilesRead(loaded, files)
    try checkPlans(loaded)
    try checkSameAgain(loaded, loader.load())
    for file in files where FilePaths.parent(file.path) == "consumers" && !file.masked {
      try checkConsumer(file)
    }
  }

  /// The files the input holds; later ones of the same path replace earlier ones.
  static func split(_ bytes: [UInt8]) -> [File] {
    var files: [File] = []
    var current = File(path: "trialwatch.conf", bytes: [])
    var start = 0
    var lineStart = 0
    func add(_ file: File) {
      files.removeAll { $0.path == file.path }
      files.append(file)
    }
    while lineStart <= bytes.count {
      let end = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
      if let header = header(bytes[lineStart..<end]) {
        current.bytes = bytes[start..<lineStart]
        add(current)
        current = header
        start = min(end + 1, bytes.count)
      }
      lineStart = end + 1
    }
    current.bytes = bytes[start...]
    add(current)
    return files
  }

  /// `==> PATH <==` or `==> PATH -> /dev/null <==`, with a path this target writes.
  static func header(_ line: ArraySlice<UInt8>) -> File? {
    let text = String(decoding: line, as: UTF8.self)
    guard text.hasPrefix("==> "), text.hasSuffix(" <=="), text.utf8.count > 8 else { return nil }
    var path = String(text.dropFirst(4).dropLast(4))
    let masked = path.hasSuffix(" -> /dev/null")
    if masked { path = String(path.dropLast(" -> /dev/null".count)) }
    // By bytes: a slash followed by a combining mark is one Character with it.
    let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    guard parts.count == 2, ["trialwatch.conf.d", "plans", "consumers"].contains(parts[0]) else {
      return path == "trialwatch.conf" ? File(path: path, bytes: [], masked: masked) : nil
    }
    let name = parts[1]
    guard !name.isEmpty, name.utf8.count <= 100, name != ".", name != "..", !name.utf8.contains(0) else {
      return nil
    }
    return File(path: path, bytes: [], masked: masked)
  }

  /// Lines as the configuration's reader counts them.
  static func lineCount(_ bytes: ArraySlice<UInt8>) -> Int {
    String(decoding: bytes, as: UTF8.self)
      .split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).count
  }

  static func checkDiagnostics(_ loaded: LoadedConfiguration, _ files: [File]) throws(FuzzFailure) {
    let directories = ["trialwatch.conf.d", "plans"].map { scratch.path + "/" + $0 }
    for diagnostic in loaded.diagnostics {
      try require(!diagnostic.message.isEmpty, "a diagnostic without a message: \(diagnostic)")
      if directories.contains(diagnostic.file) {
        try require(diagnostic.line == nil, "a diagnostic of a directory has a line: \(diagnostic)")
        continue
      }
      guard let file = files.first(where: { scratch.path + "/" + $0.path == diagnostic.file }) else {
        throw FuzzFailure("a diagnostic names a file that was not written: \(diagnostic)")
      }
      if let line = diagnostic.line {
        let lines = file.masked ? 0 : lineCount(file.bytes)
        try require(
          (1...max(1, lines)).contains(line), "a diagnostic names line \(line) of \(lines): \(diagnostic)")
      }
    }
  }

  static func checkReport(_ loaded: LoadedConfiguration) throws(FuzzFailure) {
    let report = loaded.checkReport
    try require(report.exitCode == (loaded.hasErrors ? 1 : 0), "--check-config exits \(report.exitCode)")
    try require(
      report.text.hasSuffix("configuration OK\n") == !loaded.hasErrors,
      "--check-config says \(report.text.suffix(40)) with \(loaded.errors.count) errors")
    for diagnostic in loaded.diagnostics {
      try require(report.text.contains(diagnostic.description), "--check-config does not say \(diagnostic)")
    }
  }

  static func checkFilesRead(_ loaded: LoadedConfiguration, _ files: [File]) throws(FuzzFailure) {
    // A file is read when it is masked, or UTF-8 text (anything else is reported, not read).
    func readable(_ file: File) -> Bool {
      file.masked || String(validating: file.bytes, as: UTF8.self) != nil
    }
    func read(_ folder: String) -> [String] {
      files.filter {
        // By bytes, as the loader lists a folder.
        let name = FilePaths.lastComponent($0.path).utf8
        return FilePaths.parent($0.path) == folder && name.suffix(5).elementsEqual(".conf".utf8)
          && name.first != UInt8(ascii: ".") && readable($0)
      }
      .map { scratch.path + "/" + $0.path }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
    let main =
      files.contains { $0.path == "trialwatch.conf" && readable($0) }
      ? [scratch.path + "/trialwatch.conf"] : []
    // A plan file whose name cannot name a plan is reported, not read.
    let plans = read("plans").filter { path in
      let name = String(
        decoding: FilePaths.lastComponent(path).utf8.dropLast(".conf".utf8.count), as: UTF8.self)
      return TrialPlan.validateName(name) == nil
    }
    let expected = main + read("trialwatch.conf.d") + plans
    try require(loaded.files == expected, "the files read are \(loaded.files), not \(expected)")
  }

  /// Reading the same files gives the same outcome, and says where it differs.
  static func checkSameAgain(_ first: LoadedConfiguration, _ again: LoadedConfiguration) throws(FuzzFailure) {
    guard first != again else { return }
    try require(
      first.files == again.files, "read again, the files read are \(again.files), not \(first.files)")
    for (one, other) in zip(first.diagnostics, again.diagnostics) where one != other {
      throw FuzzFailure("read again, a diagnostic differs: \(other) instead of \(one)")
    }
    try require(
      first.diagnostics.count == again.diagnostics.count,
      "read again, \(again.diagnostics.count) diagnostics instead of \(first.diagnostics.count)")
    throw FuzzFailure(
      "read again, the configuration differs: \(again.configuration) instead of \(first.configuration)")
  }

  static func checkPlans(_ loaded: LoadedConfiguration) throws(FuzzFailure) {
    for (name, plan) in loaded.configuration.plans {
      try require(plan.name == name, "the plan \(name) is named \(plan.name)")
      try require(TrialPlan.validateName(name) == nil, "a plan has the invalid name \(name)")
      try require(plan.length > .zero, "the plan \(name) has the length \(plan.length)")
      try require(
        plan.reminders.offsets.allSatisfy { $0 > .zero }, "the plan \(name) has a reminder not before its end"
      )
      try require(
        plan.maxPause.map { $0 > .zero } ?? true,
        "the plan \(name) has MaxPause=\(String(describing: plan.maxPause))")
      try require(
        plan.onceFor.map { $0 > .zero } ?? true,
        "the plan \(name) has OnceFor=\(String(describing: plan.onceFor))")
    }
  }

  /// A consumer's file as systemd reads an `EnvironmentFile=` (one `KEY=VALUE` a line, `#` and
  /// `;` comments, a value in quotes), then its unit's command line.
  static func checkConsumer(_ file: File) throws(FuzzFailure) {
    var variables: [String: String] = [:]
    for line in String(decoding: file.bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
      let text = line.trimmingWhitespace()
      guard !text.hasPrefix("#"), !text.hasPrefix(";"), let equals = text.firstIndex(of: "=") else {
        continue
      }
      var value = text[text.index(after: equals)...].trimmingWhitespace()
      if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
        value = value.dropFirst().dropLast()
      }
      variables[String(text[..<equals].trimmingWhitespace())] = String(value)
    }
    guard let command = variables["COMMAND"], !command.isEmpty else { return }
    let name = String(file.path.dropFirst("consumers/".count).prefix { $0 != "." })
    let options = (variables["CONSUME_OPTIONS"] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
    let arguments = ["consume", "--create"] + options + [name, "--", "/bin/sh", "-c", command]
    // Most inputs change another file than the consumer's: its command line was parsed before.
    // Parsing is a pure function of the arguments, and the slowest part of the target.
    if consumerVerdicts.count > 4_096 { consumerVerdicts.removeAll(keepingCapacity: true) }
    let verdict = consumerVerdicts[arguments] ?? consumerVerdict(arguments)
    consumerVerdicts[arguments] = verdict
    if let verdict { throw FuzzFailure(verdict) }
  }

  nonisolated(unsafe) private static var consumerVerdicts: [[String]: String?] = [:]

  /// What is wrong with how the command line `arguments` of a consumer's unit is refused, if
  /// anything.
  private static func consumerVerdict(_ arguments: [String]) -> String? {
    do {
      _ = try TrialwatchCtl.parseAsRoot(arguments)
    } catch let failure as CtlFailure {
      if failure.exitCode != .usage {
        return "consume \(arguments) fails with \(failure.exitCode): \(failure)"
      }
    } catch {
      let code = TrialwatchCtl.exitCode(for: error)
      if code != .validationFailure && code != .success {
        return "consume \(arguments) fails with exit code \(code.rawValue), not a usage error: \(error)"
      }
    }
    return nil
  }
}
