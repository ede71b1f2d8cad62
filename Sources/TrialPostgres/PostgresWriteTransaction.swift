import FoundationEssentials
import TrialCore

/// A write transaction on the shared store. Writes are kept in memory and sent at the
/// commit (or before a scan) as one statement of set-based pieces, whatever their number
/// (`writesStatement`); reads see them first. `admit` fences a fire: it locks the rows of
/// the shards this node owns, at the epochs it knows, until the commit, so that a takeover
/// waits for the commit and every later commit of this node for those shards finds its
/// epoch gone.
///
/// A wake that takes events costs two round trips: `BEGIN`, the fence and the trials with
/// their ledger entries (`admit`), then the writes and `COMMIT`.
final class PostgresWriteTransaction: PostgresReadTransaction, TrialWriteTransaction {
  let shards: ShardMap
  let node: String

  /// The changes of trials' states written (`TrialWriteTransaction.transitions`).
  private(set) var transitions: [TrialTransition] = []

  func noteTransition(_ transition: TrialTransition) { transitions.append(transition) }
  var trialWrites: [TrialID: Trial] = [:]
  var trialOrder: [TrialID] = []
  /// Trials read from the database, kept for this transaction (nil: none of that id).
  var trialReads: [TrialID: Trial?] = [:]
  /// The revision and state of each trial as this transaction first found it in the database:
  /// its write is an update of that version only (another node may have changed it since; the
  /// transaction then fails and runs again). Absent: not read before it was written.
  var trialBases: [TrialID: TrialBase] = [:]

  struct TrialBase: Hashable {
    var revision: UInt32
    var state: TrialState
  }
  var ledgerReads: [EventID: LedgerEntry?] = [:]
  var ledgerInserts: [EventID: LedgerEntry] = [:]
  var ledgerInsertOrder: [EventID] = []
  var ledgerUpdates: [EventID: LedgerEntry] = [:]
  /// Deliveries of entries not read, sent as they are: the database gives them only to
  /// entries still undelivered (`markDelivered`). Never of an id the other ledger
  /// dictionaries hold.
  var ledgerMarks: [EventID: Date] = [:]
  var logBase: Int64?
  var logAppends: [LoggedEvent] = []
  /// How many of `logAppends` were sent.
  var flushedLog = 0
  var consumerWrites: [String: ConsumerRecord?] = [:]
  /// Uses recorded (or removed: nil) by this transaction, by `useKey`.
  var useWrites: [String: SubjectUse?] = [:]
  /// The last trial of each use as this transaction first read it from the database, by
  /// `useKey`: its write is an update of that version only (`writeUses`).
  var useBases: [String: TrialID] = [:]
  /// Ended trials to remove with their ledger entries (`TrialRetention`).
  var trialRemovals: [TrialID] = []
  /// Changes to the conversion figures, added to their rows with the commit.
  var cohortWrites: [CohortKey: CohortCounts] = [:]
  /// Webhook endpoints' states and pending events put (`PostgresWebhooks`).
  var webhookWrites = WebhookWrites()
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
  /// by the database's clock. In the same round trip (`pipeline`), reads the trials `take`
  /// will look at, each with the offsets of its current revision's ledger entries: an event
  /// of that revision whose entry is not among them is known to be absent, and no entry is
  /// read.
  func admit(_ due: [DueEvent]) throws -> [DueEvent] {
    let candidates = due.filter { owned[shards.shard(of: $0.event.trialID)] != nil }
    let wanted = Set(candidates.map { shards.shard(of: $0.event.trialID) }).sorted()
    guard !wanted.isEmpty else { return [] }
    let trialIDs = Set(candidates.map(\.event.trialID)).filter {
      trialReads[$0] == nil && trialWrites[$0] == nil
    }
    var statements = [
      // One row whatever is fenced: the shards and epochs locked, then the database's clock
      // and where the log stands (for the cursors `appendEvent` returns), read once the
      // locks are held.
      (
        """
        SELECT array_agg(f.shard), array_agg(f.epoch), trialwatch.now_s(), (SELECT last FROM trialwatch.log_head),
          \(PostgresRecords.generationColumn)
        FROM (
          SELECT s.shard, s.epoch
          FROM trialwatch.shard s JOIN unnest($1::integer[], $2::bigint[]) AS f(shard, epoch) USING (shard)
          JOIN trialwatch.node n ON n.node_id = s.owner
          WHERE n.name = $3 AND s.epoch = f.epoch
          FOR SHARE OF s) f
        """, [PGArray.literal(wanted), PGArray.literal(wanted.map { owned[$0]! }), node]
      )
    ]
    if !trialIDs.isEmpty {
      statements.append(
        (
          """
          SELECT \(PostgresRecords.trialColumns), ARRAY(
            SELECT l.offset_ms FROM trialwatch.ledger l WHERE l.trial_id = t.trial_id AND l.revision = t.revision)
            AS taken_offsets
          FROM trialwatch.trial t WHERE t.trial_id = ANY($1::bigint[])
          """, [PGArray.literal(trialIDs.map { Int64(bitPattern: $0.rawValue) })]
        ))
    }
    let results = try pipeline(statements)
    let fence = results[0]
    if logBase == nil { logBase = fence.int64(0, 3) }
    if generation == nil { generation = try PostgresRecords.generation(fence.string(0, 4)) }
    let locked = zip(
      fence.string(0, 0).flatMap(PGArray.int64s) ?? [], fence.string(0, 1).flatMap(PGArray.int64s) ?? [])
    for (shard, epoch) in locked { fenced[Int(shard)] = epoch }
    let now = PostgresRecords.date(fence.double(0, 2) ?? -.infinity)
    if !trialIDs.isEmpty { try readTrials(results[1], ids: trialIDs, for: candidates) }
    return candidates.filter {
      fenced[shards.shard(of: $0.event.trialID)] != nil && (!refusesEarlyFires || $0.event.due <= now)
    }
  }

