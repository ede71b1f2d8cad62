import FoundationEssentials
import Glibc
import TrialCore

/// The outcome of loading the configuration: the values, and every problem found.
public struct LoadedConfiguration: Hashable, Sendable {
  /// The configuration with every valid assignment applied; invalid ones leave the value
  /// they would have replaced.
  public var configuration: DaemonConfiguration
  /// Warnings and errors in the order found (file by file, line by line).
  public var diagnostics: [ConfigurationDiagnostic]
  /// The files read, in the order they were applied.
  public var files: [String]

  public var errors: [ConfigurationDiagnostic] { diagnostics.filter { $0.severity == .error } }
  public var warnings: [ConfigurationDiagnostic] { diagnostics.filter { $0.severity == .warning } }
  public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

  /// The text and exit status of `trialwatchd --check-config`: every problem as
  /// `FILE:LINE: severity: message`, then `configuration OK` when there is no error.
  public var checkReport: ConfigurationReport {
    var lines = diagnostics.map(\.description)
    if !hasErrors { lines.append("configuration OK") }
    return ConfigurationReport(text: lines.joined(separator: "\n") + "\n", exitCode: hasErrors ? 1 : 0)
  }
}

/// What `--check-config` prints, and the status it exits with (0 when the configuration
/// has no errors; warnings alone do not fail it).
public struct ConfigurationReport: Hashable, Sendable {
  public var text: String
  public var exitCode: Int32
}

/// Reads the configuration: the main file, then the drop-ins `<main file>.d/*.conf` in
/// file-name order, later assignments overriding earlier ones; an empty assignment
/// (`Key=`) resets a key to its default. A missing main file or drop-in directory is fine:
/// the defaults apply (unless `mainFileRequired`, for a file named on the command line).
/// Then the plan files (`plans/*.conf`) and the webhook endpoints' files (`webhooks/*.conf`)
/// beside the main file, in file-name order. Unknown sections and keys are warnings; invalid
/// values, bad syntax and unreadable files are errors.
public struct ConfigurationLoader: Sendable {
  public var mainFile: String
  public var dropInDirectory: String
  /// Where the plan files are (`PlanFiles`): `plans/` beside the main file.
  public var planDirectory: String
  /// Where the webhook endpoints' files are (`WebhookFiles`): `webhooks/` beside the main file.
  public var webhookDirectory: String
  /// When set, a missing main file is an error (for `--config FILE`).
  public var mainFileRequired: Bool
  /// Supplies `STATE_DIRECTORY` for the default state directory.
  public var environment: [String: String]
  /// Why subjects that are not ASCII cannot be case folded on this host (libunistring cannot be
  /// opened), or nil when they can: plans that fold subjects are warned about. The daemon's
  /// `DaemonOptions` sets it; the default knows of no problem.
  public var unicodeUnavailable: @Sendable () -> String? = { nil }

  public init(
    mainFile: String = DaemonConfiguration.defaultPath, dropInDirectory: String? = nil,
    mainFileRequired: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment
  ) {
    self.mainFile = mainFile
    self.mainFileRequired = mainFileRequired
    self.dropInDirectory = dropInDirectory ?? mainFile + ".d"
    self.planDirectory = Self.planDirectory(beside: mainFile)
    self.webhookDirectory = Self.webhookDirectory(beside: mainFile)
    self.environment = environment
  }

  /// The plan files' folder for the main file `mainFile`: `plans/` in the same folder.
  public static func planDirectory(beside mainFile: String) -> String {
    directory("plans", beside: mainFile)
  }

  /// The webhook endpoints' folder for the main file `mainFile`: `webhooks/` in the same folder.
  public static func webhookDirectory(beside mainFile: String) -> String {
    directory("webhooks", beside: mainFile)
  }

  private static func directory(_ name: String, beside mainFile: String) -> String {
    let parent = FilePaths.parent(mainFile)
    return FilePaths.join(parent.isEmpty ? "." : parent, name)
  }

