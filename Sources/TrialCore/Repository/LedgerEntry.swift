import FoundationEssentials

/// The exactly-once ledger's record of one event that has been taken: fired or skipped,
/// and whether it has been delivered (to the journal and watchers) yet.
public struct LedgerEntry: Hashable, Sendable {
  public enum Outcome: Hashable, Sendable {
    case fired
    case skipped(SkipReason)
  }

  public var event: TrialEvent
  public var outcome: Outcome
  /// When it was taken (fired or skipped).
  public var takenAt: Date
  /// Taken more than the policy's late threshold after it fell due.
  public var isLate: Bool
  /// Nil while it waits in the outbox for delivery.
  public var deliveredAt: Date?

  public init(event: TrialEvent, outcome: Outcome, takenAt: Date, isLate: Bool, deliveredAt: Date? = nil) {
    self.event = event
    self.outcome = outcome
    self.takenAt = takenAt
    self.isLate = isLate
    self.deliveredAt = deliveredAt
  }

  public init(_ due: DueEvent, deliveredAt: Date? = nil) {
    let outcome: Outcome
    switch due.disposition {
    case .fire: outcome = .fired
    case .skip(let reason): outcome = .skipped(reason)
    }
    self.init(
      event: due.event, outcome: outcome, takenAt: due.takenAt, isLate: due.isLate, deliveredAt: deliveredAt)
  }

  public var id: EventID { event.id }
  /// How long after its due time the event was taken, to the microsecond (zero if not after).
  public var lateness: Duration { max(.zero, takenAt.duration(since: event.due)) }
  public var isDelivered: Bool { deliveredAt != nil }
  public var fired: Bool { outcome == .fired }
}
