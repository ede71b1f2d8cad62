import FoundationEssentials
import TrialCore

/// Events taken but held back from the sinks, oldest first: a sink deferred one of them (the
/// journal's rate limit) or failed to take it, and those taken after it wait behind it, so
/// that the sinks see events in the order they were taken. Their entries stay in the store's
/// outbox (they are durable there); this is only the order, and why delivery stopped.
struct DeliveryBacklog {
  /// Why delivery is held.
  enum Cause: Equatable {
    /// A sink deferred an entry: `DeliveryDeferred.reason`.
    case deferred(String)
    /// A sink failed to take an entry.
    case sinkFailed
    /// The store could not be read or could not record a delivery.
    case storeFailed
  }

  /// An event held: its id, and its cursor in the event log when known (an event taken before
  /// a restart is found in the log by its id, when the log still holds it).
  struct Held: Hashable {
    var id: EventID
    var cursor: EventCursor?
  }

  private var ids: [Held] = []
  private var head = 0
  /// The one wake that resumes delivery; nil when nothing is held.
  var wake: (any ScheduledWake)?
  /// Since when (monotonic seconds) delivery is held, and why; nil when it runs.
  private(set) var heldSince: TimeInterval?
  private(set) var cause: Cause?
  /// Entries delivered from the backlog since it began.
  private(set) var delivered = 0

  var isHolding: Bool { heldSince != nil }
  var count: Int { ids.count - head }

  func contains(_ id: EventID) -> Bool { ids[head...].contains { $0.id == id } }

  /// Puts events at the end.
  mutating func append<S: Sequence>(_ newIDs: S) where S.Element == Held {
    ids.append(contentsOf: newIDs)
  }

  /// Up to `limit` waiting events after the oldest `offset`, without taking them.
  func slice(from offset: Int, limit: Int) -> [Held] {
    let start = head + offset
    return Array(ids[start..<min(ids.count, start + limit)])
  }

  /// Takes the oldest `n` events off: `delivered` of them reached the sinks, the others were
  /// gone from the store's outbox.
  mutating func removeFirst(_ n: Int, delivered: Int) {
    head += n
    self.delivered += delivered
    if head > 4096, head * 2 > ids.count {
      ids.removeFirst(head)
      head = 0
    }
  }

  /// Marks delivery held from `now` for `cause`. Returns whether that is news: a hold that
  /// begins, or a held one whose cause changed (worth a log line; a hold that goes on is not).
  mutating func hold(since now: TimeInterval, cause: Cause) -> Bool {
    defer { self.cause = cause }
    guard heldSince != nil else {
      heldSince = now
      delivered = 0
      return true
    }
    return self.cause != cause
  }

  /// Ends a hold once every held event is delivered. Returns how many were and for how long
  /// delivery was held.
  mutating func release(at now: TimeInterval) -> (delivered: Int, heldFor: TimeInterval) {
    let outcome = (delivered, heldSince.map { now - $0 } ?? 0)
    heldSince = nil
    cause = nil
    delivered = 0
    ids = []
    head = 0
    return outcome
  }
}
