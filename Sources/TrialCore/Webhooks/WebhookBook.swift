import FoundationEssentials

/// The webhook endpoints' operations on the store, each in a caller's transaction: what
/// `WebhookQueue` decides, made durable. An endpoint's position is the consumer
/// `webhook:NAME` (`WebhookEndpointState.consumerName`): the log keeps every event the endpoint
/// has not settled, up to the retention cap, as it does for any consumer, and a restore puts the
/// position back with the store.
public enum WebhookBook {
  /// Where an endpoint stands, as the store keeps it.
  public struct Opened: Hashable, Sendable {
    public var position: EventCursor
    public var state: WebhookEndpointState
    /// Its pending events after the position, in cursor order.
    public var pending: [WebhookPendingEvent]
    /// The endpoint was new: it starts after the log's newest event.
    public var created: Bool
  }

  /// Opens `endpoint`: a new one starts after the newest event of the log (it gets the events
  /// taken from now on); one the store knows goes on from its position.
  public static func open(endpoint: String, now: Date, in txn: any TrialWriteTransaction) throws -> Opened {
    let name = WebhookEndpointState.consumerName(of: endpoint)
    var created = false
    let consumer: ConsumerRecord
    if let known = try txn.consumer(named: name) {
      consumer = known
    } else {
      consumer = ConsumerRecord(name: name, acknowledged: try txn.eventLogBounds().last, createdAt: now)
      try txn.putConsumer(consumer)
      created = true
    }
    let state: WebhookEndpointState
    if let known = try txn.webhookEndpoint(named: endpoint) {
      state = known
    } else {
      state = WebhookEndpointState(name: endpoint)
      try txn.putWebhookEndpoint(state)
    }
    let pending = try collected {
      try txn.scanWebhookEvents(endpoint: endpoint, after: consumer.acknowledged, $0)
    }
    return Opened(position: consumer.acknowledged, state: state, pending: pending, created: created)
  }

  /// Writes what a round of attempts changed: the events' records, the position moved (and the
  /// records it passed removed), and the endpoint's state when given.
  public static func record(
    _ change: WebhookQueue.Change, endpoint: String, state: WebhookEndpointState?, now: Date,
    in txn: any TrialWriteTransaction
  ) throws {
    let position = change.position
    for event in change.put where position.map({ event.cursor > $0 }) ?? true {
      try txn.putWebhookEvent(event)
    }
    if let position {
      let name = WebhookEndpointState.consumerName(of: endpoint)
      // A position behind the log's pruned start (the cap passed it) stays where pruning put it.
      guard var consumer = try txn.consumer(named: name) else {
        throw TrialError(.consumerNotFound(name: name))
      }
      if position > consumer.acknowledged {
        consumer.acknowledged = position
        consumer.acknowledgedAt = now
        try txn.putConsumer(consumer)
      }
      try txn.removeWebhookEvents(endpoint: endpoint, through: position)
    }
    if let state { try txn.putWebhookEndpoint(state) }
  }

  /// Forgets an endpoint no longer configured: its position, state and pending events. True when
  /// the store knew it.
  @discardableResult
  public static func remove(endpoint: String, in txn: any TrialWriteTransaction) throws -> Bool {
    let consumer = try txn.removeConsumer(named: WebhookEndpointState.consumerName(of: endpoint))
    let state = try txn.removeWebhookEndpoint(named: endpoint)
    return consumer || state
  }

  /// The endpoints the store knows: those with a state or a position.
  public static func known(in txn: any TrialReadTransaction) throws -> Set<String> {
    var names = Set(try collected { try txn.scanWebhookEndpoints($0) }.map(\.name))
    for consumer in try collected({ try txn.scanConsumers($0) }) {
      if let name = WebhookEndpointState.endpoint(ofConsumer: consumer.name) { names.insert(name) }
    }
    return names
  }

  /// Forgets every endpoint the store knows but those of `kept`; returns their names.
  public static func removeAll(except kept: Set<String>, in txn: any TrialWriteTransaction) throws -> [String]
  {
    var removed: [String] = []
    for name in try known(in: txn).subtracting(kept).sorted() where try remove(endpoint: name, in: txn) {
      removed.append(name)
    }
    return removed
  }

  /// Sends an endpoint the events after `after` again, through `until` (the newest when nil):
  /// its position moves back to `after`, and the records of those events go (each is sent as if
  /// for the first time, delivered ahead or not); events after `until` that it had settled are
  /// passed over again (`WebhookEndpointState.skip`), those it had not go on as before.
  public static func replay(
    endpoint: String, after: EventCursor, until: EventCursor?, now: Date, in txn: any TrialWriteTransaction
  ) throws -> WebhookEndpointState {
    let name = WebhookEndpointState.consumerName(of: endpoint)
    guard var consumer = try txn.consumer(named: name), var state = try txn.webhookEndpoint(named: endpoint)
    else { throw TrialError(.consumerNotFound(name: name)) }
    try EventFeed.checkCursor(after, in: txn)
    if let until {
      try EventFeed.checkCursor(until, in: txn)
      guard until >= after else {
        throw TrialError.invalid(
          .consumer, "the end of a replay (\(until)) comes before its start (\(after))")
      }
    }
    let settled = consumer.acknowledged.sequence
    let last = until?.sequence ?? settled
    state.skip = last < settled ? (last + 1)...settled : nil
    if after < consumer.acknowledged {
      consumer.acknowledged = after
      consumer.acknowledgedAt = now
      try txn.putConsumer(consumer)
    }
    try txn.removeWebhookEvents(endpoint: endpoint, through: until ?? txn.eventLogBounds().last)
    try txn.putWebhookEndpoint(state)
    return state
  }
}
