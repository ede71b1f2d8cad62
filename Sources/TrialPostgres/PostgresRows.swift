import FoundationEssentials
import TrialCore

// The readers of the rows of `trial`, `ledger`, `event_log` and `consumer`. Each finds its
// columns by name, once for all the rows of a result: a statement may select them in any
// order, beside others (a join, a lateral read under the log's head), and a column added to
// the table changes no reader.

/// Finds the columns of `table` a reader takes in `result`.
struct ColumnFinder {
  let result: PGResult
  let table: String

  func callAsFunction(_ name: String) throws -> Int {
    guard let index = result.column(named: name) else {
      throw PostgresStoreError.damaged("a read of \(table) without its column \(name)")
    }
    return index
  }

  /// Sets each of `reader`'s properties in `columns` to where the column named beside it is.
  func find<Reader>(_ columns: KeyValuePairs<WritableKeyPath<Reader, Int>, String>, for reader: inout Reader)
    throws
  {
    for (property, name) in columns { reader[keyPath: property] = try self(name) }
  }
}

/// The trials of a result (`PostgresRecords.trialColumns`).
struct TrialRows {
  let result: PGResult
  private var id = 0, subject = 0, state = 0, revision = 0, start = 0, end = 0, ended = 0, reminders = 0
  private var attributes = 0, paused = 0, resume = 0, extensions = 0, cancel = 0, cancelReminds = 0, grace = 0
  private var followUps = 0, milestones = 0

  init(_ result: PGResult) throws {
    self.result = result
    try ColumnFinder(result: result, table: "trialwatch.trial").find(
      [
        \.id: "trial_id", \.subject: "subject", \.state: "state", \.revision: "revision", \.start: "start_s",
        \.end: "end_s", \.ended: "ended_s", \.reminders: "reminders_ms", \.attributes: "attributes",
        \.paused: "paused_s", \.resume: "resume_s", \.extensions: "extensions", \.cancel: "cancel_s",
        \.cancelReminds: "cancel_reminds", \.grace: "grace_ms", \.followUps: "follow_ups_ms",
        \.milestones: "milestones_ms",
      ], for: &self)
  }

  func trial(_ row: Int) throws -> Trial {
    guard let rawID = result.int64(row, id) else {
      throw PostgresStoreError.damaged("a row of trialwatch.trial without a readable trial_id")
    }
    let trialID = PostgresRecords.trialID(rawID)
    let name = "the row of trialwatch.trial of trial \(trialID)"
    guard let subject = result.string(row, subject), let stateText = result.string(row, state),
      let state = TrialState(rawValue: stateText), let revision = result.int(row, revision),
      let start = result.double(row, start), let end = result.double(row, end),
      let offsets = result.string(row, reminders).flatMap(PGArray.int64s),
      let extensions = result.int(row, extensions), extensions >= 0,
      let grace = result.int64(row, grace), grace >= 0, grace < EventID.maximumMilliseconds
    else { throw PostgresStoreError.damaged("\(name) is unreadable") }
    let schedule: ReminderSchedule
    let followUpSpans: FollowUpSchedule
    do {
      schedule = try ReminderSchedule(offsets.map { .milliseconds($0) })
    } catch {
      throw PostgresStoreError.damaged("\(name) has invalid reminders: \(error)")
    }
    let milestoneSpans: MilestoneSchedule
    do {
      followUpSpans = try FollowUpSchedule(try spans(row, followUps, of: name).map { .milliseconds($0) })
    } catch let error as PostgresStoreError {
      throw error
    } catch {
      throw PostgresStoreError.damaged("\(name) has invalid follow-ups: \(error)")
    }
    do {
      milestoneSpans = try MilestoneSchedule(try spans(row, milestones, of: name).map { .milliseconds($0) })
    } catch let error as PostgresStoreError {
      throw error
    } catch {
      throw PostgresStoreError.damaged("\(name) has invalid milestones: \(error)")
    }
    return Trial(
      id: trialID,
      attributes: try PostgresRecords.attributes(
        subject: subject, json: result.string(row, attributes), of: name),
      period: TrialPeriod(startDate: PostgresRecords.date(start), endDate: PostgresRecords.date(end)),
      state: state, reminders: schedule, revision: UInt32(truncatingIfNeeded: revision),
      endedAt: result.double(row, ended).map(PostgresRecords.date),
      pause: result.double(row, paused).map {
        TrialPause(
          since: PostgresRecords.date($0), until: result.double(row, resume).map(PostgresRecords.date))
      }, extensions: extensions,
      cancelMark: result.double(row, cancel).map {
        TrialCancelMark(
          askedAt: PostgresRecords.date($0), remindAfterCancel: result.bool(row, cancelReminds) ?? false)
      }, grace: .milliseconds(grace), followUps: followUpSpans,
      milestones: milestoneSpans)
  }

