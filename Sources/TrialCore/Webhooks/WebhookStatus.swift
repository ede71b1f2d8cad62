import FoundationEssentials

/// Where an endpoint's deliveries stand, as the engine sees them now: its configuration, its
/// durable state, and what its queue holds.
public struct WebhookEndpointStatus: Hashable, Sendable {
  public var endpoint: WebhookEndpoint
  /// Nil while the endpoint's state is being read from the store.
  public var state: WebhookEndpointState?
  /// The last event settled in a row.
  public var position: EventCursor?
  /// Events held that wait to be delivered, and how many of them are out for an attempt.
  public var backlog = 0
  public var inFlight = 0
  /// The oldest event held, and when it was taken.
  public var oldest: EventCursor?
  public var oldestTakenAt: Date?
  /// When the next attempt falls due, if one waits its turn.
  public var nextAttemptAt: Date?

  public init(endpoint: WebhookEndpoint) {
    self.endpoint = endpoint
  }
}
