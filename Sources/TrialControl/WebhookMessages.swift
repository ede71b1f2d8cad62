import FoundationEssentials
import TrialCore

// The parameters and replies of the webhook methods of io.trialwatch.Trials: the operators'
// (ListWebhooks, GetWebhookAttempts, EnableWebhook, ReplayWebhook, TestWebhook) and the
// sender's (ServeWebhooks, ReportWebhooks).

/// `io.trialwatch.Trials.WebhookEndpoint`.
public struct WebhookEndpointObject: Codable, Hashable, Sendable {
  public enum State: String, WireChoice {
    case active
    case failing
    case disabled
  }

  public var name: String
  public var url: String
  public var secretFile: String
  public var state: State
  /// `gone` or `failing`.
  public var disabledReason: String?
  public var disabledAt: Date?
  public var disabledDetail: String?
  public var consecutiveFailures: Int
  public var failingSince: Date?
  public var lastAttemptAt: Date?
  public var lastStatus: Int?
  public var lastError: String?
  public var position: EventCursor
  public var backlog: Int
  public var inFlight: Int
  public var lag: Int
  public var oldestPending: EventCursor?
  public var oldestPendingAt: Date?
  public var nextAttemptAt: Date?
  public var loaded: Bool

  /// The object of `status`, with the log's newest cursor `last` to count its lag.
  public init(_ status: WebhookEndpointStatus, last: EventCursor) {
    name = status.endpoint.name
    url = status.endpoint.url
    secretFile = status.endpoint.secretFile
    let health = status.state?.health ?? WebhookEndpointHealth()
    switch health.disabled {
    case .gone(let at)?:
      (disabledReason, disabledAt) = ("gone", at)
    case .failing(_, let at)?:
      (disabledReason, disabledAt) = ("failing", at)
    case nil:
      break
    }
    disabledDetail = health.disabled?.description
    state = health.disabled != nil ? .disabled : health.consecutiveFailures > 0 ? .failing : .active
    consecutiveFailures = health.consecutiveFailures
    failingSince = health.failingSince
    lastAttemptAt = health.lastAttemptAt
    switch health.lastAttempt {
    case .answered(let status, _)?: lastStatus = status
    case .failed(let error)?: lastError = error
    case nil: break
    }
    position = status.position ?? last
    backlog = status.backlog
    inFlight = status.inFlight
    lag = Int(clamping: last.sequence &- min(last.sequence, position.sequence))
    oldestPending = status.oldest
    oldestPendingAt = status.oldestTakenAt
    nextAttemptAt = status.nextAttemptAt
    loaded = status.state != nil
  }
}

public struct ListWebhooksReply: Codable, Hashable, Sendable {
  public var endpoints: [WebhookEndpointObject]

  public init(endpoints: [WebhookEndpointObject]) {
    self.endpoints = endpoints
  }
}

public struct WebhookEndpointReply: Codable, Hashable, Sendable {
  public var endpoint: WebhookEndpointObject

  public init(endpoint: WebhookEndpointObject) {
    self.endpoint = endpoint
  }
}

/// `io.trialwatch.Trials.WebhookAttempt`.
public struct WebhookAttemptObject: Codable, Hashable, Sendable {
  public var at: Date
  public var cursor: EventCursor?
  public var event: String?
  public var messageId: String
  public var number: Int
  public var delivered: Bool
  public var status: Int?
  public var error: String?
  public var retryAfter: Span?
  public var duration: Span

  public init(_ record: WebhookAttemptRecord) {
    at = record.at
    cursor = record.cursor
    event = record.cursor == nil ? nil : record.messageID
    messageId = record.messageID
    number = record.number
    delivered = record.outcome.delivered
    switch record.outcome {
    case .answered(let status, let retryAfter):
      self.status = status
      self.retryAfter = retryAfter.map(Span.init)
    case .failed(let error):
      self.error = error
    }
    duration = Span(record.duration)
  }
}

/// The parameters of the methods that name one endpoint.
public struct WebhookNameParameters: VarlinkParameters, Hashable {
  public var name: String

  public init(name: String) {
    self.name = name
  }

  public func validate() throws(WireProblem) {
    try WebhookNameParameters.check(name, "name")
  }

