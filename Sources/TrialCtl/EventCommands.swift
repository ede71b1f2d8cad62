import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

// The event log and its consumers: watch (with --after), event-log, consumers and consumer.

struct Watch: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Print events as they are taken, until interrupted.",
    discussion: """
      Each line starts with the event's cursor, its place in the daemon's event log. With --after, every \
      event logged after that cursor is printed first, then the watch goes on live, with no gap and no \
      repeat: pass the last cursor a watch printed to resume where it stopped. Without --after, only events \
      taken from now on are printed.

      A cursor whose events were pruned from the log (Retention=) is refused, naming the oldest one kept \
      (exit status 1); so is a cursor beyond the newest event (exit status 3).

      Example: trialwatchctl watch --after 00000000000004d2 --json | jq .event.subject
      """)

  @OptionGroup var global: GlobalOptions
  @Option(
    help: ArgumentHelp(
      "Print every event logged after this cursor first, then go on live.", valueName: "cursor"))
  var after: String?

  func validate() throws {
    _ = try parameters()
  }

  func parameters() throws -> WatchParameters {
    WatchParameters(after: try after.map { try Arguments.cursor($0, "--after") })
  }

  func run(_ session: Session) throws {
    let parameters = try parameters()
    do {
      try session.client.stream(Trials.watch, parameters) { reply in
        guard let event = reply.event else {
          session.presenter.presentWatchStarted()
          return true
        }
        if session.json {
          session.environment.output.write(line: WireCoding.text(reply))
        } else {
          session.presenter.present(watchedEvent: event)
        }
        return true
      }
    } catch let error as VarlinkClientError {
      throw CtlFailure(error)
    }
  }
}

struct EventLog: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "event-log",
    abstract: "Show where the event log stands: newest and oldest cursor, events kept, retention.",
    discussion: """
      The daemon logs every event it takes, fired or skipped, in the order taken, each with a cursor of 16 \
      hexadecimal digits (text order is log order). Events are pruned once older than Retention= and \
      acknowledged by every consumer, or once older than MaxRetention= in any case.

      Example: trialwatchctl event-log
      """)

  @OptionGroup var global: GlobalOptions

  func run(_ session: Session) throws {
    try session.show(Trials.getEventLog, NoParameters()) { $0.present(eventLog: $1.log) }
  }
}

struct Consumers: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the consumers: position, lag, events lost and last acknowledgement.",
    discussion: """
      A consumer is a named reader of the event log whose position the daemon keeps: the cursor of the last \
      event it acknowledged. LAG counts the events logged after it; LOST those pruned before it \
      acknowledged them (MaxRetention=).

      Example: trialwatchctl consumers
      """)

  @OptionGroup var global: GlobalOptions

  func run(_ session: Session) throws {
    try session.show(Trials.listConsumers, NoParameters()) { $0.present(consumers: $1.consumers) }
  }
}

/// The consumer NAME argument.
struct ConsumerName: ParsableArguments {
  @Argument(
    help: ArgumentHelp(
      "The consumer's name: 1 to 100 letters, digits and -_.@: starting with a letter or digit.",
      valueName: "name"))
  var name: String

  func validate() throws {
    if let problem = ConsumerRecord.validateName(name) {
      throw ValidationError("NAME: the consumer name \"\(name)\" \(problem)")
    }
  }
}

struct ConsumerCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "consumer",
    abstract: "Create, show, remove a consumer, or acknowledge an event for it.",
    subcommands: [ConsumerCreate.self, ConsumerShow.self, ConsumerRemove.self, ConsumerAcknowledge.self])
}

struct ConsumerCreate: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "create",
    abstract: "Create a consumer of the event log.",
    discussion: """
      It handles every event after its position: by default the newest event, so only events taken from \
      now on; --from-oldest starts from the oldest event the log keeps, --after from a cursor. From then on, \
      the log keeps events until the consumer acknowledges them (up to MaxRetention=). Needs the rights of \
      a change.

      Example: trialwatchctl consumer create mailer --from-oldest
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var consumer: ConsumerName
  @Option(help: ArgumentHelp("Handle every event logged after this cursor.", valueName: "cursor"))
  var after: String?
  @Flag(name: .customLong("from-oldest"), help: "Handle every event the log keeps.")
  var fromOldest = false

  func validate() throws {
    _ = try start()
  }

  func start() throws -> ConsumerStart {
    try Arguments.consumerStart(after: after, fromOldest: fromOldest)
  }

  func run(_ session: Session) throws {
    let after = try start().cursor { try session.quietly(Trials.getEventLog, NoParameters()).log.start }
    try session.showConsumer(
      Trials.createConsumer, CreateConsumerParameters(name: consumer.name, after: after))
  }
}

struct ConsumerShow: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "show",
    abstract: "Show one consumer: position, lag, events lost, last acknowledgement.",
    discussion: "Example: trialwatchctl consumer show mailer")

  @OptionGroup var global: GlobalOptions
  @OptionGroup var consumer: ConsumerName

  func run(_ session: Session) throws {
    try session.showConsumer(Trials.getConsumer, ConsumerNameParameters(name: consumer.name))
  }
}

struct ConsumerRemove: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "remove",
    abstract: "Remove a consumer; the log no longer keeps events for it.",
    discussion: """
      Stop its consume first (systemctl stop trialwatch-consumer@NAME): a consume whose consumer is removed \
      ends with exit status 3. Needs the rights of a change.

      Example: trialwatchctl consumer remove mailer
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var consumer: ConsumerName

  func run(_ session: Session) throws {
    try session.show(Trials.removeConsumer, ConsumerNameParameters(name: consumer.name)) { presenter, _ in
      presenter.presentRemoved(consumer: consumer.name)
    }
  }
}

struct ConsumerAcknowledge: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "ack",
    abstract: "Acknowledge an event for a consumer: move its position to the event's cursor.",
    discussion: """
      For scripts that read events themselves (watch --after POSITION --json). The position never moves \
      back: a cursor at or before it changes nothing. Needs the rights of a change.

      Example: trialwatchctl consumer ack mailer 00000000000004d2
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var consumer: ConsumerName
  @Argument(help: ArgumentHelp("The cursor of the event handled.", valueName: "cursor")) var cursor: String

  func validate() throws {
    _ = try Arguments.cursor(cursor, "CURSOR")
  }

  func run(_ session: Session) throws {
    let parameters = AcknowledgeEventParameters(
      consumer: consumer.name, cursor: try Arguments.cursor(cursor, "CURSOR"))
    try session.showConsumer(Trials.acknowledgeEvent, parameters)
  }
}
