import ArgumentParser
import Foundation
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
      SIGTERM stops cleanly. Events go to the journal, one structured entry each; on a \
      terminal they are logged to standard error.

      Configuration: /etc/trialwatch/trialwatch.conf and \
      /etc/trialwatch/trialwatch.conf.d/*.conf (see trialwatch.conf(5)).

      Exit status: 0 on a clean stop or a valid configuration (--check-config), 1 on a \
      failure to start or an invalid configuration, 64 on a usage error.
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

  public init() {}

  public var options: DaemonOptions {
    DaemonOptions(configPath: config, stateDirectory: stateDir, socketPath: socket)
  }

  /// Parses the command line and runs the daemon (or the configuration check). Never returns.
  public static func main(openRepository: @escaping Daemon.RepositoryOpener, services: [any DaemonService])
    -> Never
  {
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
      let report = command.options.load().checkReport
      print(report.text)
      Glibc.exit(report.exitCode)
    }
    let daemon = Daemon(options: command.options, openRepository: openRepository)
    for service in services { daemon.add(service) }
    daemon.run()
  }
}
