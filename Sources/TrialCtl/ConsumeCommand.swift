import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

struct Consume: ParsableCommand, CtlCommand {
  static let configuration = CommandConfiguration(
    abstract: "Run a command once per event for a consumer, acknowledging each event it handles.",
    discussion: """
      Reads the consumer's position from the daemon, watches every event logged after it, and runs \
      COMMAND once per event, in log order. The command gets the event as one line of JSON on its \
      standard input (the Event object of the Watch reply) and in its environment EVENT_ID, EVENT_KIND \
      (reminder or expiry), EVENT_STATE (fired or skipped), EVENT_CURSOR, EVENT_DUE, EVENT_TAKEN, \
      EVENT_LATENESS and EVENT_LATENESS_USEC (empty and 0 when on time), EVENT_OFFSET (a reminder's span \
      before the end), EVENT_REASON (why it was skipped), EVENT_ATTEMPT (1 on the first run), TRIAL_ID, \
      TRIAL_SUBJECT, TRIAL_REVISION, TRIAL_END, TRIAL_PLAN (the trial's plan, if any), TRIAL_OUTCOME \
      (cancelled, on the expiry of a trial cancelled at its end), TRIAL_LABEL_<KEY> \
      for each label of the trial as the event \
      was taken (its key upper-cased) and TRIALWATCH_CONSUMER, besides consume's own environment. \
      Times are RFC 3339.

      Exit status 0 acknowledges the event: the daemon moves the consumer's position to it. Any other \
      status, death by a signal, or running longer than --timeout (the command is then sent SIGTERM, and \
      SIGKILL after --kill-after) is a failure: the same event is run again after a delay that doubles \
      from --retry-initial up to --retry-max, and no later event runs before it succeeds. Each failure is \
      logged on standard error with the event id, the attempt and the next delay.

      Each event's command runs at least once, and more than once when consume is killed after the \
      command succeeded but before its acknowledgement reached the daemon: use EVENT_ID to make the \
      command idempotent. Each event is acknowledged once. When the daemon goes away, consume connects \
      again with the same back-off and resumes after the position the daemon keeps. When events were \
      pruned before the consumer acknowledged them (MaxRetention=), it says so loudly and goes on from the \
      position the daemon moved it to.

      SIGTERM or SIGINT stops it: a running command is sent SIGTERM (SIGKILL after --kill-after), an event \
      whose command did not exit with 0 is not acknowledged, and consume exits with 0. With --json, each \
      acknowledgement's reply is printed on standard output.

      Example: trialwatchctl consume mailer --create -- /usr/local/bin/notify-mail
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var consumer: ConsumerName
  @Flag(help: "Create the consumer when it does not exist (by default at the newest event).")
  var create = false
  @Option(
    help: ArgumentHelp(
      "With --create: a new consumer handles every event after this cursor.", valueName: "cursor"))
  var after: String?
  @Flag(
    name: .customLong("from-oldest"), help: "With --create: a new consumer handles every event the log keeps."
  )
  var fromOldest = false
  @Option(help: ArgumentHelp("Stop a command that runs longer than this.", valueName: "span"))
  var timeout = "5min"
  @Option(
    name: .customLong("kill-after"),
    help: ArgumentHelp("Send SIGKILL to a command this long after SIGTERM.", valueName: "span"))
  var killAfter = "10s"
  @Option(
    name: .customLong("retry-initial"),
    help: ArgumentHelp("The first delay before an event's command runs again.", valueName: "span"))
  var retryInitial = "1s"
  @Option(
    name: .customLong("retry-max"),
    help: ArgumentHelp("The longest delay between attempts.", valueName: "span"))
  var retryMax = "10min"
  @Argument(
    parsing: .postTerminator,
    help: ArgumentHelp("The command to run per event, and its arguments, after --.", valueName: "command"))
  var command: [String] = []

  /// What the options say, checked.
  struct Options: Hashable {
    var settings: ConsumeLoop.Settings
    var timeout: Duration
    var killAfter: Duration
  }

  func validate() throws {
    _ = try options()
  }

  func options() throws -> Options {
    guard !command.isEmpty else {
      throw ValidationError(
        "give the command to run after --: trialwatchctl consume NAME -- COMMAND [ARGS...]")
    }
    let start = try Arguments.consumerStart(after: after, fromOldest: fromOldest, creating: create)
    let initial = try Arguments.span(retryInitial, option: "--retry-initial")
    let maximum = try Arguments.span(retryMax, option: "--retry-max")
    guard maximum >= initial else {
      throw ValidationError("--retry-max: must be at least --retry-initial (\(retryInitial))")
    }
    return Options(
      settings: ConsumeLoop.Settings(
        name: consumer.name, create: create ? start : nil, retryInitial: initial, retryMaximum: maximum),
      timeout: try Arguments.span(timeout, option: "--timeout"),
      killAfter: try Arguments.span(killAfter, option: "--kill-after"))
  }

  func run(in environment: CtlEnvironment) throws {
    let options = try options()
    // A command that closes its input early must not end consume.
    signal(SIGPIPE, SIG_IGN)
    let stop = StopSignal.install()
    let runner = SpawnedCommandRunner(
      arguments: command, environment: environment.variables, consumer: consumer.name,
      timeout: options.timeout, grace: options.killAfter)
    stop.onStop { runner.terminate() }
    let link = DaemonConsumerLink(path: environment.socketPath(global.socket), interrupt: stop.descriptor)
    let json = global.json
    let loop = ConsumeLoop(
      settings: options.settings, link: link, runner: runner, waiting: stop,
      log: { environment.errors.write(line: $0) },
      acknowledged: { consumer in
        if json { environment.output.write(line: WireCoding.text(ConsumerReply(consumer: consumer))) }
      })
    switch loop.run() {
    case .stopped: environment.errors.write(line: "stopped on request")
    case .failed(let failure): throw failure
    }
  }
}
