import ArgumentParser
import FoundationEssentials
import TrialConfiguration
import TrialControl
import TrialCore

// The webhook endpoints: webhooks (list), show, attempts, enable, replay, test and secret.

struct Webhooks: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "webhooks",
    abstract: "List the webhook endpoints; show, enable, replay or test one, or rotate its secret.",
    subcommands: [
      WebhooksList.self, WebhookShow.self, WebhookAttempts.self, WebhookEnable.self, WebhookReplay.self,
      WebhookTest.self, WebhookSecretCommand.self,
    ],
    defaultSubcommand: WebhooksList.self)
}

struct WebhooksList: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the webhook endpoints: state, last attempt, backlog, oldest pending, next attempt.",
    discussion: """
      What trialwatchctl webhooks alone does. An endpoint is a file \(ConfigurationDocumentation.webhookDirectory)\
      /NAME.conf, read when the daemon starts and at systemctl reload trialwatch; the daemon posts it the \
      events it wants, signed, through the webhook sender. STATE is active, failing (its last attempts \
      failed; each event is tried again on the endpoint's RetrySchedule=) or disabled, with why: gone (the \
      receiver answered 410) or failing (nothing delivered for DisableAfter=). LAST is the last attempt's \
      HTTP status or error and how long ago it was made, BACKLOG the events waiting, OLDEST the age of the \
      oldest of them, NEXT when the next attempt falls due.

      Example: trialwatchctl webhooks
      """)

  @OptionGroup var global: GlobalOptions

  func run(_ session: Session) throws {
    try session.show(Trials.listWebhooks, NoParameters()) {
      $0.present(webhooks: $1.endpoints, directory: ConfigurationDocumentation.webhookDirectory)
    }
  }
}

/// The endpoint NAME argument, completed from the daemon's endpoints.
struct WebhookName: ParsableArguments {
  @Argument(
    help: ArgumentHelp("The endpoint's name: its file's, webhooks/NAME.conf.", valueName: "name"),
    completion: WebhookCompletion.kind)
  var name: String

  func validate() throws {
    if let problem = TrialPlan.validateName(name) {
      throw ValidationError("NAME: the webhook endpoint name \"\(name)\" \(problem)")
    }
  }
}

struct WebhookShow: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "show",
    abstract: "Show one webhook endpoint: state, last attempt, position, lag, backlog, next attempt.",
    discussion: "Example: trialwatchctl webhooks show billing")

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName

  func run(_ session: Session) throws {
    let found = try session.webhook(named: endpoint.name)
    if session.json {
      session.environment.output.write(line: WireCoding.text(WebhookEndpointReply(endpoint: found)))
    } else {
      session.presenter.present(webhook: found)
    }
  }
}

struct WebhookAttempts: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "attempts",
    abstract: "List the attempts an endpoint keeps (the last 50), oldest first.",
    discussion: """
      Each attempt with its time, the event's cursor and id (test for a message of webhooks test), its \
      number (1 for an event's first), its outcome (delivered or rejected with the HTTP status, or no answer \
      with the reason), how long it took and the wait the receiver asked for (Retry-After).

      Example: trialwatchctl webhooks attempts billing --event 00000000000004d2
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName
  @Option(
    help: ArgumentHelp("Only the attempts of this event: its id or its cursor.", valueName: "event"))
  var event: String?

  func validate() throws {
    if let event, EventID(event) == nil, EventCursor(event) == nil {
      throw ValidationError(
        "--event: \"\(event)\" is neither an event id (0000000000000001-r1-expiry) nor a cursor (16 "
          + "hexadecimal digits, as watch and attempts print them)")
    }
  }

  func run(_ session: Session) throws {
    try session.show(
      Trials.getWebhookAttempts, GetWebhookAttemptsParameters(name: endpoint.name, event: event)
    ) { $0.present(attempts: $1.attempts, of: endpoint.name, event: event) }
  }
}

struct WebhookEnable: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "enable",
    abstract: "Enable a disabled webhook endpoint: its deliveries go on from where they stopped.",
    discussion: """
      Every event it holds falls due at once, then each is tried again on its schedule. Needs the rights \
      of a change.

      Example: trialwatchctl webhooks enable billing
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName

  func run(_ session: Session) throws {
    try session.show(Trials.enableWebhook, WebhookNameParameters(name: endpoint.name)) {
      $0.present(webhook: $1.endpoint)
    }
  }
}

