import Foundation
import TrialCore

/// A write transaction on the shared store. Writes are kept in memory and sent at the
/// commit (or before a scan) as a few set-based statements, whatever their number; reads
/// see them first. `admit` fences a fire: it locks the rows of the shards this node owns,
/// at the epochs it knows, until the commit, so that a takeover waits for the commit and
/// every later commit of this node for those shards finds its epoch gone.
final class PostgresWriteTransaction: PostgresReadTransaction, TrialWriteTransaction {
  let shards: ShardMap
  let node: String
  private var trialWrites: [TrialID: Trial] = [:]
  private var trialOrder: [TrialID] = []
  /// Trials read from the database, kept for this transaction (nil: none of that id).
  private var trialReads: [TrialID: Trial?] = [:]
  private var ledgerReads: [EventID: LedgerEntry?] = [:]
  private var ledgerInserts: [EventID: LedgerEntry] = [:]
  private var ledgerInsertOrder: [EventID] = []
  private var ledgerUpdates: [EventID: LedgerEntry] = [:]
  private var logBase: Int64?
  private var logAppends: [LoggedEvent] = []
  private var consumerWrites: [String: ConsumerRecord?] = [:]
  private var lastSeen: Date?
  /// The epochs the fence confirmed, by shard.
  private(set) var fenced: [Int: Int64] = [:]
  /// Trials written, to wake their owners (`NOTIFY`) once committed.
  private(set) var changedTrials: [TrialID] = []

  let refusesEarlyFires: Bool

  init(connection: PGConnection, owned: [Int: Int64], shards: ShardMap, node: String, refusesEarlyFires: Bool)
  {
    self.shards = shards
    self.node = node
    self.refusesEarlyFires = refusesEarlyFires
    super.init(connection: connection, owned: owned)
  }

  // MARK: The fence

  /// Keeps the due events of shards this node owns at the epoch it knows, and only those due
  /// by the database's clock; reads ahead the trials and ledger entries `take` will look at.
  func admit(_ due: [DueEvent]) throws -> [DueEvent] {
    let wanted = Set(due.map { shards.shard(of: $0.event.trialID) }).filter { owned[$0] != nil }.sorted()
    guard !wanted.isEmpty else { return [] }
    let result = try query(
      """
      SELECT s.shard, s.epoch, trialwatch.now_s()
      FROM trialwatch.shard s JOIN unnest($1::integer[], $2::bigint[]) AS f(shard, epoch) USING (shard)
      JOIN trialwatch.node n ON n.node_id = s.owner
      WHERE n.name = $3 AND s.epoch = f.epoch
      FOR SHARE OF s
      """, [PGArray.literal(wanted), PGArray.literal(wanted.map { owned[$0]! }), node])
    var databaseNow = -Double.infinity
    for row in 0..<result.rows {
      guard let shard = result.int(row, 0), let epoch = result.int64(row, 1), let now = result.double(row, 2)
      else { continue }
      fenced[shard] = epoch
      databaseNow = now
    }
    let now = PostgresRecords.date(databaseNow)
    let admitted = due.filter {
      fenced[shards.shard(of: $0.event.trialID)] != nil && (!refusesEarlyFires || $0.event.due <= now)
    }
    try prefetch(trials: Set(admitted.map(\.event.trialID)), events: admitted.map(\.event.id))
    return admitted
  }

  func prefetch(_ ids: [EventID]) throws {
    try prefetch(trials: [], events: ids)
  }

  private func prefetch(trials ids: Set<TrialID>, events: [EventID]) throws {
    let missing = ids.filter { trialReads[$0] == nil && trialWrites[$0] == nil }
    for id in missing { trialReads[id] = .some(nil) }
    for trial in try trials(missing) { trialReads[trial.id] = trial }
    let unread = events.filter { ledgerReads[$0] == nil && ledgerInserts[$0] == nil }
    for id in unread { ledgerReads[id] = .some(nil) }
    for entry in try ledgerEntries(unread) { ledgerReads[entry.id] = entry }
  }

  // MARK: Reads through the writes

  override func trial(_ id: TrialID) throws -> Trial? {
    if let written = trialWrites[id] { return written }
    if let read = trialReads[id] { return read }
    let trial = try super.trial(id)
    trialReads[id] = trial
    return trial
  }

