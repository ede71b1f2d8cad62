import ArgumentParser
import FoundationEssentials
import TrialConfiguration
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// `trialwatchd`: the command line. The executable only hands it how to open the store.
public struct TrialwatchdCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "trialwatchd",
    abstract: "Keeps trial periods and fires their reminder and expiry events exactly once, on time.",
    discussion: """
      Runs in the foreground as a systemd service (Type=notify): READY=1 once the store is \
      loaded and events missed while stopped have fired; SIGHUP reloads the configuration; \
      SIGTERM stops cleanly; a failed write or sync of the store stops it too, with exit \
      status 3, for systemd to start it again. Events go to the journal, one structured entry \
      each; on a terminal they are logged to standard error.

      Configuration: /etc/trialwatch/trialwatch.conf and \
      /etc/trialwatch/trialwatch.conf.d/*.conf (see trialwatch.conf(5)).

      Store maintenance, each in a process of its own and run as root or as the store's \
      user: --backup FILE writes a consistent, compacted copy of the store while the daemon \
      runs; --verify-store checks the store (or a backup FILE) and lists each problem with \
      its keys; --restore FILE puts a backup in place while the daemon is stopped (systemctl \
      stop trialwatch.socket trialwatch-report.socket trialwatch.service), keeping the replaced store file beside it. \
      After a restore, events that fell due since the backup fire late at the next start; \
      events in the backup's ledger never fire again. --import FILE writes the trials and \
      ledger entries of an export (trialwatchctl export > FILE, from another trialwatchd) into \
      the store while the daemon is stopped; it checks the whole file first and changes nothing \
      if any line is wrong. Trials already stored alike, and ledger entries already stored, are \
      skipped, so importing again is harmless. Events in the imported ledger never fire again; \
      entries not yet delivered are delivered, with their ids, at the next start; the other \
      events fire when due.

      EXIT STATUS
        0   a clean stop; a valid configuration (--check-config); a backup, restore or import       done; a store without problems (--verify-store)
        1   a failure to start (a cgroup memory limit below the store's need among them); an invalid configuration; a backup, restore or import that       could not be done (no store, no permission, the store in use, no space)
        2   the store or the backup file is damaged, inconsistent, not a trialwatch store or       of a newer version (--verify-store found problems, --restore refused the file); the       import file is invalid or conflicts with the store (--import changed nothing)
        3   the store failed to write or sync (an I/O error): the daemon wrote nothing more after it and stopped, for systemd to start it again from what is durable on disk (Restart=on-failure)
        64  a usage error
      """,
    version: Daemon.version)

  @Option(
    name: .long, help: ArgumentHelp("Main configuration file (drop-ins in FILE.d/).", valueName: "FILE"))
  var config: String?

  @Option(
    name: .long, help: ArgumentHelp("Directory of the store (overrides StateDirectory=).", valueName: "DIR"))
  var stateDir: String?

  @Option(name: .long, help: ArgumentHelp("Control socket to bind (overrides Socket=).", valueName: "PATH"))
  var socket: String?

  @Flag(name: .long, help: "Check the configuration, print each problem or \"configuration OK\", and exit.")
  var checkConfig = false

  @Option(
    name: .long,
    help: ArgumentHelp(
      "Write a consistent, compacted copy of the store to FILE, print its size and counts, and exit. "
        + "Works while the daemon runs; FILE appears only once complete.",
      valueName: "FILE"))
  var backup: String?

  @Option(
    name: .long,
    help: ArgumentHelp(
      "Replace the store with the backup FILE and exit. The daemon must be stopped; the replaced store "
        + "file is kept beside it (the output says where). A damaged file, or one that is not a trialwatch "
        + "store this version reads, is refused.",
      valueName: "FILE"))
  var restore: String?

  @Option(
    name: .customLong("import"),
    help: ArgumentHelp(
      "Write the trials and ledger entries of FILE (JSON Lines from trialwatchctl export) into the store, "
        + "print what was imported and skipped, and exit. The daemon must be stopped. The whole file is "
        + "checked first: a line that is invalid, or a trial that differs from the stored one of its id or "
        + "whose subject has another active trial, is refused with its line number, and nothing is written.",
      valueName: "FILE"))
  var importFile: String?

  @Flag(
    name: .long,
    help: ArgumentHelp(
      "Check the store (or FILE, a backup) for damage and inconsistencies, print each problem with its keys "
        + "and a summary, and exit: 0 without problems, 2 with. Read-only; works while the daemon runs."))
  var verifyStore = false

  @Argument(
    help: ArgumentHelp(
      "With --verify-store: a backup file (or a store directory) to check instead of the store.",
      valueName: "FILE"))
  var file: String?

  public init() {}

  public mutating func validate() throws {
    let modes = [checkConfig, backup != nil, restore != nil, verifyStore, importFile != nil].filter { $0 }
      .count
    guard modes <= 1 else {
      throw ValidationError(
        "--check-config, --backup, --restore, --verify-store and --import exclude each other")
    }
    if let file, !verifyStore {
      throw ValidationError("unexpected argument \"\(file)\": only --verify-store takes a FILE")
    }
  }

  public var options: DaemonOptions {
    DaemonOptions(configPath: config, stateDirectory: stateDir, socketPath: socket)
  }

  /// Parses the command line and runs the daemon (or the configuration check). Never returns.
  public static func main(stores: StoreBackends, services: [any DaemonService]) -> Never {
    let command: TrialwatchdCommand
    do {
      var parsed = try parseAsRoot()
      guard let ours = parsed as? TrialwatchdCommand else {
        // `--help` and `help`: ArgumentParser's own command prints the help.
        try parsed.run()
        Glibc.exit(0)
      }
      command = ours
    } catch {
      exit(withError: error)
    }
    if command.checkConfig {
      var loaded = command.options.load()
      // The webhooks' secret files are read here, not at the daemon's start.
      loaded.checkSecretFiles()
      var report = loaded.checkReport
      // A fleet node's database is checked too: reachable, the password found, the schema
      // one this daemon can use.
      if !loaded.hasErrors, let settings = loaded.configuration.postgreSQL {
        let database = stores.check(settings)
        report.text += database.text
        if !database.ok { report.exitCode = 1 }
      }
      print(report.text)
      Glibc.exit(report.exitCode)
    }
    if let status = command.runStoreCommand(stores: stores) { Glibc.exit(status) }
    let daemon = Daemon(options: command.options, stores: stores)
    for service in services { daemon.add(service) }
    daemon.run()
  }
}

