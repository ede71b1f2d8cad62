import FoundationEssentials

/// What the store keeps of one webhook endpoint besides its position in the event log (a
/// consumer named `WebhookEndpointState.consumerName(of:)`, so that the log keeps what the
/// endpoint has not settled, as it does for any consumer): its health, its last attempts, and a
/// replay under way.
public struct WebhookEndpointState: Hashable, Sendable {
  /// How many attempts an endpoint's state keeps, the newest last (`webhooks attempts`).
  public static let keptAttempts = 50

  public var name: String
  public var health = WebhookEndpointHealth()
  /// The last attempts, oldest first, at most `keptAttempts`.
  public var attempts: [WebhookAttemptRecord] = []
  /// Events a replay passes over: those after the replay's `--until` up to where the endpoint
  /// stood when it was asked, settled already (sequences, both ends included).
  public var skip: ClosedRange<UInt64>?

  public init(name: String) {
    self.name = name
  }

  /// Keeps `attempt`, dropping the oldest beyond `keptAttempts`.
  public mutating func keep(_ attempt: WebhookAttemptRecord) {
    attempts.append(attempt)
    if attempts.count > Self.keptAttempts { attempts.removeFirst(attempts.count - Self.keptAttempts) }
  }

  /// The state with its attempts' cursors in the log's generation `generation`: stores keep
  /// sequences alone, and read them back in the generation the log is in.
  public func inGeneration(_ generation: UInt32) -> WebhookEndpointState {
    var state = self
    for index in state.attempts.indices {
      state.attempts[index].cursor = state.attempts[index].cursor?.of(generation: generation)
    }
    return state
  }

  /// The consumer that holds the endpoint's position: `webhook:NAME`.
  public static func consumerName(of endpoint: String) -> String { consumerPrefix + endpoint }

  /// The endpoint whose position a consumer of this name holds, or nil.
  public static func endpoint(ofConsumer name: String) -> String? {
    name.hasPrefix(consumerPrefix) ? String(name.dropFirst(consumerPrefix.count)) : nil
  }

  /// Consumers named so are the webhook endpoints' own: `CreateConsumer` refuses the prefix.
  public static let consumerPrefix = "webhook:"
}

/// One attempt to deliver an event (or a test message) to an endpoint, as the endpoint's state
/// keeps it.
public struct WebhookAttemptRecord: Hashable, Sendable {
  public var at: Date
  /// The event's cursor; nil for a test message.
  public var cursor: EventCursor?
  /// The message's `webhook-id`: the event's id, or the test message's.
  public var messageID: String
  /// 1 for the first attempt of this message.
  public var number: Int
  public var outcome: WebhookAttempt
  /// From the request's start to its answer (or its failure).
  public var duration: Duration

  public init(
    at: Date, cursor: EventCursor?, messageID: String, number: Int, outcome: WebhookAttempt,
    duration: Duration
  ) {
    self.at = at
    self.cursor = cursor
    self.messageID = messageID
    self.number = number
    self.outcome = outcome
    self.duration = duration
  }
}

/// An event after an endpoint's position that the store remembers for the endpoint: attempts
/// made that failed, and when the next comes; or delivered already, ahead of events before it
/// that are not (the position passes it once they are). Events after the position with no
/// record have not been tried yet.
public struct WebhookPendingEvent: Hashable, Sendable {
  public var endpoint: String
  public var cursor: EventCursor
  /// Attempts made: each failed, but for the last of a delivered event.
  public var attempts: Int
  /// When the next attempt is due; nil once delivered.
  public var nextAttemptAt: Date?

  public init(endpoint: String, cursor: EventCursor, attempts: Int, nextAttemptAt: Date?) {
    self.endpoint = endpoint
    self.cursor = cursor
    self.attempts = attempts
    self.nextAttemptAt = nextAttemptAt
  }

  public var delivered: Bool { nextAttemptAt == nil }
}