  /// An endpoint's name is its file's, named as a plan is (`TrialPlan.validateName`).
  static func check(_ name: String, _ parameter: String) throws(WireProblem) {
    if let problem = TrialPlan.validateName(name) { throw .parameter(parameter, problem) }
  }
}

public struct GetWebhookAttemptsParameters: VarlinkParameters, Hashable {
  public var name: String
  /// An event id, or a cursor: only that event's attempts.
  public var event: String?

  public init(name: String, event: String? = nil) {
    self.name = name
    self.event = event
  }

  public func validate() throws(WireProblem) {
    try WebhookNameParameters.check(name, "name")
    if let event, EventID(event) == nil, EventCursor(event) == nil {
      throw .parameter("event", "\"\(event)\" is neither an event id nor a cursor")
    }
  }
}

public struct GetWebhookAttemptsReply: Codable, Hashable, Sendable {
  public var attempts: [WebhookAttemptObject]

  public init(attempts: [WebhookAttemptObject]) {
    self.attempts = attempts
  }
}

public struct ReplayWebhookParameters: VarlinkParameters, Hashable {
  public var name: String
  public var after: EventCursor
  public var until: EventCursor?

  public init(name: String, after: EventCursor, until: EventCursor? = nil) {
    self.name = name
    self.after = after
    self.until = until
  }

  public func validate() throws(WireProblem) {
    try WebhookNameParameters.check(name, "name")
    if let until, until < after {
      throw .parameter("until", "the end of a replay (\(until)) comes before its start (\(after))")
    }
  }
}

public struct TestWebhookReply: Codable, Hashable, Sendable {
  public var attempt: WebhookAttemptObject

  public init(attempt: WebhookAttemptObject) {
    self.attempt = attempt
  }
}

/// `io.trialwatch.Trials.WebhookRequest`: an attempt for the sender to make. The body is the
/// message as sent, made from `message` where the daemon encodes it (on the connection that
/// carries it), read as text where the sender decodes it.
public struct WebhookRequestObject: Codable, Hashable, Sendable {
  public var token: UInt64
  public var endpoint: String
  public var url: String
  public var secretFile: String
  public var timeout: Span
  public var messageId: String
  public var number: Int
  public var body: String

  public init(
    token: UInt64, endpoint: WebhookEndpoint, messageId: String, number: Int, body: String
  ) {
    self.token = token
    self.endpoint = endpoint.name
    url = endpoint.url
    secretFile = endpoint.secretFile
    timeout = Span(endpoint.timeout)
    self.messageId = messageId
    self.number = number
    self.body = body
  }
}

public struct ServeWebhooksReply: Codable, Hashable, Sendable {
  public var requests: [WebhookRequestObject]

  public init(requests: [WebhookRequestObject]) {
    self.requests = requests
  }
}

/// `io.trialwatch.Trials.WebhookOutcome`.
public struct WebhookOutcomeObject: Codable, Hashable, Sendable {
  public var token: UInt64
  public var at: Date
  public var duration: Span
  public var status: Int?
  public var retryAfter: Span?
  public var error: String?

  public init(token: UInt64, attempt: WebhookAttempt, at: Date, duration: Duration) {
    self.token = token
    self.at = at
    self.duration = Span(duration)
    switch attempt {
    case .answered(let status, let retryAfter):
      self.status = status
      self.retryAfter = retryAfter.map(Span.init)
    case .failed(let error):
      self.error = error
    }
  }

  /// The attempt it reports: a status, else the error (an outcome with neither is a failure
  /// without words).
  public var attempt: WebhookAttempt {
    if let status { return .answered(status: status, retryAfter: retryAfter?.duration) }
    return .failed(error ?? "no answer")
  }
}

public struct ReportWebhooksParameters: VarlinkParameters, Hashable {
  public var outcomes: [WebhookOutcomeObject]

  public init(outcomes: [WebhookOutcomeObject]) {
    self.outcomes = outcomes
  }

  public func validate() throws(WireProblem) {
    for (index, outcome) in outcomes.enumerated() {
      if let status = outcome.status, !(100...999).contains(status) {
        throw .parameter("outcomes[\(index)].status", "\(status) is not an HTTP status (100 to 999)")
      }
      if outcome.status != nil && outcome.error != nil {
        throw .parameter("outcomes[\(index)]", "an outcome has a status or an error, not both")
      }
    }
  }
}