  /// Keeps the trials `admit` read (of `ids`), and the ledger entries of `candidates` known
  /// to be absent: those of their trial's current revision whose offset is not in the ledger.
  private func readTrials(_ result: PGResult, ids: Set<TrialID>, for candidates: [DueEvent]) throws {
    for id in ids { trialReads[id] = .some(nil) }
    var taken: [TrialID: Set<Int64>] = [:]
    let trials = try TrialRows(result)
    let takenColumn = result.column(named: "taken_offsets")
    for row in 0..<result.rows {
      let trial = try trials.trial(row)
      guard let offsets = takenColumn.flatMap({ result.string(row, $0) }).flatMap(PGArray.int64s) else {
        throw PostgresStoreError.damaged("an unreadable ledger of trial \(trial.id)")
      }
      trialReads[trial.id] = trial
      trialBases[trial.id] = TrialBase(revision: trial.revision, state: trial.state)
      taken[trial.id] = Set(offsets)
    }
    for id in candidates.map(\.event.id) {
      guard let offsets = taken[id.trialID], trialReads[id.trialID]??.revision == id.revision,
        !offsets.contains(PostgresRecords.offset(of: id.kind)), !ledgerHolds(id)
      else { continue }
      ledgerReads[id] = .some(nil)
    }
  }

  /// Whether this transaction knows of the ledger entry `id`: read, written or marked.
  private func ledgerHolds(_ id: EventID) -> Bool {
    ledgerReads[id] != nil || ledgerInserts[id] != nil || ledgerUpdates[id] != nil || ledgerMarks[id] != nil
  }

  // MARK: Reads through the writes

  override func trial(_ id: TrialID) throws -> Trial? {
    if let written = trialWrites[id] { return written }
    if let read = trialReads[id] { return read }
    let trial = try super.trial(id)
    trialReads[id] = trial
    if let trial { trialBases[id] = TrialBase(revision: trial.revision, state: trial.state) }
    return trial
  }

  override func activeTrialID(subject: String) throws -> TrialID? {
    if let written = trialWrites.values.first(where: { $0.subject == subject && $0.isOpen }) {
      return written.id
    }
    guard let id = try super.activeTrialID(subject: subject) else { return nil }
    if let written = trialWrites[id], !written.isOpen || written.subject != subject { return nil }
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
    // A delivery sent unread becomes one of an entry read.
    if let at = ledgerMarks.removeValue(forKey: id), var marked = entry, marked.deliveredAt == nil {
      marked.deliveredAt = at
      ledgerUpdates[id] = marked
      return marked
    }
    return entry
  }

