import FoundationEssentials
import TrialCore

/// Reads that need one snapshot of a single statement, run as that one statement on a pooled
/// reader connection (no `BEGIN`, no `COMMIT`): the shared database counts every statement of
/// every node, and these are the reads a node makes as it runs (the status line's subject, the
/// shared log's tail for the Watches).
extension PostgresTrialRepository {
  public func trial(_ id: TrialID) throws -> Trial? {
    let statement = PostgresRecords.trialStatement(id)
    let result = try readStatement(statement.sql, statement.parameters)
    return result.rows == 0 ? nil : try TrialRows(result).trial(0)
  }

  /// The log's bounds and the events after `after` in one statement, so in one snapshot: the
  /// bounds on every row (a row of NULL events when there is none after `after`).
  public func loggedEvents(after: EventCursor, limit: Int) throws -> [LoggedEvent] {
    let start = Int64(min(after.sequence, UInt64(Int64.max)))
    let result = try readStatement(
      """
      SELECT h.last, h.pruned_through, h.kept, \(PostgresRecords.generationColumn) AS generation, e.*
      FROM trialwatch.log_head h LEFT JOIN LATERAL (
        SELECT \(PostgresRecords.eventColumns)
        FROM trialwatch.event_log WHERE cursor > $1 ORDER BY cursor LIMIT $2) e ON true
      ORDER BY e.cursor
      """, [String(start), String(max(0, limit))])
    guard result.rows > 0, let last = result.int64(0, 0), let pruned = result.int64(0, 1),
      let kept = result.int(0, 2)
    else {
      throw PostgresStoreError.damaged("trialwatch.log_head is unreadable")
    }
    let bounds = EventLogBounds(
      last: EventCursor(UInt64(bitPattern: last)), prunedThrough: EventCursor(UInt64(bitPattern: pruned)),
      count: kept, generation: try PostgresRecords.generation(result.string(0, 3)))
    try EventFeed.checkCursor(after, against: bounds)
    var rows = try EventRows(result)
    rows.generation = bounds.generation.number
    var events: [LoggedEvent] = []
    events.reserveCapacity(result.rows)
    for row in 0..<result.rows {
      if let event = try rows.event(row) { events.append(event) }
    }
    return events
  }
}
