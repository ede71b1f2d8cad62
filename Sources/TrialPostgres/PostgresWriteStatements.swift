import FoundationEssentials
import TrialCore

/// One statement of data-modifying CTEs, written a piece at a time: each value bound is
/// appended to the parameters and stands in the text as the placeholder handed back.
///
/// Every data-modifying CTE runs to its end whether or not anything reads it; a plain
/// `SELECT` CTE (a wake-up) runs only when read, so the final `SELECT` reads each. The CTEs
/// share one snapshot: none sees the rows another inserted or updated, and no row is written
/// by two of them.
struct WriteQuery {
  private(set) var parameters: [String?] = []
  private var ctes: [String] = []
  /// The names of the data-modifying CTEs so far.
  private var writes: [String] = []
  /// What the final `SELECT` reads, after `first`.
  private var reads: [String] = []
  /// The final `SELECT`'s first column; NULL when nil.
  var first: String?

  var isEmpty: Bool { ctes.isEmpty }

  /// The placeholder of `value`, appended to the parameters.
  mutating func bind(_ value: String?) -> String {
    parameters.append(value)
    return "$\(parameters.count)"
  }

  /// Adds an `INSERT`, `UPDATE` or `DELETE` (without `RETURNING`), as a CTE `name`
  /// returning `returning`; returns the name.
  @discardableResult
  mutating func write(_ statement: String, named name: String? = nil, returning: String = "1") -> String {
    let name = name ?? "w\(ctes.count)"
    ctes.append("\(name) AS (\n\(statement)\nRETURNING \(returning))")
    writes.append(name)
    return name
  }

  /// Adds a `SELECT` that is run for its effect (`pg_notify`), as a CTE the final `SELECT`
  /// reads.
  mutating func call(_ select: String, named name: String? = nil) {
    let name = name ?? "w\(ctes.count)"
    ctes.append("\(name) AS (\(select))")
    reads.append("(SELECT count(*) FROM \(name))")
  }

  /// A condition that holds once every write added so far has run to its end: a statement
  /// that tests it waits for their row locks before taking its own (the log's head last, as
  /// every transaction takes it, so that none waits on another in a cycle).
  var afterWrites: String {
    writes.isEmpty ? "true" : writes.map { "(SELECT count(*) FROM \($0))" }.joined(separator: " + ") + " >= 0"
  }

  var statement: PostgresWriteTransaction.Statement {
    let columns = [first ?? "NULL::bigint"] + reads
    return (
      "WITH " + ctes.joined(separator: ",\n") + "\nSELECT " + columns.joined(separator: ", "), parameters
    )
  }
}

/// The pieces that send a write transaction's kept writes, each set-based: one or two per
/// table whatever the number of rows, all in one statement.
extension PostgresWriteTransaction {
  /// The columns of `trials` as array literals: id, shard, subject, state, revision, start,
  /// end, ended, reminders, attributes, paused since, paused until, extensions, cancel asked,
  /// cancel reminds, grace, follow-ups (NULL: none), milestones (NULL: none).
  static func trialColumns(_ trials: [Trial], shards: ShardMap) -> [String?] {
    [
      PGArray.literal(trials.map { Int64(bitPattern: $0.id.rawValue) }),
      PGArray.literal(trials.map { shards.shard(of: $0.id) }),
      PGArray.literal(trials.map { Optional($0.subject) }),
      PGArray.literal(trials.map { Optional($0.state.rawValue) }),
      PGArray.literal(trials.map { Int64($0.revision) }),
      PGArray.literal(trials.map { Optional(PostgresRecords.sql($0.period.startDate)) }),
      PGArray.literal(trials.map { Optional(PostgresRecords.sql($0.period.endDate)) }),
      PGArray.literal(trials.map { $0.endedAt.map(PostgresRecords.sql) }),
      PGArray.literal(
        trials.map { Optional(PGArray.literal($0.reminders.offsets.map(\.roundedMilliseconds))) }),
      PGArray.literal(trials.map { Optional(PostgresRecords.json($0.attributes)) }),
      PGArray.literal(trials.map { $0.pause.map { PostgresRecords.sql($0.since) } }),
      PGArray.literal(trials.map { $0.pause?.until.map(PostgresRecords.sql) }),
      PGArray.literal(trials.map { Int64($0.extensions) }),
      PGArray.literal(trials.map { $0.cancelMark.map { PostgresRecords.sql($0.askedAt) } }),
      PGArray.literal(trials.map { $0.cancelMark.map { $0.remindAfterCancel ? "t" : "f" } }),
      PGArray.literal(trials.map { $0.grace.roundedMilliseconds }),
      PGArray.literal(
        trials.map {
          $0.followUps.isEmpty ? nil : PGArray.literal($0.followUps.spans.map(\.roundedMilliseconds))
        }),
      PGArray.literal(
        trials.map {
          $0.milestones.isEmpty ? nil : PGArray.literal($0.milestones.spans.map(\.roundedMilliseconds))
        }),
    ]
  }

