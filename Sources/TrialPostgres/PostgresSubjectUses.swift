import FoundationEssentials
import TrialCore

// The records of subjects that had a trial granted once (`trialwatch.subject_use`, since
// schema version 6; the last start since version 10), read and written by the transactions.

extension PostgresRecords {
  static let useColumns =
    "scope, key, subject, plan, first_started_s, trial_id, last_started_s, last_trial_id"
}

/// The rows of a query of `useColumns`, columns found by name.
struct UseRows {
  let result: PGResult
  private var scope = 0, key = 0, subject = 0, plan = 0, started = 0, trial = 0, lastStarted = 0,
    lastTrial = 0

  init(_ result: PGResult) throws {
    self.result = result
    try ColumnFinder(result: result, table: "trialwatch.subject_use").find(
      [
        \.scope: "scope", \.key: "key", \.subject: "subject", \.plan: "plan", \.started: "first_started_s",
        \.trial: "trial_id", \.lastStarted: "last_started_s", \.lastTrial: "last_trial_id",
      ], for: &self)
  }

  func use(_ row: Int) throws -> SubjectUse {
    guard let scopeText = result.string(row, scope), let scope = SubjectUse.Scope(scopeText),
      let key = result.string(row, key), let subject = result.string(row, subject),
      let plan = result.string(row, plan), let started = result.double(row, started),
      let trial = result.int64(row, trial)
    else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.subject_use") }
    // A row a node of schema version 9 inserted has no last start: its first is its last.
    let lastStarted = result.double(row, lastStarted).map(PostgresRecords.date)
    let lastTrial = result.int64(row, lastTrial).map(PostgresRecords.trialID)
    return SubjectUse(
      scope: scope, key: key, subject: subject, plan: plan, firstStartedAt: PostgresRecords.date(started),
      trial: PostgresRecords.trialID(trial), lastStartedAt: lastTrial == nil ? nil : lastStarted,
      lastTrial: lastStarted == nil ? nil : lastTrial)
  }
}

extension PostgresReadTransaction {
  func readSubjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
    let result = try query(
      "SELECT \(PostgresRecords.useColumns) FROM trialwatch.subject_use WHERE scope = $1 AND key = $2",
      [scope.description, key])
    return result.rows == 0 ? nil : try UseRows(result).use(0)
  }

  func readSubjectUses(after start: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
    var after = start.map { ($0.scope.description, $0.key) }
    while true {
      let result =
        if let after {
          try query(
            """
            SELECT \(PostgresRecords.useColumns) FROM trialwatch.subject_use
            WHERE (scope COLLATE "C", key COLLATE "C") > ($1, $2)
            ORDER BY scope COLLATE "C", key COLLATE "C" LIMIT \(Self.page)
            """, [after.0, after.1])
        } else {
          try query(
            """
            SELECT \(PostgresRecords.useColumns) FROM trialwatch.subject_use
            ORDER BY scope COLLATE "C", key COLLATE "C" LIMIT \(Self.page)
            """)
        }
      let rows = try UseRows(result)
      for row in 0..<result.rows {
        let use = try rows.use(row)
        guard try body(use) else { return }
        after = (use.scope.description, use.key)
      }
      guard result.rows == Self.page else { return }
    }
  }
}

extension PostgresWriteTransaction {
  /// The ended trials removed, with their ledger entries (a row that reads active is left).
  func writeRemovals(into query: inout WriteQuery) {
    guard !trialRemovals.isEmpty else { return }
    let ids = query.bind(PGArray.literal(trialRemovals.map { Int64(bitPattern: $0.rawValue) }))
    trialRemovals = []
    query.write("DELETE FROM trialwatch.ledger WHERE trial_id = ANY(\(ids)::bigint[])")
    query.write(
      "DELETE FROM trialwatch.trial WHERE trial_id = ANY(\(ids)::bigint[]) AND state NOT IN ('active', 'paused', 'grace')"
    )
  }