  override func activeTrialID(subject: String) throws -> TrialID? {
    if let written = trialWrites.values.first(where: { $0.subject == subject && $0.isActive }) {
      return written.id
    }
    guard let id = try super.activeTrialID(subject: subject) else { return nil }
    if let written = trialWrites[id], !written.isActive || written.subject != subject { return nil }
    return id
  }

  override func latestTrialID(subject: String) throws -> TrialID? {
    if let id = trialOrder.last(where: { trialWrites[$0]?.subject == subject }) { return id }
    return try super.latestTrialID(subject: subject)
  }

  override func ledgerEntry(_ id: EventID) throws -> LedgerEntry? {
    if let entry = ledgerInserts[id] ?? ledgerUpdates[id] { return entry }
    if let read = ledgerReads[id] { return read }
    let entry = try super.ledgerEntry(id)
    ledgerReads[id] = entry
    return entry
  }

  override func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] {
    var entries = Dictionary(uniqueKeysWithValues: try super.ledgerEntries(trial: trial).map { ($0.id, $0) })
    for (id, entry) in ledgerInserts where id.trialID == trial { entries[id] = entry }
    for (id, entry) in ledgerUpdates where id.trialID == trial { entries[id] = entry }
    return entries.values.sorted { $0.id < $1.id }
  }

  override func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws {
    try flush()
    try super.scanTrials(after: after, body)
  }

  override func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws {
    try flush()
    try super.scanOutbox(body)
  }

  override func lastSeenWallTime() throws -> Date? {
    try flush()
    return try super.lastSeenWallTime()
  }

  override func eventLogBounds() throws -> EventLogBounds {
    try flush()
    return try super.eventLogBounds()
  }

  override func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws {
    try flush()
    try super.scanEvents(after: after, body)
  }

  override func consumer(named name: String) throws -> ConsumerRecord? {
    if let written = consumerWrites[name] { return written }
    return try super.consumer(named: name)
  }

  override func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws {
    try flush()
    try super.scanConsumers(body)
  }

  // MARK: Writes

  func putTrial(_ trial: Trial) throws {
    if trialWrites.updateValue(trial, forKey: trial.id) == nil { trialOrder.append(trial.id) }
  }

  func putLedgerEntry(_ entry: LedgerEntry) throws {
    if ledgerInserts[entry.id] != nil {
      ledgerInserts[entry.id] = entry
    } else if try ledgerEntry(entry.id) != nil {
      ledgerUpdates[entry.id] = entry
    } else {
      ledgerInserts[entry.id] = entry
      ledgerInsertOrder.append(entry.id)
    }
  }

  func setLastSeenWallTime(_ date: Date) throws {
    lastSeen = date
  }

  func appendEvent(_ entry: LedgerEntry, subject: String) throws -> LoggedEvent {
    if logBase == nil {
      // Cursors follow the order of commits, so that a reader never sees a later cursor
      // before an earlier one: the head row stays locked from here to the commit. The writes
      // kept so far go first, so that the lock is held only for the log's own statement and
      // the commit (`flushHead`), the other nodes' commits waiting on it the least.
      try flushRows()
      let head = try query("SELECT last FROM trialwatch.log_head FOR UPDATE")
      guard let last = head.int64(0, 0) else {
        throw PostgresStoreError.damaged("trialwatch.log_head is empty")
      }
      logBase = last
    }
    let cursor = EventCursor(UInt64(bitPattern: logBase!) + UInt64(logAppends.count) + 1)
    // The log keeps the entry as taken, without its delivery.
    var kept = entry
    kept.deliveredAt = nil
    let logged = LoggedEvent(cursor: cursor, entry: kept, subject: subject)
    logAppends.append(logged)
    return logged
  }

  func pruneEvents(through: EventCursor) throws -> Int {
    try flush()
    let through = String(min(through.sequence, UInt64(Int64.max)))
    let removed = try query("DELETE FROM trialwatch.event_log WHERE cursor <= $1", [through]).affectedRows
    try query(
      "UPDATE trialwatch.log_head SET pruned_through = greatest(pruned_through, least($1, last))", [through])
    return removed
  }

  func putConsumer(_ consumer: ConsumerRecord) throws {
    consumerWrites[consumer.name] = .some(consumer)
  }

  func removeConsumer(named name: String) throws -> Bool {
    guard try consumer(named: name) != nil else { return false }
    consumerWrites[name] = .some(nil)
    return true
  }

  // MARK: Sending the writes

  /// Sends every write kept so far (before a read that must see them).
  func flush() throws {
    try flushRows()
    try flushHead()
  }

  /// Sends the writes but the log's: trials, ledger, consumers.
  func flushRows() throws {
    try flushTrials()
    try flushLedger()
    try flushConsumers()
  }

  private func flushTrials() throws {
    guard !trialOrder.isEmpty else { return }
    let trials = trialOrder.map { trialWrites[$0]! }
    try query(
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
      ])
    for trial in trials {
      trialReads[trial.id] = trial
      changedTrials.append(trial.id)
    }
    trialWrites = [:]
    trialOrder = []
  }

  private func flushLedger() throws {
    if !ledgerInsertOrder.isEmpty {
      let entries = ledgerInsertOrder.map { ledgerInserts[$0]! }
      let outcomes = entries.map { PostgresRecords.outcome($0.outcome) }
      let epochs = entries.map { fenced[shards.shard(of: $0.event.trialID)].map(String.init) }
      try query(
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
        ])
      for entry in entries { ledgerReads[entry.id] = entry }
      ledgerInserts = [:]
      ledgerInsertOrder = []
    }
    if !ledgerUpdates.isEmpty {
      let entries = Array(ledgerUpdates.values)
      try query(
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
        ])
      for entry in entries { ledgerReads[entry.id] = entry }
      ledgerUpdates = [:]
    }
  }

  private var flushedLog = 0

  /// Sends the log's rows, moves its head (with the last wall time seen) and wakes the
  /// other nodes' log readers, in one statement.
  func flushHead() throws {
    let events = logAppends[flushedLog...]
    let seen = lastSeen.map(PostgresRecords.sql)
    lastSeen = nil
    guard let last = events.last else {
      if let seen { try query("UPDATE trialwatch.log_head SET last_seen_s = $1", [seen]) }
      return
    }
    let outcomes = events.map { PostgresRecords.outcome($0.entry.outcome) }
    try query(
      """
      WITH head AS (
        UPDATE trialwatch.log_head SET last = $11, last_seen_s = coalesce($12::float8, last_seen_s) RETURNING 1),
      rows AS (
        INSERT INTO trialwatch.event_log (cursor, trial_id, revision, offset_ms, subject, outcome, skip_detail,
          due_s, taken_s, late)
        SELECT c, t, r, o, subj, oc, d, due, tk, l
        FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::bigint[], $5::text[], $6::text[], $7::text[],
          $8::float8[], $9::float8[], $10::boolean[]) AS u(c, t, r, o, subj, oc, d, due, tk, l)
        RETURNING 1),
      wake AS (SELECT pg_notify($13, $11::text))
      SELECT (SELECT count(*) FROM head), (SELECT count(*) FROM rows), (SELECT count(*) FROM wake)
      """,
      [
        PGArray.literal(events.map { Int64(bitPattern: $0.cursor.sequence) }),
        PGArray.literal(events.map { Int64(bitPattern: $0.event.trialID.rawValue) }),
        PGArray.literal(events.map { Int64($0.event.revision) }),
        PGArray.literal(events.map { PostgresRecords.offset(of: $0.event.kind) }),
        PGArray.literal(events.map { Optional($0.subject) }),
        PGArray.literal(outcomes.map { Optional($0.text) }),
        PGArray.literal(outcomes.map(\.detail)),
        PGArray.literal(events.map { Optional(PostgresRecords.sql($0.event.due)) }),
        PGArray.literal(events.map { Optional(PostgresRecords.sql($0.takenAt)) }),
        PGArray.literal(events.map(\.isLate)),
        String(Int64(bitPattern: last.cursor.sequence)), seen, PostgresTrialRepository.logChannel,
      ])
    flushedLog = logAppends.count
  }

  private func flushConsumers() throws {
    for (name, consumer) in consumerWrites.sorted(by: { $0.key < $1.key }) {
      if let consumer {
        try query(
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
          ])
      } else {
        try query("DELETE FROM trialwatch.consumer WHERE name = $1", [name])
      }
    }
    consumerWrites = [:]
  }
}