  /// A column of spans in milliseconds (NULL: none).
  private func spans(_ row: Int, _ column: Int, of name: String) throws -> [Int64] {
    try result.string(row, column).map {
      guard let spans = PGArray.int64s($0) else { throw PostgresStoreError.damaged("\(name) is unreadable") }
      return spans
    } ?? []
  }
}

/// Where a ledger entry's columns are in a result (`PostgresRecords.entryColumns`); a row of
/// the event log has no delivery.
struct EntryColumns {
  private var trial = 0, revision = 0, offset = 0, outcome = 0, detail = 0, due = 0, taken = 0, late = 0
  private var delivered: Int?
  private let table: String

  init(_ result: PGResult, table: String, delivery: Bool = true) throws {
    self.table = table
    let column = ColumnFinder(result: result, table: table)
    try column.find(
      [
        \.trial: "trial_id", \.revision: "revision", \.offset: "offset_ms", \.outcome: "outcome",
        \.detail: "skip_detail", \.due: "due_s", \.taken: "taken_s", \.late: "late",
      ], for: &self)
    delivered = delivery ? try column("delivered_s") : nil
  }

  func entry(_ result: PGResult, _ row: Int) throws -> LedgerEntry {
    guard let trial = result.int64(row, trial), let revision = result.int(row, revision),
      let offset = result.int64(row, offset), let outcomeText = result.string(row, outcome),
      let due = result.double(row, due), let taken = result.double(row, taken),
      let late = result.bool(row, late)
    else { throw PostgresStoreError.damaged("an unreadable row of \(table)") }
    return LedgerEntry(
      event: TrialEvent(
        id: PostgresRecords.eventID(trial: trial, revision: revision, offset: offset),
        due: PostgresRecords.date(due)),
      outcome: try PostgresRecords.outcome(outcomeText, detail: result.string(row, detail)),
      takenAt: PostgresRecords.date(taken), isLate: late,
      deliveredAt: delivered.flatMap { result.double(row, $0) }.map(PostgresRecords.date))
  }
}

/// The logged events of a result (`PostgresRecords.eventColumns`).
struct EventRows {
  let result: PGResult
  /// The log's generation, given to every cursor read.
  var generation: UInt32 = 0
  private let cursor, subject, attributes: Int
  private let entry: EntryColumns

  init(_ result: PGResult) throws {
    self.result = result
    let column = ColumnFinder(result: result, table: "trialwatch.event_log")
    cursor = try column("cursor")
    subject = try column("subject")
    attributes = try column("attributes")
    entry = try EntryColumns(result, table: "trialwatch.event_log", delivery: false)
  }

  /// The event at `row`; nil when its cursor is NULL (a row of an outer join with no event).
  func event(_ row: Int) throws -> LoggedEvent? {
    guard let rawCursor = result.int64(row, cursor) else { return nil }
    let cursor = EventCursor(UInt64(bitPattern: rawCursor), generation: generation)
    let name = "the row of trialwatch.event_log at cursor \(cursor)"
    guard let subject = result.string(row, subject) else {
      throw PostgresStoreError.damaged("\(name) is unreadable")
    }
    return LoggedEvent(
      cursor: cursor, entry: try entry.entry(result, row),
      attributes: try PostgresRecords.attributes(
        subject: subject, json: result.string(row, attributes), of: name))
  }
}

/// The consumers of a result (`PostgresRecords.consumerColumns`).
struct ConsumerRows {
  let result: PGResult
  /// The log's generation, given to every position read.
  var generation: UInt32 = 0
  private var name = 0, acknowledged = 0, created = 0, acknowledgedAt = 0, lost = 0, lostAt = 0

  init(_ result: PGResult) throws {
    self.result = result
    try ColumnFinder(result: result, table: "trialwatch.consumer").find(
      [
        \.name: "name", \.acknowledged: "acknowledged", \.created: "created_s",
        \.acknowledgedAt: "acknowledged_s", \.lost: "lost", \.lostAt: "lost_s",
      ], for: &self)
  }

  func consumer(_ row: Int) throws -> ConsumerRecord {
    guard let name = result.string(row, name), let acknowledged = result.int64(row, acknowledged),
      let created = result.double(row, created), let lost = result.int64(row, lost)
    else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.consumer") }
    return ConsumerRecord(
      name: name, acknowledged: EventCursor(UInt64(bitPattern: acknowledged), generation: generation),
      createdAt: PostgresRecords.date(created),
      acknowledgedAt: result.double(row, acknowledgedAt).map(PostgresRecords.date),
      lost: UInt64(bitPattern: lost), lostAt: result.double(row, lostAt).map(PostgresRecords.date))
  }
}