  typealias Notification = (channel: String, payload: String)

  /// The statement that sends every write kept so far, then `notifying`'s wake-ups (asked
  /// for once the trials are sent, `changedTrials`), then the log; nil when nothing is kept.
  /// Returns also how many log events it sends: its first column is then the log's head as
  /// it found it.
  func writesStatement(notifying: (PostgresWriteTransaction) -> [Notification] = { _ in [] })
    -> (statement: Statement, events: Int)?
  {
    var query = WriteQuery()
    writeTrials(into: &query)
    writeLedger(into: &query)
    writeConsumers(into: &query)
    writeUses(into: &query)
    writeRemovals(into: &query)
    writeCohorts(into: &query)
    writeWebhooks(into: &query)
    let notifications = notifying(self)
    if !notifications.isEmpty {
      let channels = query.bind(PGArray.literal(notifications.map { Optional($0.channel) }))
      let payloads = query.bind(PGArray.literal(notifications.map { Optional($0.payload) }))
      query.call("SELECT pg_notify(c, p) FROM unnest(\(channels)::text[], \(payloads)::text[]) AS n(c, p)")
    }
    let events = writeHead(into: &query)
    return query.isEmpty ? nil : (query.statement, events)
  }

  /// The trials this transaction read are updated only as it read them (revision and state):
  /// when another node changed one meanwhile, `trialwatch.written` fails the transaction as a
  /// serialization failure and the repository runs it again. The others (new trials, or
  /// written without a read) are inserted or replaced.
  func writeTrials(into query: inout WriteQuery) {
    guard !trialOrder.isEmpty else { return }
    let trials = trialOrder.map { trialWrites[$0]! }
    let updates = trials.filter { trialBases[$0.id] != nil }
    let upserts = trials.filter { trialBases[$0.id] == nil }
    if !upserts.isEmpty {
      let p = Self.trialColumns(upserts, shards: shards).map { query.bind($0) }
      query.write(
        """
        INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, ended_s,
          reminders_ms, attributes, paused_s, resume_s, extensions, cancel_s, cancel_reminds, grace_ms,
          follow_ups_ms, milestones_ms)
        SELECT t, s, subj, st, r, b, e, x, m::bigint[], a, ps, pu, n, cs, cr, g, f::bigint[], ms::bigint[]
        FROM unnest(\(p[0])::bigint[], \(p[1])::integer[], \(p[2])::text[], \(p[3])::text[], \(p[4])::integer[],
          \(p[5])::float8[], \(p[6])::float8[], \(p[7])::float8[], \(p[8])::text[], \(p[9])::jsonb[],
          \(p[10])::float8[], \(p[11])::float8[], \(p[12])::integer[], \(p[13])::float8[], \(p[14])::boolean[],
          \(p[15])::bigint[], \(p[16])::text[], \(p[17])::text[])
          AS u(t, s, subj, st, r, b, e, x, m, a, ps, pu, n, cs, cr, g, f, ms)
        ON CONFLICT (trial_id) DO UPDATE SET subject = excluded.subject, state = excluded.state,
          revision = excluded.revision, start_s = excluded.start_s, end_s = excluded.end_s,
          ended_s = excluded.ended_s, reminders_ms = excluded.reminders_ms, attributes = excluded.attributes,
          paused_s = excluded.paused_s, resume_s = excluded.resume_s, extensions = excluded.extensions,
          cancel_s = excluded.cancel_s, cancel_reminds = excluded.cancel_reminds, grace_ms = excluded.grace_ms,
          follow_ups_ms = excluded.follow_ups_ms, milestones_ms = excluded.milestones_ms
        """)
    }
    if !updates.isEmpty {
      // Every column but the shard, which a trial keeps.
      let p = Self.trialColumns(updates, shards: shards).enumerated().map {
        $0.offset == 1 ? "" : query.bind($0.element)
      }
      let bases = updates.map { trialBases[$0.id]! }
      let baseRevisions = query.bind(PGArray.literal(bases.map { Int64($0.revision) }))
      let baseStates = query.bind(PGArray.literal(bases.map { Optional($0.state.rawValue) }))
      let updated = query.write(
        """
        UPDATE trialwatch.trial AS t SET subject = u.subj, state = u.st, revision = u.r, start_s = u.b,
          end_s = u.e, ended_s = u.x, reminders_ms = u.m::bigint[], attributes = u.a, paused_s = u.ps,
          resume_s = u.pu, extensions = u.n, cancel_s = u.cs, cancel_reminds = u.cr, grace_ms = u.g,
          follow_ups_ms = u.f::bigint[], milestones_ms = u.ms::bigint[]
        FROM unnest(\(p[0])::bigint[], \(p[2])::text[], \(p[3])::text[], \(p[4])::integer[], \(p[5])::float8[],
          \(p[6])::float8[], \(p[7])::float8[], \(p[8])::text[], \(p[9])::jsonb[], \(p[10])::float8[],
          \(p[11])::float8[], \(p[12])::integer[], \(p[13])::float8[], \(p[14])::boolean[], \(p[15])::bigint[],
          \(p[16])::text[], \(p[17])::text[], \(baseRevisions)::integer[], \(baseStates)::text[])
          AS u(id, subj, st, r, b, e, x, m, a, ps, pu, n, cs, cr, g, f, ms, br, bs)
        WHERE t.trial_id = u.id AND t.revision = u.br AND t.state = u.bs
        """)
      query.call("SELECT trialwatch.written((SELECT count(*) FROM \(updated)), \(updates.count))")
    }
    for trial in trials {
      trialReads[trial.id] = trial
      // Written by this transaction, which holds the row from now on.
      trialBases[trial.id] = TrialBase(revision: trial.revision, state: trial.state)
      changedTrials.append(trial.id)
    }
    trialWrites = [:]
    trialOrder = []
  }

