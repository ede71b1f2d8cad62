import FoundationEssentials
import TrialCore

// The records of subjects that had a trial granted once (`trialwatch.subject_use`, since
// schema version 6), read and written by the transactions.

extension PostgresRecords {
  static let useColumns = "scope, key, subject, plan, first_started_s, trial_id"
}

/// The rows of a query of `useColumns`, columns found by name.
struct UseRows {
  let result: PGResult
  private var scope = 0, key = 0, subject = 0, plan = 0, started = 0, trial = 0

  init(_ result: PGResult) throws {
    self.result = result
    try ColumnFinder(result: result, table: "trialwatch.subject_use").find(
      [
        \.scope: "scope", \.key: "key", \.subject: "subject", \.plan: "plan", \.started: "first_started_s",
        \.trial: "trial_id",
      ], for: &self)
  }

  func use(_ row: Int) throws -> SubjectUse {
    guard let scopeText = result.string(row, scope), let scope = SubjectUse.Scope(scopeText),
      let key = result.string(row, key), let subject = result.string(row, subject),
      let plan = result.string(row, plan), let started = result.double(row, started),
      let trial = result.int64(row, trial)
    else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.subject_use") }
    return SubjectUse(
      scope: scope, key: key, subject: subject, plan: plan, firstStartedAt: PostgresRecords.date(started),
      trial: PostgresRecords.trialID(trial))
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
  /// serialization failure; run again, it finds the use and refuses the start. Removed uses
  /// are deleted.
  func writeUses(into query: inout WriteQuery) {
    let writes = useWrites.sorted { $0.key < $1.key }
    useWrites = [:]
    let kept = writes.compactMap(\.value)
    if !kept.isEmpty {
      let p = [
        PGArray.literal(kept.map { Optional($0.scope.description) }),
        PGArray.literal(kept.map { Optional($0.key) }),
        PGArray.literal(kept.map { Optional($0.subject) }),
        PGArray.literal(kept.map { Optional($0.plan) }),
        PGArray.literal(kept.map { Optional(PostgresRecords.sql($0.firstStartedAt)) }),
        PGArray.literal(kept.map { Int64(bitPattern: $0.trial.rawValue) }),
      ].map { query.bind($0) }
      let inserted = query.write(
        """
        INSERT INTO trialwatch.subject_use (scope, key, subject, plan, first_started_s, trial_id)
        SELECT * FROM unnest(\(p[0])::text[], \(p[1])::text[], \(p[2])::text[], \(p[3])::text[],
          \(p[4])::float8[], \(p[5])::bigint[])
        ON CONFLICT (scope, key) DO NOTHING
        """)
      query.call("SELECT trialwatch.written((SELECT count(*) FROM \(inserted)), \(kept.count))")
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