extension TrialwatchdCommand {
  /// Runs `--backup`, `--restore`, `--verify-store` or `--import`, if asked; returns the exit
  /// status. `stores` opens the configured store, for an import.
  func runStoreCommand(stores: StoreBackends) -> Int32? {
    let commands = StoreCommands()
    if verifyStore, let file { return commands.verify(directory: nil, path: file) }
    guard verifyStore || backup != nil || restore != nil || importFile != nil else { return nil }
    // The configuration only says where the store is: --state-dir makes it unneeded.
    var directory = stateDir ?? ""
    if stateDir == nil {
      let loaded = options.load()
      for diagnostic in loaded.diagnostics { commands.errors("\(diagnostic)") }
      if loaded.hasErrors {
        commands.errors(
          "the configuration has errors (trialwatchd --check-config lists them); give --state-dir")
        return StoreCommands.ExitStatus.failure
      }
      directory = loaded.configuration.stateDirectory
    }
    if let backup { return commands.backup(directory: directory, to: backup) }
    if let restore { return commands.restore(from: restore, into: directory, now: SystemWallClock().now()) }
    if let importFile {
      // Into the configured store: a fleet's database, or the store of one host.
      let configuration = options.load().configuration
      return commands.importTrials(
        from: importFile, open: { try stores.open(configuration, directory: directory) })
    }
    return commands.verify(directory: directory)
  }
}
