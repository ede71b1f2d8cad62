import ArgumentParser
import TrialControl
import TrialCore

/// A subcommand, run with an injected environment.
protocol CtlCommand {
  func run(in environment: CtlEnvironment) throws
}

/// A subcommand that talks to the daemon: it runs with a session on the socket its global
/// options name.
protocol SessionCommand: CtlCommand {
  var global: GlobalOptions { get }
  func run(_ session: Session) throws
}

extension SessionCommand {
  func run(in environment: CtlEnvironment) throws {
    try run(try Session(global, environment))
  }
}

/// The options every subcommand takes.
struct GlobalOptions: ParsableArguments {
  @Option(
    name: .long,
    help: ArgumentHelp(
      "The daemon's socket (default: $TRIALWATCH_SOCKET, else \(VarlinkInterfaces.defaultSocketPath)).",
      valueName: "path"),
    completion: .file())
  var socket: String?

  @Flag(name: .long, help: "Print the daemon's replies as JSON, one object per line.")
  var json = false
}

/// One connection to the daemon, with the presenter for human output.
struct Session {
  let environment: CtlEnvironment
  let json: Bool
  let client: VarlinkClient
  let presenter: TrialPresenter

  init(_ options: GlobalOptions, _ environment: CtlEnvironment) throws {
    self.environment = environment
    self.json = options.json
    do {
      client = try VarlinkClient(path: environment.socketPath(options.socket))
    } catch {
      throw CtlFailure(error)
    }
    let view = TerminalView(output: environment.output, notices: environment.errors)
    presenter = TrialPresenter(
      output: view, clock: environment.clock, timeZone: environment.timeZone, locale: environment.locale)
  }

  /// Calls a method; with `--json`, prints the reply.
  func call<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P) throws -> R {
    let reply = try quietly(method, parameters)
    if json { environment.output.write(line: WireCoding.text(reply)) }
    return reply
  }

  /// Calls a method and shows its reply with `present`; with `--json`, prints the reply instead.
  func show<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P, _ present: (TrialPresenter, R) -> Void)
    throws
  {
    let reply = try call(method, parameters)
    if !json { present(presenter, reply) }
  }

  /// Calls a method that replies with a trial, and shows the trial.
  func showTrial<P>(_ method: VarlinkMethod<P, TrialReply>, _ parameters: P) throws {
    try show(method, parameters) { $0.present(trial: $1.trial) }
  }

  /// Calls a method that replies with a consumer, and shows the consumer.
  func showConsumer<P>(_ method: VarlinkMethod<P, ConsumerReply>, _ parameters: P) throws {
    try show(method, parameters) { $0.present(consumer: $1.consumer) }
  }

  /// The trial a command names (see `TrialArgument`): an id as given, else the subject's
  /// trial (its active one, else its most recent), looked up without printing the reply.
  func trialID(_ argument: TrialArgument) throws -> TrialID {
    switch try argument.target() {
    case .id(let id): return id
    case .subject(let subject):
      return try quietly(Trials.getTrial, GetTrialParameters(subject: subject)).trial.id
    }
  }

  /// Calls a method without printing its reply, even with `--json`.
  func quietly<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P) throws -> R {
    do {
      return try client.call(method, parameters)
    } catch {
      throw CtlFailure(error)
    }
  }
}