  /// The ledger's new entries, then its deliveries: those of entries read (`ledgerUpdates`)
  /// as they are, those sent unread (`ledgerMarks`) only to entries still undelivered. An
  /// entry inserted by this transaction is never among them (`putLedgerEntry`).
  func writeLedger(into query: inout WriteQuery) {
    if !ledgerInsertOrder.isEmpty {
      let entries = ledgerInsertOrder.map { ledgerInserts[$0]! }
      let outcomes = entries.map { PostgresRecords.outcome($0.outcome) }
      let p = [
        PGArray.literal(entries.map { Int64(bitPattern: $0.event.trialID.rawValue) }),
        PGArray.literal(entries.map { Int64($0.event.revision) }),
        PGArray.literal(entries.map { PostgresRecords.offset(of: $0.event.kind) }),
        PGArray.literal(entries.map { Optional($0.id.description) }),
        PGArray.literal(entries.map { shards.shard(of: $0.event.trialID) }),
        PGArray.literal(outcomes.map { Optional($0.text) }),
        PGArray.literal(outcomes.map(\.detail)),
        PGArray.literal(entries.map { Optional(PostgresRecords.sql($0.event.due)) }),
        PGArray.literal(entries.map { Optional(PostgresRecords.sql($0.takenAt)) }),
        PGArray.literal(entries.map(\.isLate)),
        PGArray.literal(entries.map { $0.deliveredAt.map(PostgresRecords.sql) }),
        PGArray.literal(entries.map { fenced[shards.shard(of: $0.event.trialID)].map(String.init) }),
        node,
      ].map { query.bind($0) }
      query.write(
        """
        INSERT INTO trialwatch.ledger (trial_id, revision, offset_ms, event_id, shard, kind, outcome, skip_detail,
          due_s, taken_s, late, delivered_s, node, epoch)
        SELECT t, r, o, id, s, CASE WHEN o = 0 THEN 'expiry' WHEN o = \(PostgresRecords.resumedBase) THEN 'grace-started' WHEN o > \(PostgresRecords.milestoneBase) THEN 'milestone' WHEN o > \(PostgresRecords.resumedBase) THEN 'follow-up' WHEN o > 0 THEN 'reminder' WHEN o >= -\(PostgresRecords.resumedBase) THEN 'paused' ELSE 'resumed' END, oc, d, due, tk, l, dl, \(p[12]), ep
        FROM unnest(\(p[0])::bigint[], \(p[1])::integer[], \(p[2])::bigint[], \(p[3])::text[], \(p[4])::integer[],
          \(p[5])::text[], \(p[6])::text[], \(p[7])::float8[], \(p[8])::float8[], \(p[9])::boolean[],
          \(p[10])::float8[], \(p[11])::bigint[]) AS u(t, r, o, id, s, oc, d, due, tk, l, dl, ep)
        """)
      for entry in entries { ledgerReads[entry.id] = entry }
      ledgerInserts = [:]
      ledgerInsertOrder = []
    }
    guard !ledgerUpdates.isEmpty || !ledgerMarks.isEmpty else { return }
    let updates = ledgerUpdates.values.sorted { $0.id < $1.id }
    let marks = ledgerMarks.sorted { $0.key < $1.key }
    let ids = updates.map(\.id) + marks.map(\.key)
    let p = [
      PGArray.literal(ids.map { Int64(bitPattern: $0.trialID.rawValue) }),
      PGArray.literal(ids.map { Int64($0.revision) }),
      PGArray.literal(ids.map { PostgresRecords.offset(of: $0.kind) }),
      PGArray.literal(
        updates.map { $0.deliveredAt.map(PostgresRecords.sql) } + marks.map { PostgresRecords.sql($0.value) }),
      PGArray.literal(updates.map { _ in false } + marks.map { _ in true }),
    ].map { query.bind($0) }
    query.write(
      """
      UPDATE trialwatch.ledger l SET delivered_s = u.d
      FROM unnest(\(p[0])::bigint[], \(p[1])::integer[], \(p[2])::bigint[], \(p[3])::float8[], \(p[4])::boolean[])
        AS u(t, r, o, d, unread)
      WHERE l.trial_id = u.t AND l.revision = u.r AND l.offset_ms = u.o AND (NOT u.unread OR l.delivered_s IS NULL)
      """)
    for entry in updates { ledgerReads[entry.id] = entry }
    ledgerUpdates = [:]
    // What the marks found is not known here: a later read asks the database.
    ledgerMarks = [:]
  }

