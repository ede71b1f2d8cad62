import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// What the commands run with: the environment, the outputs, the clock and the reader's time
/// zone and locale. Injected, so that tests run commands without a terminal.
public struct CtlEnvironment {
  public var variables: [String: String]
  public var output: any TextOutput
  public var errors: any TextOutput
  public var clock: any WallClock
  public var timeZone: ReaderTimeZone
  public var locale: ReaderLocale

  public init(
    variables: [String: String], output: any TextOutput, errors: any TextOutput, clock: any WallClock,
    timeZone: ReaderTimeZone, locale: ReaderLocale
  ) {
    self.variables = variables
    self.output = output
    self.errors = errors
    self.clock = clock
    self.timeZone = timeZone
    self.locale = locale
  }

  /// The process's own: its environment, standard output and error, the system clock, the
  /// time zone `TZ` names (as glibc reads it; unset: the system's) and the locale named by
  /// `LC_ALL`, `LC_TIME` or `LANG`.
  public static func current() -> CtlEnvironment {
    let variables = ProcessInfo.processInfo.environment
    return CtlEnvironment(
      variables: variables, output: FileOutput.standardOutput, errors: FileOutput.standardError,
      clock: SystemWallClock(), timeZone: .reader(variables), locale: readerLocale(variables))
  }

  /// The locale the POSIX variables name (`de_DE.UTF-8` is read as `de_DE`); the C and POSIX
  /// locales, and locales trialwatchctl does not know, read as `en_US_POSIX`
  /// (`ReaderLocale`).
  public static func readerLocale(_ variables: [String: String]) -> ReaderLocale {
    .reader(variables)
  }

  /// The socket: `--socket`, else `TRIALWATCH_SOCKET`, else the systemd default.
  func socketPath(_ option: String?) -> String {
    Self.socketPath(option, variables: variables)
  }

  static func socketPath(_ option: String?, variables: [String: String]) -> String {
    if let option, !option.isEmpty { return option }
    if let variable = variables["TRIALWATCH_SOCKET"], !variable.isEmpty { return variable }
    return VarlinkInterfaces.defaultSocketPath
  }
}

/// How `trialwatchctl` ends.
public enum CtlExitCode: Int32, Sendable, CaseIterable {
  case success = 0
  case failure = 1
  case usage = 2
  case notFound = 3
  case permissionDenied = 4
  case unreachable = 5
  case storeUnavailable = 6
  /// An extension refused by a limit of its trial's plan (`ExtensionRefused`).
  case extensionRefused = 7
}

/// A failure with the message to print and the exit code to end with.
public struct CtlFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  public var exitCode: CtlExitCode

  public init(_ message: String, exitCode: CtlExitCode) {
    self.message = message
    self.exitCode = exitCode
  }

  public var description: String { message }

  /// The failure a client error means, with the exit code documented in `--help`.
  public init(_ error: VarlinkClientError) {
    let hint = "Is the daemon running? Check with: systemctl status trialwatch"
    if error.isUnreachable {
      if error.errno == EACCES || error.errno == EPERM {
        self.init(
          "permission denied connecting to the trialwatch daemon at \(error.path): "
            + "only members of its socket's "
            + "group may connect", exitCode: .permissionDenied)
      } else {
        self.init("cannot reach the trialwatch daemon: \(error.description)\n\(hint)", exitCode: .unreachable)
      }
      return
    }
    guard let remote = error.remoteError else {
      if error.kind == .connectionLost {
        self.init(
          "lost the connection to the trialwatch daemon: \(error.description)\n\(hint)",
          exitCode: .unreachable)
      } else {
        self.init(error.description, exitCode: .failure)
      }
      return
    }
    self.init(remote)
  }

  /// What an operator does about a store that cannot take writes, by its reason.
  static func storeHint(_ reason: String?) -> String {
    switch reason.flatMap(StoreFaultReason.init(rawValue:)) {
    case .diskFull:
      "Free space on the state directory's file system; writes resume by themselves "
        + "(check: trialwatchctl daemon-status)"
    case .ioError:
      "The disk failed; the daemon restarts from what is durable (check: journalctl -u trialwatch)"
    case .databaseUnreachable, .databaseReadOnly:
      "The fleet's PostgreSQL cannot take writes now; retry once it (or its promoted standby) does"
    case nil: "Check: journalctl -u trialwatch"
    }
  }

  /// The failure an error the daemon replied with means.
  public init(_ remote: ControlError) {
    switch remote.name {
    case ControlError.Name.trialNotFound, ControlError.Name.consumerNotFound, ControlError.Name.planNotFound,
      ControlError.Name.webhookNotFound, ControlError.Name.noSuchMetric:
      self.init(remote.description, exitCode: .notFound)
    case ControlError.Name.cursorNotFound:
      self.init(
        remote.description
          + "\nThe event log's cursors: trialwatchctl event-log",
        exitCode: .notFound)
    case ControlError.Name.eventsPruned:
      let resume = remote.parameters.resumeAfter ?? "?"
      self.init(
        remote.description + "\nTo read from the oldest event kept, pass --after \(resume)",
        exitCode: .failure)
    case ControlError.Name.cursorGeneration:
      let resume = remote.parameters.resumeAfter ?? "?"
      self.init(
        remote.description + "\nTo go on in the log as it is now, pass --after \(resume)", exitCode: .failure)
    case ControlError.Name.trialAlreadyUsed:
      let grant = "trialwatchctl grant-again SUBJECT --plan \(remote.parameters.plan ?? "PLAN")"
      self.init(
        remote.description
          + (remote.parameters.availableAt.map { "\nTo let the subject start one before \($0): " + grant }
            ?? "\nTo let the subject start one again: " + grant),
        exitCode: .failure)
    case ControlError.Name.permissionDenied: self.init(remote.description, exitCode: .permissionDenied)
    case ControlError.Name.storeUnavailable:
      self.init(
        remote.description + "\n" + Self.storeHint(remote.parameters.reason), exitCode: .storeUnavailable)
    case ControlError.Name.invalidParameter: self.init(remote.description, exitCode: .usage)
    case ControlError.Name.extensionRefused:
      let plan = remote.parameters.plan ?? "PLAN"
      self.init(
        remote.description
          + "\nNothing was changed. The limits are MaxExtensions= and MaxLength= of the plan (trialwatchctl plans "
          + "shows them; plans/\(plan).conf sets them)", exitCode: .extensionRefused)
    default: self.init(remote.description, exitCode: .failure)
    }
  }
}

