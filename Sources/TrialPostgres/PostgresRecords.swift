import FoundationEssentials
import TrialCore

/// How the domain's values travel to and from the shared store's rows: ids as signed 64-bit
/// integers, times as microseconds since the Unix epoch, an event as (trial, revision,
/// `offset_ms`: a reminder's offset in milliseconds, 0 for the expiry, minus the time left for
/// a pause, minus 2^62 minus the time left for a resume, 2^62 (above every reminder's) for the
/// start of grace, 2^62 plus the span for a follow-up, 2^62 plus 2^60 plus the span for a
/// milestone), outcomes as text.
enum PostgresRecords {
  // MARK: Scalars

  /// The log's generation as a column of a statement: its record in `trialwatch.meta`
  /// (`LogGeneration.record`), NULL for generation 0.
  static let generationColumn = "(SELECT value FROM trialwatch.meta WHERE key = 'log_generation')"

  /// The generation of a `generationColumn` value.
  static func generation(_ text: String?) throws -> LogGeneration {
    guard let text else { return .initial }
    guard let generation = LogGeneration(record: text) else {
      throw PostgresStoreError.damaged("trialwatch.meta's log_generation is unreadable: \"\(text)\"")
    }
    return generation
  }

  static func sql(_ id: TrialID) -> String { String(Int64(bitPattern: id.rawValue)) }
  static func trialID(_ value: Int64) -> TrialID { TrialID(UInt64(bitPattern: value)) }

  /// A time as the store keeps it: seconds since the reference date, exactly.
  static func sql(_ date: Date) -> String { "\(date.timeIntervalSinceReferenceDate)" }
  static func seconds(_ date: Date) -> Double { date.timeIntervalSinceReferenceDate }
  static func date(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

  /// What `offset_ms` adds to a resume's time left (negated), to tell it from the pause of the
  /// same revision, which has the same.
  static let resumedBase = Int64(EventID.maximumMilliseconds)
  /// A milestone's `offset_ms` less its span: above every follow-up's.
  static let milestoneBase = resumedBase + Int64(EventID.maximumFollowUpMilliseconds)

  static func offset(of kind: EventKind) -> Int64 {
    switch kind {
    case .expiry: 0
    case .graceStarted: resumedBase
    case .followUp(let after): resumedBase + after.roundedMilliseconds
    case .milestone(let after): milestoneBase + after.roundedMilliseconds
    case .reminder(let before): before.roundedMilliseconds
    case .paused(let left): -left.roundedMilliseconds
    case .resumed(let left): -resumedBase - left.roundedMilliseconds
    }
  }

  static func kind(offset: Int64) -> EventKind {
    switch offset {
    case 0: .expiry
    case resumedBase: .graceStarted
    case (milestoneBase + 1)...: .milestone(after: .milliseconds(offset - milestoneBase))
    case (resumedBase + 1)...: .followUp(after: .milliseconds(offset - resumedBase))
    case 1...: .reminder(before: .milliseconds(offset))
    case (-resumedBase)...: .paused(left: .milliseconds(-offset))
    default: .resumed(left: .milliseconds(-(offset + resumedBase)))
    }
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

  /// The columns a trial is read from (`TrialRows`, by name).
  static let trialColumns = """
    trial_id, subject, state, revision, start_s, end_s, ended_s, reminders_ms, attributes, paused_s, resume_s,
    extensions, cancel_s, cancel_reminds, grace_ms, follow_ups_ms, milestones_ms
    """

  /// The columns a ledger entry is read from (`EntryColumns`, by name): of a ledger row, or of
  /// an event-log row with the ledger's `delivered_s`.
  static let entryColumns = """
    trial_id, revision, offset_ms, outcome, skip_detail, due_s, taken_s, late, delivered_s
    """

  /// The columns a logged event is read from (`EventRows`, by name): a ledger entry's without
  /// its delivery (the log keeps none), its cursor and its trial's attributes at the time.
  static let eventColumns = """
    cursor, subject, attributes, trial_id, revision, offset_ms, outcome, skip_detail, due_s, taken_s, late
    """

  static let consumerColumns = """
    name, acknowledged, created_s, acknowledged_s, lost, lost_s
    """

  /// The statement that reads one trial by id.
  static func trialStatement(_ id: TrialID) -> (sql: String, parameters: [String?]) {
    ("SELECT \(trialColumns) FROM trialwatch.trial WHERE trial_id = $1", [sql(id)])
  }

  static func trials(_ result: PGResult) throws -> [Trial] {
    let rows = try TrialRows(result)
    return try (0..<result.rows).map { try rows.trial($0) }
  }

  static func ledgerEntries(_ result: PGResult) throws -> [LedgerEntry] {
    let columns = try EntryColumns(result, table: "trialwatch.ledger")
    return try (0..<result.rows).map { try columns.entry(result, $0) }
  }

  /// The attributes of a row of `subject`, from its `attributes` column (`AttributeJSON`).
  /// - Throws: `PostgresStoreError.damaged` naming `row` when the column is NULL or not an
  ///   object of text, or when the labels in it are refused.
  static func attributes(subject: String, json: String?, of row: @autoclosure () -> String) throws
    -> TrialAttributes
  {
    guard let json else { throw PostgresStoreError.damaged("\(row()) has no attributes") }
    let fields: [(name: String, value: String)]
    do {
      fields = try AttributeJSON.fields(json)
    } catch {
      throw PostgresStoreError.damaged("\(row()) has unreadable attributes: \(error)")
    }
    do {
      return try TrialAttributes(subject: subject, storedFields: fields)
    } catch {
      throw PostgresStoreError.damaged("\(row()) has invalid attributes: \(error)")
    }
  }

  /// A trial's attributes as its row keeps them (`AttributeJSON`).
  static func json(_ attributes: TrialAttributes) -> String {
    AttributeJSON.object(attributes.storedFields)
  }

  /// The key columns' values of an event, as parameters.
  static func key(_ id: EventID) -> [String?] {
    [sql(id.trialID), String(id.revision), String(offset(of: id.kind))]
  }
}