  public func load() -> LoadedConfiguration {
    let defaults = DaemonConfiguration(environment: environment)
    var state = State(configuration: defaults, defaults: defaults)
    state.read(file: mainFile, required: mainFileRequired)
    for file in dropInFiles(into: &state) {
      state.read(file: file, required: true)
    }
    state.checkCombinations()
    state.configuration.plans = PlanFiles.load(
      directory: planDirectory,
      defaults: TrialDefaults(
        length: state.configuration.defaultLength, reminders: state.configuration.defaultReminders),
      complianceWarnings: state.configuration.complianceWarnings, unicodeUnavailable: unicodeUnavailable,
      diagnostics: &state.diagnostics, files: &state.files)
    state.configuration.webhooks = WebhookFiles.load(
      directory: webhookDirectory, diagnostics: &state.diagnostics, files: &state.files)
    return LoadedConfiguration(
      configuration: state.configuration, diagnostics: state.diagnostics, files: state.files)
  }

  /// The `*.conf` files of the drop-in directory, sorted by name.
  private func dropInFiles(into state: inout State) -> [String] {
    ConfigurationText.confFiles(in: dropInDirectory, what: "drop-ins", into: &state.diagnostics).map {
      dropInDirectory + "/" + $0
    }
  }

  /// Loading in progress.
  private struct State {
    var configuration: DaemonConfiguration
    let defaults: DaemonConfiguration
    var diagnostics: [ConfigurationDiagnostic] = []
    var files: [String] = []
    /// Where each key was last assigned, for checks that span keys.
    var lastAssignment: [String: ConfigurationAssignment] = [:]
    /// Keys whose last assignment was invalid (already reported).
    var invalidKeys: Set<String> = []

    mutating func read(file: String, required: Bool) {
      let text: String
      switch ConfigurationText.read(file, required: required, into: &diagnostics) {
      case .absent, .unreadable: return
      case .masked:
        files.append(file)
        return
      case .text(let read): text = read
      }
      files.append(file)
      let parsed = ConfigurationSyntax.parse(text, file: file)
      let before = diagnostics.count
      diagnostics.append(contentsOf: parsed.diagnostics)
      for (name, line) in parsed.sections where !ConfigurationSchema.sections.contains(name) {
        var message = "unknown section [\(name)], its assignments are ignored"
        if let known = ConfigurationSchema.sections.first(where: { $0.lowercased() == name.lowercased() }) {
          message += " (did you mean [\(known)]?)"
        }
        diagnostics.append(.init(.warning, file: file, line: line, message))
      }
      for assignment in parsed.assignments {
        apply(assignment)
      }
      // This file's problems in line order.
      diagnostics[before...].sort { ($0.line ?? 0) < ($1.line ?? 0) }
    }

    private mutating func apply(_ assignment: ConfigurationAssignment) {
      let file = assignment.file
      let line = assignment.line
      guard let section = assignment.section else {
        diagnostics.append(
          .init(
            .warning, file: file, line: line,
            "assignment \(assignment.key)= outside of any section, ignored (sections: "
              + ConfigurationSchema.sections.map { "[\($0)]" }.joined(separator: ", ") + ")"))
        return
      }
      guard ConfigurationSchema.sections.contains(section) else { return }
      guard let key = ConfigurationSchema.key(section: section, name: assignment.key) else {
        diagnostics.append(
          .init(.warning, file: file, line: line, unknownKeyMessage(assignment.key, section)))
        return
      }
      if assignment.value.isEmpty {
        key.reset(&configuration, defaults)
        lastAssignment[key.name] = nil
        invalidKeys.remove(key.name)
        return
      }
      do {
        try key.apply(&configuration, assignment.value)
        lastAssignment[key.name] = assignment
        invalidKeys.remove(key.name)
      } catch {
        // A value that may hold a secret is not repeated (the message reaches the journal).
        let value = key.echoesValue ? "value \"\(assignment.value)\"" : "value"
        invalidKeys.insert(key.name)
        diagnostics.append(
          .init(
            .error, file: file, line: line,
            "invalid \(value) for \(key.name)= in [\(section)]: \(error.reason)"))
      }
    }