/// `trialwatchctl`: the command line of the trialwatch daemon.
public struct TrialwatchCtl: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "trialwatchctl",
    abstract:
      "Start, query, extend, pause and end trials kept by the trialwatch daemon, and act on their events.",
    discussion: """
      Talks to trialwatchd over its Varlink socket: --socket, else $TRIALWATCH_SOCKET, else \
      \(VarlinkInterfaces.defaultSocketPath). Reading needs access to the socket; starting, extending, \
      pausing, resuming and ending trials, creating, removing and acknowledging for consumers, and \
      enabling, replaying and testing webhook endpoints, also need root, the daemon's user or its control \
      group.

      Every event the daemon takes is logged with a cursor: watch --after resumes after one, and a \
      consumer is a named position in the log that consume moves on as its command handles each event.

      Spans use systemd's syntax (5d, 36h, 1d 12h, 90s); times are RFC 3339 (2025-03-01T12:00:00Z). \
      Human output shows dates in your time zone (TZ, read as glibc reads it; unset: /etc/localtime) \
      and locale (LC_ALL, LC_TIME or LANG; a locale trialwatchctl does not support reads as \
      en_US_POSIX); --json prints the daemon's replies, one JSON object per line.

      EXIT STATUS
        0  success
        1  failure: the daemon refused the request (e.g. the trial has ended); a webhook test failed
        2  usage: invalid arguments or parameters
        3  not found: no such trial, consumer, cursor, plan, webhook endpoint or token
        4  permission denied
        5  daemon unreachable (check: systemctl status trialwatch)
        6  store unavailable: a full or failing disk, a fleet's database unreachable
        7  extension refused: beyond the plan's MaxExtensions= or MaxLength=
      """,
    subcommands: [
      Start.self, Status.self, List.self, Extend.self, Pause.self, Resume.self, Cancel.self, Uncancel.self,
      End.self, Plan.self,
      Plans.self,
      GrantAgain.self, Stats.self,
      Simulate.self,
      Watch.self, DaemonStatus.self, Metrics.self, Fleet.self, Export.self, EventLog.self, Consumers.self,
      ConsumerCommand.self, Consume.self, Webhooks.self, Http.self,
    ])

  public init() {}

  /// Parses `arguments` (without the program name), runs the command and returns the exit
  /// status. Never calls `exit`.
  /// The process's entry: runs the command line with the process's own environment. Signals
  /// blocked by the parent are unblocked first (a mask survives `exec`), so that SIGTERM and
  /// SIGINT end the process, `watch` included, as they should.
  public static func runProcess() -> Int32 {
    var none = sigset_t()
    sigemptyset(&none)
    sigprocmask(SIG_SETMASK, &none, nil)
    return main(arguments: Array(CommandLine.arguments.dropFirst()), environment: .current())
  }

  public static func main(arguments: [String], environment: CtlEnvironment) -> Int32 {
    do {
      var command = try parseAsRoot(arguments)
      guard let runnable = command as? any CtlCommand else {
        // The built-in help command, or the root command alone (which asks for help).
        try command.run()
        return CtlExitCode.success.rawValue
      }
      try runnable.run(in: environment)
      return CtlExitCode.success.rawValue
    } catch let failure as CtlFailure {
      environment.errors.write(line: "trialwatchctl: \(failure.message)")
      return failure.exitCode.rawValue
    } catch let error as VarlinkClientError {
      let failure = CtlFailure(error)
      environment.errors.write(line: "trialwatchctl: \(failure.message)")
      return failure.exitCode.rawValue
    } catch {
      let code = exitCode(for: error)
      let message = fullMessage(for: error)
      if code == .success {
        environment.output.write(line: message)
        return CtlExitCode.success.rawValue
      }
      environment.errors.write(line: message)
      return code == .validationFailure ? CtlExitCode.usage.rawValue : CtlExitCode.failure.rawValue
    }
  }
}