  /// The log's rows, its head moved (with the last wall time seen) and the wake-up of the
  /// other nodes' log readers, for what is pending; only the last wall time when no event
  /// is. The server gives the rows their cursors, after the head as the statement finds it,
  /// so that no round trip goes before; the head's row is locked after every other write of
  /// the statement (`afterWrites`), until the commit. Returns how many events it sends.
  func writeHead(into query: inout WriteQuery) -> Int {
    let events = logAppends[flushedLog...]
    let seen = lastSeen.map(PostgresRecords.sql)
    lastSeen = nil
    let after = query.afterWrites
    guard !events.isEmpty else {
      if let seen {
        let time = query.bind(seen)
        query.write("UPDATE trialwatch.log_head SET last_seen_s = \(time)::float8 WHERE \(after)")
      }
      return 0
    }
    let outcomes = events.map { PostgresRecords.outcome($0.entry.outcome) }
    let p = [
      PGArray.literal(events.map { Int64(bitPattern: $0.event.trialID.rawValue) }),
      PGArray.literal(events.map { Int64($0.event.revision) }),
      PGArray.literal(events.map { PostgresRecords.offset(of: $0.event.kind) }),
      PGArray.literal(events.map { Optional($0.subject) }),
      PGArray.literal(outcomes.map { Optional($0.text) }),
      PGArray.literal(outcomes.map(\.detail)),
      PGArray.literal(events.map { Optional(PostgresRecords.sql($0.event.due)) }),
      PGArray.literal(events.map { Optional(PostgresRecords.sql($0.takenAt)) }),
      PGArray.literal(events.map(\.isLate)),
      PostgresTrialRepository.logChannel, seen,
      PGArray.literal(events.map { Optional(PostgresRecords.json($0.attributes)) }),
    ].map { query.bind($0) }
    query.write(
      """
      UPDATE trialwatch.log_head
      SET last = last + cardinality(\(p[0])::bigint[]), kept = kept + cardinality(\(p[0])::bigint[]),
        last_seen_s = coalesce(\(p[10])::float8, last_seen_s)
      WHERE \(after)
      """, named: "head", returning: "last - cardinality(\(p[0])::bigint[]) AS base, last")
    query.write(
      """
      INSERT INTO trialwatch.event_log (cursor, trial_id, revision, offset_ms, subject, outcome, skip_detail,
        due_s, taken_s, late, attributes)
      SELECT head.base + u.n, t, r, o, subj, oc, d, due, tk, l, a
      FROM head, unnest(\(p[0])::bigint[], \(p[1])::integer[], \(p[2])::bigint[], \(p[3])::text[],
        \(p[4])::text[], \(p[5])::text[], \(p[6])::float8[], \(p[7])::float8[], \(p[8])::boolean[],
        \(p[11])::jsonb[])
        WITH ORDINALITY AS u(t, r, o, subj, oc, d, due, tk, l, a, n)
      """, named: "log_rows")
    query.call("SELECT pg_notify(\(p[9]), (SELECT last FROM head)::text)", named: "log_wake")
    query.first = "(SELECT base FROM head)"
    return events.count
  }