  static func useKey(_ scope: SubjectUse.Scope, _ key: String) -> String { "\(scope)\u{0}\(key)" }

  /// Uses recorded by this transaction are inserted only where none is: a use another node
  /// recorded meanwhile (the same subject, started on two nodes at once) makes the insert
  /// write fewer rows than it was given, and `trialwatch.written` fails the transaction as a
  /// serialization failure; run again, it finds the use and refuses the start. A use this
  /// transaction read, then wrote (a start after a cooldown), is updated only where its last
  /// trial is still the one read: another node's start after the same cooldown fails it the
  /// same way. Removed uses are deleted.
  func writeUses(into query: inout WriteQuery) {
    let writes = useWrites.sorted { $0.key < $1.key }
    useWrites = [:]
    let bases = useBases
    useBases = [:]
    let kept = writes.compactMap(\.value)
    let inserts = kept.filter { bases[Self.useKey($0.scope, $0.key)] == nil }
    let updates = kept.filter { bases[Self.useKey($0.scope, $0.key)] != nil }
    for (rows, update) in [(inserts, false), (updates, true)] where !rows.isEmpty {
      var p = [
        PGArray.literal(rows.map { Optional($0.scope.description) }),
        PGArray.literal(rows.map { Optional($0.key) }),
        PGArray.literal(rows.map { Optional($0.subject) }),
        PGArray.literal(rows.map { Optional($0.plan) }),
        PGArray.literal(rows.map { Optional(PostgresRecords.sql($0.firstStartedAt)) }),
        PGArray.literal(rows.map { Int64(bitPattern: $0.trial.rawValue) }),
        PGArray.literal(rows.map { Optional(PostgresRecords.sql($0.lastStartedAt)) }),
        PGArray.literal(rows.map { Int64(bitPattern: $0.lastTrial.rawValue) }),
      ]
      if update {
        p.append(
          PGArray.literal(rows.map { Int64(bitPattern: bases[Self.useKey($0.scope, $0.key)]!.rawValue) }))
      }
      let b = p.map { query.bind($0) }
      let columns = """
        unnest(\(b[0])::text[], \(b[1])::text[], \(b[2])::text[], \(b[3])::text[], \(b[4])::float8[],
          \(b[5])::bigint[], \(b[6])::float8[], \(b[7])::bigint[]\(update ? ", \(b[8])::bigint[]" : ""))
        """
      let written = query.write(
        update
          ? """
          UPDATE trialwatch.subject_use u SET subject = r.subject, plan = r.plan, first_started_s = r.first_s,
            trial_id = r.trial_id, last_started_s = r.last_s, last_trial_id = r.last_id
          FROM \(columns) AS r(scope, key, subject, plan, first_s, trial_id, last_s, last_id, base)
          WHERE u.scope = r.scope AND u.key = r.key AND coalesce(u.last_trial_id, u.trial_id) = r.base
          """
          : """
          INSERT INTO trialwatch.subject_use (scope, key, subject, plan, first_started_s, trial_id, last_started_s,
            last_trial_id)
          SELECT * FROM \(columns)
          ON CONFLICT (scope, key) DO NOTHING
          """)
      query.call("SELECT trialwatch.written((SELECT count(*) FROM \(written)), \(rows.count))")
    }
    let removed = writes.filter { $0.value == nil }.map { $0.key.split(separator: "\u{0}", maxSplits: 1) }
    if !removed.isEmpty {
      let scopes = query.bind(PGArray.literal(removed.map { Optional(String($0[0])) }))
      let keys = query.bind(PGArray.literal(removed.map { Optional($0.count > 1 ? String($0[1]) : "") }))
      query.write(
        """
        DELETE FROM trialwatch.subject_use u USING unnest(\(scopes)::text[], \(keys)::text[]) AS r(scope, key)
        WHERE u.scope = r.scope AND u.key = r.key
        """)
    }
  }
}