  override func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] {
    var entries = Dictionary(uniqueKeysWithValues: try super.ledgerEntries(trial: trial).map { ($0.id, $0) })
    for (id, at) in ledgerMarks where id.trialID == trial && entries[id]?.deliveredAt == nil {
      entries[id]?.deliveredAt = at
    }
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

  override func webhookEndpoint(named name: String) throws -> WebhookEndpointState? {
    if let written = webhookWrites.endpoints[name] { return try stampedWebhook(written.state) }
    return try super.webhookEndpoint(named: name)
  }

  override func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
    try flush()
    try super.scanWebhookEndpoints(body)
  }

  override func scanWebhookEvents(
    endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool
  ) throws {
    try flush()
    try super.scanWebhookEvents(endpoint: endpoint, after: after, body)
  }

  override func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
    let place = Self.useKey(scope, key)
    if let written = useWrites[place] { return written }
    let use = try super.subjectUse(scope: scope, key: key)
    if let use, useBases[place] == nil { useBases[place] = use.lastTrial }
    return use
  }

  override func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
    try flush()
    try super.scanSubjectUses(after: after, body)
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

  /// Deliveries of entries this transaction knows are applied here; the others are sent
  /// unread (`ledgerMarks`), so that recording them reads nothing.
  func markDelivered(_ deliveries: [(id: EventID, at: Date)]) throws {
    for (id, at) in deliveries {
      if var entry = ledgerInserts[id] ?? ledgerUpdates[id] ?? ledgerReads[id].flatMap({ $0 }) {
        guard entry.deliveredAt == nil else { continue }
        entry.deliveredAt = at
        try putLedgerEntry(entry)
      } else if !ledgerHolds(id) {
        ledgerMarks[id] = at
      }
    }
  }

  func setLastSeenWallTime(_ date: Date) throws {
    lastSeen = date
  }

  func appendEvent(_ entry: LedgerEntry, attributes: TrialAttributes) throws -> LoggedEvent {
    if logBase == nil {
      // Cursors follow the order of commits, so that a reader never sees a later cursor
      // before an earlier one: the server gives them in the statement that writes the rows,
      // sent with the commit (`flushHead`), the head's row locked only while it carries them
      // out. The cursors returned here are read from the head as it stands: when another
      // node commits appends first, the log gives these events the cursors after its. (The
      // engine of a fleet node reads the log for its observers, never these.)
      let head = try query("SELECT last, \(PostgresRecords.generationColumn) FROM trialwatch.log_head")
      guard let last = head.int64(0, 0) else {
        throw PostgresStoreError.damaged("trialwatch.log_head is empty")
      }
      logBase = last
      if generation == nil { generation = try PostgresRecords.generation(head.string(0, 1)) }
    }
    let cursor = EventCursor(
      UInt64(bitPattern: logBase!) + UInt64(logAppends.count) + 1, generation: try logGeneration().number)
    // The log keeps the entry as taken, without its delivery.
    var kept = entry
    kept.deliveredAt = nil
    let logged = LoggedEvent(cursor: cursor, entry: kept, attributes: attributes)
    logAppends.append(logged)
    return logged
  }

  func setLogGeneration(_ generation: LogGeneration) throws {
    try flush()
    try query(
      """
      INSERT INTO trialwatch.meta (key, value) VALUES ('log_generation', $1)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value
      """, [generation.record])
    self.generation = generation
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

  func removeTrial(_ id: TrialID) throws {
    guard let trial = try self.trial(id), trial.state.isEnded else { return }
    trialRemovals.append(id)
    trialReads[id] = .some(nil)
  }

  func putSubjectUse(_ use: SubjectUse) throws {
    useWrites[Self.useKey(use.scope, use.key)] = .some(use)
  }

  func removeSubjectUse(scope: SubjectUse.Scope, key: String) throws -> Bool {
    guard try subjectUse(scope: scope, key: key) != nil else { return false }
    useWrites[Self.useKey(scope, key)] = .some(nil)
    return true
  }

  // MARK: Sending the writes

  typealias Statement = (sql: String, parameters: [String?])

  /// Sends every write kept so far (before a read that must see them).
  func flush() throws {
    guard let (statement, events) = writesStatement() else { return }
    let result = try query(statement.sql, statement.parameters)
    guard events > 0 else { return }
    guard let base = result.int64(0, 0) else {
      throw PostgresStoreError.damaged("trialwatch.log_head is empty")
    }
    // Appends later in this transaction follow the cursors the server gave.
    logBase = base - Int64(flushedLog)
    flushedLog = logAppends.count
  }

  /// Sends every pending write, with `notifying`'s wake-ups, and commits: in one round trip,
  /// the writes in one statement (`writesStatement`). A transaction that has not begun and
  /// has writes sends that statement alone, a transaction of its own. Nothing when nothing
  /// was written.
  func commit(notifying: (PostgresWriteTransaction) -> [Notification]) throws {
    let writes = writesStatement(notifying: notifying)?.statement
    flushedLog = logAppends.count
    if begun {
      try pipeline((writes.map { [$0] } ?? []) + [("COMMIT", [])])
    } else if let writes {
      try connection.execute(writes.sql, writes.parameters)
    }
  }
}