struct WebhookReplay: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "replay",
    abstract: "Send an endpoint again the events it wants after a cursor (through --until).",
    discussion: """
      For a receiver that lost what it was sent. Each event goes again as a new series of attempts, under \
      its webhook-id as before, so the receiver can tell one it has. Without --until, every event up to \
      the newest; with it, events after --until the endpoint had settled are not sent again. Needs the \
      rights of a change. Shows the endpoint once the replay is recorded.

      Example: trialwatchctl webhooks replay billing --after 00000000000004d2
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName
  @Option(help: ArgumentHelp("Send the events logged after this cursor.", valueName: "cursor"))
  var after: String
  @Option(help: ArgumentHelp("Through this cursor (default: the newest event).", valueName: "cursor"))
  var until: String?

  func validate() throws {
    _ = try parameters()
  }

  func parameters() throws -> ReplayWebhookParameters {
    let start = try Arguments.cursor(after, "--after")
    let end = try until.map { try Arguments.cursor($0, "--until") }
    if let end, end < start {
      throw ValidationError("--until: \(end) comes before --after \(start)")
    }
    return ReplayWebhookParameters(name: endpoint.name, after: start, until: end)
  }

  func run(_ session: Session) throws {
    try session.show(Trials.replayWebhook, try parameters()) { $0.present(webhook: $1.endpoint) }
  }
}

struct WebhookTest: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "test",
    abstract: "Send an endpoint a test message, once, and say what came of it.",
    discussion: """
      The message, of type trialwatch.test, goes through the webhook sender, signed as events are; it is \
      not tried again, and the endpoint's state does not change (the attempt is kept with its attempts). \
      Exit status 0 when it was delivered (a 2xx answer), 1 when not (another status, or no answer), \
      with the outcome on standard error. Needs the rights of a change, and a sender attached to the \
      daemon (trialwatch-webhooks.service).

      Example: trialwatchctl webhooks test billing
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName

  func run(_ session: Session) throws {
    let attempt = try session.call(Trials.testWebhook, WebhookNameParameters(name: endpoint.name)).attempt
    guard attempt.delivered else {
      throw CtlFailure(session.presenter.testFailure(attempt, of: endpoint.name), exitCode: .failure)
    }
    if !session.json { session.presenter.present(test: attempt, of: endpoint.name) }
  }
}

extension Session {
  /// The endpoint named `name` as ListWebhooks has it, read without printing the reply; an
  /// endpoint not configured fails as the daemon's WebhookNotFound does.
  func webhook(named name: String) throws -> WebhookEndpointObject {
    let endpoints = try quietly(Trials.listWebhooks, NoParameters()).endpoints
    guard let found = endpoints.first(where: { $0.name == name }) else {
      throw CtlFailure(ControlError.webhookNotFound(name))
    }
    return found
  }
}

/// Completion of an endpoint's NAME from the running daemon (`ListWebhooks`): quiet and quick
/// as `TrialCompletion`, with no candidates when the daemon cannot be reached.
enum WebhookCompletion {
  static let kind = CompletionKind.custom { words, _, prefix in
    candidates(words: words, prefix: prefix, variables: ProcessInfo.processInfo.environment)
  }

  static func candidates(words: [String], prefix: String, variables: [String: String]) -> [String] {
    TrialCompletion.names(words: words, prefix: prefix, variables: variables) { client in
      try client.call(Trials.listWebhooks, NoParameters()).endpoints.map(\.name)
    }
  }
}
