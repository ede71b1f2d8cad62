import ArgumentParser
import FoundationEssentials
import Logging
import ProcessMemory
import Systemd
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// `trialwatch-webhooks`: the command line. The one program runs it when started by that name
/// (the installed `/usr/libexec/trialwatch/trialwatch-webhooks` is a link to trialwatchd).
public struct WebhookSenderCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "trialwatch-webhooks",
    abstract: "Posts the webhook messages trialwatchd hands over its control socket.",
    discussion: """
      trialwatchd decides what is due and when, and keeps every outcome; it has no network \
      (PrivateNetwork=yes). This sender makes the HTTP requests: it attaches to the daemon \
      with the ServeWebhooks call, posts each attempt the daemon hands it, signed as Standard \
      Webhooks 1.0 signs them with the secrets of the endpoint's SecretFile=, and reports each \
      outcome with ReportWebhooks. It runs as a systemd service (trialwatch-webhooks.service, \
      Type=notify): READY=1 once attached the first time, STATUS= lines, STOPPING=1.

      A secret file is read again when it changes (a rotation takes effect at the next \
      attempt); one that cannot be read fails the attempt with an error that names the file, \
      never a secret. When the daemon stops or restarts, the sender connects again after a \
      delay doubling from 0.1 s to 5 s; the daemon makes again every attempt whose outcome it \
      did not get. SIGTERM and SIGINT stop taking attempts, let those being made finish \
      (within the endpoint's Timeout=), report them, and exit.

      EXIT STATUS
        0   a clean stop (SIGTERM or SIGINT)
        64  a usage error
      """)

  @Option(
    name: .long,
    help: ArgumentHelp(
      "The daemon's control socket (default: $TRIALWATCH_SOCKET, else \(VarlinkInterfaces.defaultSocketPath)).",
      valueName: "PATH"))
  var socket: String?

  @Option(name: .long, help: ArgumentHelp("The most attempts made at once (1 to 256).", valueName: "N"))
  var workers = 16

  @Option(
    name: .long,
    help: ArgumentHelp(
      "A file of CA certificates to trust instead of the system's (for tests with a CA of their own).",
      valueName: "PATH"))
  var caFile: String?

  @Option(
    name: .long,
    help: ArgumentHelp(
      "Where logs go: auto (the journal when standard error is connected to it, else standard error), "
        + "journal or console.",
      valueName: "TARGET"))
  var logTarget = LogTarget.auto.rawValue

  /// The most workers `--workers` takes.
  public static let maximumWorkers = 256

  public init() {}

  public mutating func validate() throws {
    guard (1...Self.maximumWorkers).contains(workers) else {
      throw ValidationError("--workers \(workers): give 1 to \(Self.maximumWorkers)")
    }
    guard LogTarget(rawValue: logTarget) != nil else {
      throw ValidationError("--log-target \(logTarget): give auto, journal or console")
    }
    if let caFile, caFile.isEmpty { throw ValidationError("--ca-file: give a file") }
  }

  /// The options the sender runs with; `environment` gives `TRIALWATCH_SOCKET`.
  public func options(version: String, environment: [String: String]) -> SenderOptions {
    let socketPath =
      [socket, environment["TRIALWATCH_SOCKET"]].compactMap { $0 }.first { !$0.isEmpty }
      ?? VarlinkInterfaces.defaultSocketPath
    return SenderOptions(
      socketPath: socketPath, workers: workers, caFile: caFile, userAgent: "trialwatch/\(version)")
  }

  /// Parses the command line and runs the sender until SIGTERM or SIGINT; `version` is the
  /// program's (its User-Agent says it). Never returns.
  public static func main(version: String) -> Never {
    let command: WebhookSenderCommand
    do {
      var parsed = try parseAsRoot()
      guard let ours = parsed as? WebhookSenderCommand else {
        // `--help` and `help`: ArgumentParser's own command prints the help.
        try parsed.run()
        Glibc.exit(0)
      }
      command = ours
    } catch {
      exit(withError: error)
    }
    // Before any thread exists: every thread inherits the mask with the stop signals blocked,
    // and allocates from the one arena.
    HeapTrim.useOneArena()
    let stop = StopRequest.onSignals()
    // A peer that closes its end mid-request fails that request, not the process.
    signal(SIGPIPE, SIG_IGN)
    SystemdLogging.bootstrap(
      identifier: "trialwatch-webhooks", target: LogTarget(rawValue: command.logTarget) ?? .auto)
    let options = command.options(version: version, environment: ProcessInfo.processInfo.environment)
    let logger = Logger(label: "trialwatch-webhooks")
    logger.info(
      "starting", metadata: ["socket": "\(options.socketPath)", "workers": "\(options.workers)"])
    let sender = WebhookSender(
      options: options, clock: SystemWallClock(), notifier: SystemdNotifier(), stop: stop, logger: logger)
    sender.run()
    logger.notice("stopped")
    // Everything is reported and the log lines are written (unbuffered): the exit runs no
    // library's clean-up (OpenSSL's atexit handler would free what the worker threads' handles,
    // still alive, point into, and crash).
    Glibc._exit(0)
  }
}