    /// `[Store] Backend=postgresql` needs a valid `[PostgreSQL]` section; `postgreSQL` is set
    /// from it, and only then.
    private mutating func checkStore() {
      configuration.postgreSQL = nil
      guard configuration.storeBackend == .postgresql, let blame = lastAssignment["Backend"] else { return }
      let keys = configuration.postgreSQLKeys
      guard let connection = keys.connection else {
        // An invalid Connection= was reported where it is.
        if !invalidKeys.contains("Connection") {
          diagnostics.append(
            .init(
              .error, file: blame.file, line: blame.line,
              "Backend=postgresql needs Connection= in [PostgreSQL] (a libpq connection string or a "
                + "postgresql:// URI); none is set"))
        }
        return
      }
      let nodeName = keys.nodeName ?? PostgreSQLSettings.defaultNodeName()
      guard PostgreSQLSettings.isValidNodeName(nodeName) else {
        diagnostics.append(
          .init(
            .error, file: blame.file, line: blame.line,
            "Backend=postgresql names this node by its host name, \"\(nodeName)\", which is "
              + ConfigurationSchema.nodeNameRule + "; set NodeName= in [PostgreSQL]"))
        return
      }
      guard !invalidKeys.contains("NodeName"), !invalidKeys.contains("Shards") else { return }
      configuration.postgreSQL = PostgreSQLSettings(
        connection: connection, nodeName: nodeName, shards: keys.shards)
    }

    private func unknownKeyMessage(_ name: String, _ section: String) -> String {
      var message = "unknown key \"\(name)\" in [\(section)], ignored"
      if let near = ConfigurationSchema.keys.first(where: {
        $0.section == section && $0.name.lowercased() == name.lowercased()
      }) {
        message += " (did you mean \"\(near.name)\"?)"
      } else if let elsewhere = ConfigurationSchema.keys.first(where: {
        $0.name.lowercased() == name.lowercased()
      }) {
        message += " (\(elsewhere.name)= belongs in [\(elsewhere.section)])"
      }
      return message
    }

    /// Checks between keys, once every file is applied.
    mutating func checkCombinations() {
      checkStore()
      if configuration.effectiveReservedConnections < configuration.reservedConnections,
        let blame = lastAssignment["ReservedConnections"]
      {
        diagnostics.append(
          .init(
            .warning, file: blame.file, line: blame.line,
            "ReservedConnections=\(configuration.reservedConnections) is more than a quarter of "
              + "MaxConnections=\(configuration.maxConnections): \(configuration.effectiveReservedConnections) "
              + "are reserved"))
      }
      let length = configuration.defaultLength
      if configuration.complianceWarnings,
        let blame = lastAssignment["DefaultReminders"] ?? lastAssignment["DefaultLength"],
        let warning = ConfigurationDiagnostic.cardNetworkRule(
          "trials of the default length", length: length, reminders: configuration.defaultReminders,
          keys: ("DefaultReminders", "[Trials] ComplianceWarnings=no"), file: blame.file, line: blame.line)
      {
        diagnostics.append(warning)
      }
      let tooLong = configuration.defaultReminders.offsets.filter { $0 >= length }
      guard !tooLong.isEmpty,
        let blame = lastAssignment["DefaultReminders"] ?? lastAssignment["DefaultLength"]
      else { return }
      let spans = tooLong.map(TimeSpan.format).joined(separator: ", ")
      let one = tooLong.count == 1
      let (noun, verb, object, subject) =
        one ? ("reminder", "is", "it", "it") : ("reminders", "are", "them", "they")
      diagnostics.append(
        .init(
          .warning, file: blame.file, line: blame.line,
          "\(noun) \(spans) \(verb) not shorter than DefaultLength=\(TimeSpan.format(length)): trials of "
            + "the default length start with \(object) already due, and \(subject) \(verb) skipped"))
    }
  }
}
