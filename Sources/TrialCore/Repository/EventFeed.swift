import FoundationEssentials

/// The event log's operations, written once over the transaction primitives: reading after a
/// cursor, durable consumers, and pruning by retention.
public enum EventFeed {
  /// Checks that the events after `after` are all still in the log, and returns the bounds.
  /// - Throws: `TrialError` `.cursorPruned` when some were pruned, `.cursorAhead` for a
  ///   cursor beyond the newest event.
  @discardableResult
  public static func checkCursor(_ after: EventCursor, in txn: any TrialReadTransaction) throws
    -> EventLogBounds
  {
    let bounds = try txn.eventLogBounds()
    try checkCursor(after, against: bounds)
    return bounds
  }

  /// `checkCursor(_:in:)` against bounds read already.
  public static func checkCursor(_ after: EventCursor, against bounds: EventLogBounds) throws {
    try checkGeneration(after, against: bounds)
    if after > bounds.last { throw TrialError(.cursorAhead(cursor: after, last: bounds.last)) }
    if after < bounds.prunedThrough {
      throw TrialError(
        .cursorPruned(cursor: after, resumeAfter: bounds.prunedThrough, oldest: bounds.first))
    }
  }

  /// Refuses a cursor of another generation of the log (`LogGeneration`).
  public static func checkGeneration(_ cursor: EventCursor, against bounds: EventLogBounds) throws {
    guard cursor.generation != bounds.generation.number else { return }
    throw TrialError(
      .cursorGeneration(
        cursor: cursor, generation: bounds.generation.number,
        resumeAfter: bounds.generation.resumePoint(for: cursor)))
  }

  /// Up to `limit` events after `after`, in order, having checked the cursor.
  public static func events(after: EventCursor, limit: Int, in txn: any TrialReadTransaction) throws
    -> [LoggedEvent]
  {
    try checkCursor(after, in: txn)
    guard limit > 0 else { return [] }
    var events: [LoggedEvent] = []
    events.reserveCapacity(min(limit, 1024))
    try txn.scanEvents(after: after) { event in
      events.append(event)
      return events.count < limit
    }
    return events
  }

  /// Creates a consumer positioned after `after` (default: the newest event, so that it
  /// handles what is taken from now on).
  public static func createConsumer(
    named name: String, after: EventCursor?, now: Date, in txn: any TrialWriteTransaction
  ) throws -> ConsumerRecord {
    if let problem = ConsumerRecord.validateName(name) { throw TrialError.invalid(.consumer, problem) }
    if name.hasPrefix(WebhookEndpointState.consumerPrefix) {
      throw TrialError.invalid(
        .consumer,
        "names starting with \"\(WebhookEndpointState.consumerPrefix)\" are the webhook endpoints' own")
    }
    if try txn.consumer(named: name) != nil { throw TrialError(.consumerExists(name: name)) }
    let position: EventCursor
    if let after {
      position = after
      try checkCursor(after, in: txn)
    } else {
      position = try txn.eventLogBounds().last
    }
    let consumer = ConsumerRecord(name: name, acknowledged: position, createdAt: now)
    try txn.putConsumer(consumer)
    return consumer
  }

  /// Moves a consumer's position to `cursor`. Never moves it back: acknowledging a cursor at
  /// or before its position changes nothing.
  public static func acknowledge(
    consumer name: String, through cursor: EventCursor, now: Date, in txn: any TrialWriteTransaction
  ) throws -> ConsumerRecord {
    guard var consumer = try txn.consumer(named: name) else {
      throw TrialError(.consumerNotFound(name: name))
    }
    let bounds = try txn.eventLogBounds()
    try checkGeneration(cursor, against: bounds)
    let last = bounds.last
    guard cursor <= last else { throw TrialError(.cursorAhead(cursor: cursor, last: last)) }
    guard cursor > consumer.acknowledged else { return consumer }
    consumer.acknowledged = cursor
    consumer.acknowledgedAt = now
    try txn.putConsumer(consumer)
    return consumer
  }

  /// Every consumer, by name.
  public static func consumers(in txn: any TrialReadTransaction) throws -> [ConsumerRecord] {
    try collected { try txn.scanConsumers($0) }
  }

  /// What one pruning step did.
  public struct PruneStep: Hashable, Sendable {
    public var pruned = 0
    /// Consumers that lost events they had not acknowledged to the retention cap, and how many.
    public var lost: [String: UInt64] = [:]
    /// More events may be pruned at once (the step stopped at its limit).
    public var more = false
    /// When the oldest event left will be old enough to prune, when that is known: nil when
    /// the log is empty or a consumer holds it without a cap.
    public var nextAt: Date?

    public init() {}
  }

  /// Prunes at most `limit` of the oldest events: those taken more than `retention.age`
  /// before `now` that every consumer has acknowledged, and those older than `retention.cap`
  /// whatever the consumers (each consumer behind them is moved past them and counts them
  /// as lost). Small steps, so that pruning never holds the store for long.
  public static func prune(
    now: Date, retention: EventRetention, limit: Int, in txn: any TrialWriteTransaction
  ) throws -> PruneStep {
    var step = PruneStep()
    let bounds = try txn.eventLogBounds()
    guard bounds.count > 0 else { return step }
    var consumers = try self.consumers(in: txn)
    let held = consumers.map(\.acknowledged).min()
    let ageCutoff = now.adding(.zero - retention.age)
    // The cap is never shorter than the retention itself.
    let capSpan = retention.cap.map { max($0, retention.age) }
    let capCutoff = capSpan.map { now.adding(.zero - $0) }
    var through: EventCursor?
    var examined = 0
    try txn.scanEvents(after: bounds.prunedThrough) { event in
      let taken = event.entry.takenAt
      guard taken <= ageCutoff else {
        step.nextAt = taken.adding(retention.age)
        return false
      }
      if let held, event.cursor > held {
        guard let capCutoff, let cap = capSpan else { return false }
        guard taken <= capCutoff else {
          step.nextAt = taken.adding(cap)
          return false
        }
      }
      through = event.cursor
      examined += 1
      if examined >= limit {
        step.more = true
        return false
      }
      return true
    }
    guard let through else { return step }
    step.pruned = try txn.pruneEvents(through: through)
    for index in consumers.indices where consumers[index].acknowledged < through {
      let lost = through.sequence - max(consumers[index].acknowledged.sequence, bounds.prunedThrough.sequence)
      consumers[index].lost += lost
      consumers[index].lostAt = now
      consumers[index].acknowledged = through
      step.lost[consumers[index].name] = lost
      try txn.putConsumer(consumers[index])
    }
    if step.more { step.nextAt = now }
    return step
  }
}