  /// The consumers written, then those removed (a name is in one or the other).
  func writeConsumers(into query: inout WriteQuery) {
    let writes = consumerWrites.sorted { $0.key < $1.key }
    consumerWrites = [:]
    let kept = writes.compactMap(\.value)
    if !kept.isEmpty {
      let p = [
        PGArray.literal(kept.map { Optional($0.name) }),
        PGArray.literal(kept.map { Int64(bitPattern: $0.acknowledged.sequence) }),
        PGArray.literal(kept.map { Optional(PostgresRecords.sql($0.createdAt)) }),
        PGArray.literal(kept.map { $0.acknowledgedAt.map(PostgresRecords.sql) }),
        PGArray.literal(kept.map { Int64(bitPattern: $0.lost) }),
        PGArray.literal(kept.map { $0.lostAt.map(PostgresRecords.sql) }),
      ].map { query.bind($0) }
      query.write(
        """
        INSERT INTO trialwatch.consumer (name, acknowledged, created_s, acknowledged_s, lost, lost_s)
        SELECT * FROM unnest(\(p[0])::text[], \(p[1])::bigint[], \(p[2])::float8[], \(p[3])::float8[],
          \(p[4])::bigint[], \(p[5])::float8[])
        ON CONFLICT (name) DO UPDATE SET acknowledged = excluded.acknowledged,
          acknowledged_s = excluded.acknowledged_s, lost = excluded.lost, lost_s = excluded.lost_s
        """)
    }
    let removed = writes.filter { $0.value == nil }.map { Optional($0.key) }
    if !removed.isEmpty {
      let names = query.bind(PGArray.literal(removed))
      query.write("DELETE FROM trialwatch.consumer WHERE name = ANY(\(names)::text[])")
    }
  }
}
