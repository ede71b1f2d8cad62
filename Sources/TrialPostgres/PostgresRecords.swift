import FoundationEssentials
import TrialCore

/// How the domain's values travel to and from the shared store's rows: ids as signed 64-bit
/// integers, times as microseconds since the Unix epoch, an event as (trial, revision,
/// offset in milliseconds, 0 for the expiry), outcomes as text.
enum PostgresRecords {
  // MARK: Scalars

  static func sql(_ id: TrialID) -> String { String(Int64(bitPattern: id.rawValue)) }
  static func trialID(_ value: Int64) -> TrialID { TrialID(UInt64(bitPattern: value)) }

  /// A time as the store keeps it: seconds since the reference date, exactly.
  static func sql(_ date: Date) -> String { "\(date.timeIntervalSinceReferenceDate)" }
  static func seconds(_ date: Date) -> Double { date.timeIntervalSinceReferenceDate }
  static func date(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

  static func offset(of kind: EventKind) -> Int64 {
    switch kind {
    case .expiry: 0
    case .reminder(let before): Int64(before.roundedMilliseconds)
    }
  }

  static func kind(offset: Int64) -> EventKind {
    offset == 0 ? .expiry : .reminder(before: .milliseconds(offset))
  }

  static func eventID(trial: Int64, revision: Int, offset: Int64) -> EventID {
    EventID(
      trialID: trialID(trial), revision: UInt32(truncatingIfNeeded: revision), kind: kind(offset: offset))
  }

  // MARK: Outcomes

  static func outcome(_ outcome: LedgerEntry.Outcome) -> (text: String, detail: String?) {
    switch outcome {
    case .fired: return ("fired", nil)
    case .skipped(let reason):
      let detail: String? =
        switch reason {
        case .supersededByReminder(let id): id.description
        case .beyondGrace(let lateness, let grace):
          "\(lateness.roundedMicroseconds)/\(grace.roundedMicroseconds)"
        default: nil
        }
      return ("skipped:" + reason.code, detail)
    }
  }

  static func outcome(_ text: String, detail: String?) throws -> LedgerEntry.Outcome {
    if text == "fired" { return .fired }
    guard text.hasPrefix("skipped:") else { throw PostgresStoreError.damaged("unknown outcome \(text)") }
    let parts = (detail ?? "").split(separator: "/").compactMap { Int64($0) }
    do {
      return .skipped(
        try SkipReason(
          code: String(text.dropFirst("skipped:".count)), supersededBy: detail.flatMap(EventID.init),
          lateness: parts.count == 2 ? .microseconds(parts[0]) : nil,
          grace: parts.count == 2 ? .microseconds(parts[1]) : nil))
    } catch {
      throw PostgresStoreError.damaged("unreadable outcome \(text) (\(detail ?? "no detail"))")
    }
  }

  // MARK: Rows

  /// The columns `trial(_:_:)` reads, in order.
  static let trialColumns = """
    trial_id, subject, state, revision, start_s, end_s, ended_s, reminders_ms
    """

  static func trial(_ result: PGResult, _ row: Int) throws -> Trial {
    guard let id = result.int64(row, 0), let subject = result.string(row, 1),
      let stateText = result.string(row, 2), let state = TrialState(rawValue: stateText),
      let revision = result.int(row, 3), let start = result.double(row, 4), let end = result.double(row, 5),
      let offsets = result.string(row, 7).flatMap(PGArray.int64s)
    else { throw PostgresStoreError.damaged("an unreadable trial row") }
    let reminders: ReminderSchedule
    do {
      reminders = try ReminderSchedule(offsets.map { .milliseconds($0) })
    } catch {
      throw PostgresStoreError.damaged("trial \(trialID(id)) has invalid reminders: \(error)")
    }
    return Trial(
      id: trialID(id), subject: subject, period: TrialPeriod(startDate: date(start), endDate: date(end)),
      state: state, reminders: reminders, revision: UInt32(truncatingIfNeeded: revision),
      endedAt: result.double(row, 6).map(date))
  }

  static func ledgerEntries(_ result: PGResult) throws -> [LedgerEntry] {
    try (0..<result.rows).map { try ledgerEntry(result, $0) }
  }

  /// The columns `ledgerEntry(_:_:)` reads, in order (a ledger row, or an event-log row
  /// joined to the ledger for `delivered_at`).
  static let entryColumns = """
    trial_id, revision, offset_ms, outcome, skip_detail, due_s, taken_s, late, delivered_s
    """

  /// The columns of a logged event, in the order `loggedEvent` reads them from its `column`:
  /// the cursor and subject, then a ledger entry's without its delivery (the log keeps none).
  static let eventColumns = """
    cursor, subject, trial_id, revision, offset_ms, outcome, skip_detail, due_s, taken_s, late,
      NULL::double precision
    """

  /// The logged event at `row` (`eventColumns` from `column`); nil when its cursor is NULL (a
  /// row of an outer join with no event).
  static func loggedEvent(_ result: PGResult, _ row: Int, from column: Int = 0) throws -> LoggedEvent? {
    guard let cursor = result.int64(row, column) else { return nil }
    guard let subject = result.string(row, column + 1) else {
      throw PostgresStoreError.damaged("an unreadable event log row")
    }
    let entry = try ledgerEntry(result, row, from: column + 2)
    return LoggedEvent(cursor: EventCursor(UInt64(bitPattern: cursor)), entry: entry, subject: subject)
  }

  /// The statement that reads one trial by id.
  static func trialStatement(_ id: TrialID) -> (sql: String, parameters: [String?]) {
    ("SELECT \(trialColumns) FROM trialwatch.trial WHERE trial_id = $1", [sql(id)])
  }

  static func ledgerEntry(_ result: PGResult, _ row: Int, from column: Int = 0) throws -> LedgerEntry {
    let c = column
    guard let trial = result.int64(row, c), let revision = result.int(row, c + 1),
      let offset = result.int64(row, c + 2), let outcomeText = result.string(row, c + 3),
      let due = result.double(row, c + 5), let taken = result.double(row, c + 6),
      let late = result.bool(row, c + 7)
    else { throw PostgresStoreError.damaged("an unreadable ledger row") }
    return LedgerEntry(
      event: TrialEvent(id: eventID(trial: trial, revision: revision, offset: offset), due: date(due)),
      outcome: try outcome(outcomeText, detail: result.string(row, c + 4)), takenAt: date(taken),
      isLate: late, deliveredAt: result.double(row, c + 8).map(date))
  }

  static let consumerColumns = """
    name, acknowledged, created_s, acknowledged_s, lost, lost_s
    """

  static func consumer(_ result: PGResult, _ row: Int) throws -> ConsumerRecord {
    guard let name = result.string(row, 0), let acknowledged = result.int64(row, 1),
      let created = result.double(row, 2), let lost = result.int64(row, 4)
    else { throw PostgresStoreError.damaged("an unreadable consumer row") }
    return ConsumerRecord(
      name: name, acknowledged: EventCursor(UInt64(bitPattern: acknowledged)), createdAt: date(created),
      acknowledgedAt: result.double(row, 3).map(date), lost: UInt64(bitPattern: lost),
      lostAt: result.double(row, 5).map(date))
  }

  /// The key columns' values of an event, as parameters.
  static func key(_ id: EventID) -> [String?] {
    [sql(id.trialID), String(id.revision), String(offset(of: id.kind))]
  }
}
