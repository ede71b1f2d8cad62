import Foundation
import TrialCore

/// The statements that send a write transaction's kept writes, each set-based: one per table
/// whatever the number of rows.
extension PostgresWriteTransaction {
  func flushTrials(into statements: inout [Statement]) {
    guard !trialOrder.isEmpty else { return }
    let trials = trialOrder.map { trialWrites[$0]! }
    statements.append(
      (
        """
        INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, ended_s,
          reminders_ms)
        SELECT t, s, subj, st, r, b, e, x, m::bigint[]
        FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::text[], $5::integer[], $6::float8[],
          $7::float8[], $8::float8[], $9::text[]) AS u(t, s, subj, st, r, b, e, x, m)
        ON CONFLICT (trial_id) DO UPDATE SET subject = excluded.subject, state = excluded.state,
          revision = excluded.revision, start_s = excluded.start_s, end_s = excluded.end_s,
          ended_s = excluded.ended_s, reminders_ms = excluded.reminders_ms
        """,
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
        ]
      ))
    for trial in trials {
      trialReads[trial.id] = trial
      changedTrials.append(trial.id)
    }
    trialWrites = [:]
    trialOrder = []
  }

  func flushLedger(into statements: inout [Statement]) {
    if !ledgerInsertOrder.isEmpty {
      let entries = ledgerInsertOrder.map { ledgerInserts[$0]! }
      let outcomes = entries.map { PostgresRecords.outcome($0.outcome) }
      let epochs = entries.map { fenced[shards.shard(of: $0.event.trialID)].map(String.init) }
      statements.append(
        (
          """
          INSERT INTO trialwatch.ledger (trial_id, revision, offset_ms, event_id, shard, kind, outcome, skip_detail,
            due_s, taken_s, late, delivered_s, node, epoch)
          SELECT t, r, o, id, s, CASE WHEN o = 0 THEN 'expiry' ELSE 'reminder' END, oc, d, due, tk, l, dl, $13, ep
          FROM unnest($1::bigint[], $2::integer[], $3::bigint[], $4::text[], $5::integer[], $6::text[], $7::text[],
            $8::float8[], $9::float8[], $10::boolean[], $11::float8[], $12::bigint[])
            AS u(t, r, o, id, s, oc, d, due, tk, l, dl, ep)
          """,
          [
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
            PGArray.literal(epochs),
            node,
          ]
        ))
      for entry in entries { ledgerReads[entry.id] = entry }
      ledgerInserts = [:]
      ledgerInsertOrder = []
    }
    if !ledgerUpdates.isEmpty {
      let entries = Array(ledgerUpdates.values)
      statements.append(
        (
          """
          UPDATE trialwatch.ledger l SET delivered_s = u.d
          FROM unnest($1::bigint[], $2::integer[], $3::bigint[], $4::float8[]) AS u(t, r, o, d)
          WHERE l.trial_id = u.t AND l.revision = u.r AND l.offset_ms = u.o
          """,
          [
            PGArray.literal(entries.map { Int64(bitPattern: $0.event.trialID.rawValue) }),
            PGArray.literal(entries.map { Int64($0.event.revision) }),
            PGArray.literal(entries.map { PostgresRecords.offset(of: $0.event.kind) }),
            PGArray.literal(entries.map { $0.deliveredAt.map(PostgresRecords.sql) }),
          ]
        ))
      for entry in entries { ledgerReads[entry.id] = entry }
      ledgerUpdates = [:]
    }
  }

  /// The statement that sends the log's rows, moves its head (with the last wall time seen)
  /// and wakes the other nodes' log readers, for what is pending; nil when nothing is. The
  /// server gives the rows their cursors, after the head as the statement finds it, so that
  /// it needs no round trip before, and the head's row is locked only from this statement to
  /// the commit. Returns the events it sends.
  func headStatement() -> (statement: Statement, events: Int)? {
    let events = logAppends[flushedLog...]
    let seen = lastSeen.map(PostgresRecords.sql)
    lastSeen = nil
    guard !events.isEmpty else {
      return seen.map { (("UPDATE trialwatch.log_head SET last_seen_s = $1", [$0]), 0) }
    }
    let outcomes = events.map { PostgresRecords.outcome($0.entry.outcome) }
    return (
      (
        """
        WITH head AS (
          UPDATE trialwatch.log_head
          SET last = last + cardinality($1::bigint[]), kept = kept + cardinality($1::bigint[]),
            last_seen_s = coalesce($11::float8, last_seen_s)
          RETURNING last - cardinality($1::bigint[]) AS base, last),
        rows AS (
          INSERT INTO trialwatch.event_log (cursor, trial_id, revision, offset_ms, subject, outcome, skip_detail,
            due_s, taken_s, late)
          SELECT head.base + u.n, t, r, o, subj, oc, d, due, tk, l
          FROM head, unnest($1::bigint[], $2::integer[], $3::bigint[], $4::text[], $5::text[], $6::text[],
            $7::float8[], $8::float8[], $9::boolean[]) WITH ORDINALITY AS u(t, r, o, subj, oc, d, due, tk, l, n)
          RETURNING 1),
        wake AS (SELECT pg_notify($10, (SELECT last FROM head)::text))
        SELECT (SELECT base FROM head), (SELECT count(*) FROM rows), (SELECT count(*) FROM wake)
        """,
        [
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
        ]
      ), events.count
    )
  }

  func flushConsumers(into statements: inout [Statement]) {
    for (name, consumer) in consumerWrites.sorted(by: { $0.key < $1.key }) {
      if let consumer {
        statements.append(
          (
            """
            INSERT INTO trialwatch.consumer (name, acknowledged, created_s, acknowledged_s, lost, lost_s)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (name) DO UPDATE SET acknowledged = excluded.acknowledged,
              acknowledged_s = excluded.acknowledged_s, lost = excluded.lost, lost_s = excluded.lost_s
            """,
            [
              name, String(Int64(bitPattern: consumer.acknowledged.sequence)),
              PostgresRecords.sql(consumer.createdAt),
              consumer.acknowledgedAt.map(PostgresRecords.sql), String(Int64(bitPattern: consumer.lost)),
              consumer.lostAt.map(PostgresRecords.sql),
            ]
          ))
      } else {
        statements.append(("DELETE FROM trialwatch.consumer WHERE name = $1", [name]))
      }
    }
    consumerWrites = [:]
  }
}
