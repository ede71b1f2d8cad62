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
  var trialWrites: [TrialID: Trial] = [:]
  var trialOrder: [TrialID] = []
  /// Trials read from the database, kept for this transaction (nil: none of that id).
  var trialReads: [TrialID: Trial?] = [:]
  var ledgerReads: [EventID: LedgerEntry?] = [:]
  var ledgerInserts: [EventID: LedgerEntry] = [:]
  var ledgerInsertOrder: [EventID] = []
  var ledgerUpdates: [EventID: LedgerEntry] = [:]
  var logBase: Int64?
  var logAppends: [LoggedEvent] = []
  /// How many of `logAppends` were sent.
  var flushedLog = 0
  var consumerWrites: [String: ConsumerRecord?] = [:]
  var lastSeen: Date?
  /// The epochs the fence confirmed, by shard.
  private(set) var fenced: [Int: Int64] = [:]
  /// Trials written, to wake their owners (`NOTIFY`) once committed.
  var changedTrials: [TrialID] = []

  let refusesEarlyFires: Bool

  init(connection: PGConnection, owned: [Int: Int64], shards: ShardMap, node: String, refusesEarlyFires: Bool)
  {
    self.shards = shards
    self.node = node
    self.refusesEarlyFires = refusesEarlyFires
    super.init(connection: connection, owned: owned, node: node)
  }

  // MARK: Statements

  /// Whether `BEGIN` was sent: it goes with the transaction's first statement, in the same
  /// round trip.
  private(set) var begun = false

  @discardableResult
  override func query(_ sql: String, _ parameters: [String?] = []) throws -> PGResult {
    guard begun else { return try pipeline([(sql, parameters)])[0] }
    return try connection.execute(sql, parameters)
  }

  /// Runs statements in one round trip (`PGConnection.pipeline`), after `BEGIN` when the
  /// transaction has not begun yet; returns their results.
  @discardableResult
  func pipeline(_ statements: [Statement]) throws -> [PGResult] {
    guard !begun else { return try connection.pipeline(statements) }
    begun = true
    return Array(try connection.pipeline([("BEGIN", [])] + statements).dropFirst())
  }

  // MARK: The fence

  /// Keeps the due events of shards this node owns at the epoch it knows, and only those due
  /// by the database's clock; reads the trials and ledger entries `take` will look at in the
  /// same round trip (`pipeline`).
  func admit(_ due: [DueEvent]) throws -> [DueEvent] {
    let candidates = due.filter { owned[shards.shard(of: $0.event.trialID)] != nil }
    let wanted = Set(candidates.map { shards.shard(of: $0.event.trialID) }).sorted()
    guard !wanted.isEmpty else { return [] }
    let trialIDs = Set(candidates.map(\.event.trialID)).filter {
      trialReads[$0] == nil && trialWrites[$0] == nil
    }
    let eventIDs = candidates.map(\.event.id).filter { ledgerReads[$0] == nil && ledgerInserts[$0] == nil }
    let results = try pipeline([
      (
        """
        SELECT s.shard, s.epoch, trialwatch.now_s()
        FROM trialwatch.shard s JOIN unnest($1::integer[], $2::bigint[]) AS f(shard, epoch) USING (shard)
        JOIN trialwatch.node n ON n.node_id = s.owner
        WHERE n.name = $3 AND s.epoch = f.epoch
        FOR SHARE OF s
        """, [PGArray.literal(wanted), PGArray.literal(wanted.map { owned[$0]! }), node]
      ),
      Self.trialsStatement(trialIDs), Self.ledgerStatement(eventIDs),
      // Where the log stands, for the cursors `appendEvent` returns.
      ("SELECT last FROM trialwatch.log_head", []),
    ])
    if logBase == nil { logBase = results[3].int64(0, 0) }
    let fence = results[0]
    var databaseNow = -Double.infinity
    for row in 0..<fence.rows {
      guard let shard = fence.int(row, 0), let epoch = fence.int64(row, 1), let now = fence.double(row, 2)
      else { continue }
      fenced[shard] = epoch
      databaseNow = now
    }
    for id in trialIDs { trialReads[id] = .some(nil) }
    for trial in try PostgresRecords.trials(results[1]) { trialReads[trial.id] = trial }
    for id in eventIDs { ledgerReads[id] = .some(nil) }
    for entry in try PostgresRecords.ledgerEntries(results[2]) { ledgerReads[entry.id] = entry }
    let now = PostgresRecords.date(databaseNow)
    return candidates.filter {
      fenced[shards.shard(of: $0.event.trialID)] != nil && (!refusesEarlyFires || $0.event.due <= now)
    }
  }

  func prefetch(_ ids: [EventID]) throws {
    let unread = ids.filter { ledgerReads[$0] == nil && ledgerInserts[$0] == nil }
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
      // before an earlier one: the server gives them in the statement that writes the rows,
      // sent with the commit (`flushHead`), the head's row locked only while it carries them
      // out. The cursors returned here are read from the head as it stands: when another
      // node commits appends first, the log gives these events the cursors after its. (The
      // engine of a fleet node reads the log for its observers, never these.)
      let head = try query("SELECT last FROM trialwatch.log_head")
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
      "UPDATE trialwatch.log_head SET pruned_through = greatest(pruned_through, least($1, last)), kept = kept - $2",
      [through, String(removed)])
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

  typealias Statement = (sql: String, parameters: [String?])

  /// Sends the writes but the log's: trials, ledger, consumers, and `then`, in one round
  /// trip (`pipeline`). Returns the results of `then`.
  @discardableResult
  func flushRows(then: [Statement] = []) throws -> [PGResult] {
    var statements: [Statement] = []
    flushTrials(into: &statements)
    flushLedger(into: &statements)
    flushConsumers(into: &statements)
    guard !statements.isEmpty else {
      return try then.map { try query($0.sql, $0.parameters) }
    }
    return Array(try pipeline(statements + then).suffix(then.count))
  }

  /// Sends what the log has pending, before a read that must see it.
  func flushHead() throws {
    guard let (statement, count) = headStatement() else { return }
    let result = try query(statement.sql, statement.parameters)
    guard count > 0 else { return }
    guard let base = result.int64(0, 0) else {
      throw PostgresStoreError.damaged("trialwatch.log_head is empty")
    }
    // Appends later in this transaction follow the cursors the server gave.
    logBase = base - Int64(flushedLog)
    flushedLog = logAppends.count
  }

  /// Sends every pending write, `also` (the wake-ups, made once the writes are known), the
  /// log's statement and the commit, in one round trip. Nothing when nothing was written.
  func commit(also: (PostgresWriteTransaction) -> [Statement]) throws {
    var statements: [Statement] = []
    flushTrials(into: &statements)
    flushLedger(into: &statements)
    flushConsumers(into: &statements)
    statements += also(self)
    if let (statement, _) = headStatement() {
      statements.append(statement)
      flushedLog = logAppends.count
    }
    guard begun || !statements.isEmpty else { return }
    try pipeline(statements + [("COMMIT", [])])
  }

}
