import FoundationEssentials
import TrialCore

/// The events delivery takes again from the store: those held back, and the outbox at a start.
/// Sinks are handed each event as the event log holds it, with the attributes its trial had when
/// it was taken, whatever changed since; the trial as it is now comes beside it (nil when
/// retention removed it).
extension DeliveryQueue {
  /// Of the events named (an id, and its cursor in the log when known), those still to be
  /// delivered (their ledger entries undelivered), as the log holds them, with their trials.
  /// Events whose cursor is known come in the order given; otherwise in the order of the log.
  /// An event the log no longer holds (pruned meanwhile) comes with its trial's attributes now,
  /// or not at all when its trial is gone too.
  static func loggedEvents(
    _ named: [(id: EventID, cursor: EventCursor?)], in txn: any TrialReadTransaction
  ) throws -> ([LoggedEvent], [Trial?]) {
    var pending: [(entry: LedgerEntry, cursor: EventCursor?)] = []
    for (id, cursor) in named {
      guard let entry = try txn.ledgerEntry(id), !entry.isDelivered else { continue }
      pending.append((entry, cursor))
    }
    guard !pending.isEmpty else { return ([], []) }
    var logged: [EventID: LoggedEvent] = [:]
    let known = pending.compactMap(\.cursor)
    if let first = known.min(), let last = known.max() {
      let wanted = Set(pending.lazy.filter { $0.cursor != nil }.map(\.entry.id))
      try txn.scanEvents(after: EventCursor(first.sequence &- 1, generation: first.generation)) { event in
        guard event.cursor <= last else { return false }
        if wanted.contains(event.id) { logged[event.id] = event }
        return true
      }
    }
    let unknown = Set(pending.lazy.filter { $0.cursor == nil }.map(\.entry.id))
    if !unknown.isEmpty { try findInTail(unknown, into: &logged, in: txn) }

    var events: [(event: LoggedEvent, trial: Trial?)] = []
    var gone: [(event: LoggedEvent, trial: Trial?)] = []
    for (entry, cursor) in pending {
      let trial = try txn.trial(entry.event.trialID)
      if let event = logged[entry.id] {
        events.append((event, trial))
      } else if let trial {
        let event = LoggedEvent(cursor: cursor ?? .origin, entry: entry, attributes: trial.attributes)
        if cursor == nil { gone.append((event, trial)) } else { events.append((event, trial)) }
      }
    }
    if !unknown.isEmpty { events.sort { $0.event.cursor < $1.event.cursor } }
    events += gone
    return (events.map(\.event), events.map(\.trial))
  }

  /// Finds the events of `ids` in the log's tail: windows back from its newest event, each twice
  /// the one before, until every one is found or the oldest event kept is reached. Events taken
  /// and not delivered are the newest of the log but for those held back, so this reads about
  /// twice as many events as lie after the oldest of them.
  private static func findInTail(
    _ ids: Set<EventID>, into found: inout [EventID: LoggedEvent], in txn: any TrialReadTransaction
  ) throws {
    let bounds = try txn.eventLogBounds()
    let floor = bounds.prunedThrough.sequence
    var end = bounds.last.sequence
    var window: UInt64 = 256
    var left = ids.count
    while left > 0, end > floor {
      let after = end - min(window, end - floor)
      try txn.scanEvents(after: EventCursor(after, generation: bounds.generation.number)) { event in
        guard event.cursor.sequence <= end else { return false }
        if ids.contains(event.id), found.updateValue(event, forKey: event.id) == nil { left -= 1 }
        return true
      }
      end = after
      window *= 2
    }
  }
}
