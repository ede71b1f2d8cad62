import Dispatch
import FoundationEssentials
import Synchronization
import TrialCore

/// The trial store of a fleet, in PostgreSQL: the same operations as the file store
/// (`TrialRepository`), on one writer connection (the engine's) and a small pool of
/// reader connections for reads from any thread. A write that changed trials or grew the
/// event log wakes the other nodes with `NOTIFY` (`trialwatch_trials`, `trialwatch_log`)
/// in its commit; the notification is only a wake-up, never the record.
public final class PostgresTrialRepository: TrialRepository, @unchecked Sendable {
  // @unchecked: the connections are guarded by their mutexes.
  public let shards: ShardMap
  public let node: String
  public let ownership: ShardOwnership
  private let conninfo: String
  /// Refuses to record an event before it is due by the database's clock (the fleet's one
  /// clock). Off only for tests that run the engine in virtual time.
  public let refusesEarlyFires: Bool
  /// What opening it did, for the log (`StoreServices`); set once, before it is used.
  var notes: [StoreNote] = []
  private let writer: Mutex<PGConnection?>
  private let readers = Mutex<[PGConnection]>([])
  /// Reader connections kept for reuse; more may be open at once, briefly.
  static let pooledReaders = 8
  /// Channels of the wake-ups.
  public static let trialsChannel = "trialwatch_trials"
  public static let logChannel = "trialwatch_log"
  /// The largest payload `NOTIFY` takes is 8000 bytes; trial ids go in chunks below it.
  static let payloadLimit = 7_800

  /// Connects the writer. The schema must exist (`PostgresSchema.prepare`).
  public init(
    conninfo: String, node: String, shards: ShardMap, ownership: ShardOwnership = ShardOwnership(),
    refusesEarlyFires: Bool = true
  ) throws {
    self.conninfo = conninfo
    self.refusesEarlyFires = refusesEarlyFires
    self.node = node
    self.shards = shards
    self.ownership = ownership
    self.writer = Mutex(try Self.connect(conninfo, node: node))
  }

  /// A connection for the store or the membership. A statement never waits long on a lock
  /// or a stuck server; a transaction left idle (its process paused in the middle: SIGSTOP,
  /// a frozen VM) is ended by the server after `idleInTransaction`, which frees the rows it
  /// locked (the fence's shard rows) for the node taking over. A failed write is retried by
  /// the engine. `node` names the connection's writes in the trial counts
  /// (`trialwatch.trial_count`, schema version 3).
  static func connect(
    _ conninfo: String, node: String? = nil, idleInTransaction: Duration = .seconds(1)
  ) throws -> PGConnection {
    let connection = try PGConnection(conninfo: conninfo)
    let name = node.map { "SET trialwatch.node = \(connection.quoteLiteral($0));" } ?? ""
    try connection.executeScript(
      """
      SET statement_timeout = '10s'; SET lock_timeout = '5s';
      SET idle_in_transaction_session_timeout = '\(idleInTransaction.roundedMilliseconds)ms'; \(name)
      """)
    return connection
  }

  // MARK: Transactions

  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try readTransaction(body)
  }

  /// A read transaction as this store makes it, for the reads only a fleet makes. A read is
  /// repeated once on a new connection when the old one was lost (the server restarted):
  /// reads change nothing.
  func readTransaction<R>(_ body: (PostgresReadTransaction) throws -> R) throws -> R {
    do {
      return try readOnce(body)
    } catch let error as PGError where error.isConnectionLoss {
      return try readOnce(body)
    }
  }

  private func readOnce<R>(_ body: (PostgresReadTransaction) throws -> R) throws -> R {
    try withReader { connection in
      try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      let result = try body(
        PostgresReadTransaction(connection: connection, owned: ownership.owned, node: node))
      try connection.execute("COMMIT")
      return result
    }
  }

  /// Runs one statement that changes nothing on a reader connection, as a transaction of its
  /// own (no `BEGIN` and `COMMIT`: one round trip); once more on a new connection when the
  /// old one was lost.
  func readStatement(_ sql: String, _ parameters: [String?] = []) throws -> PGResult {
    do {
      return try withReader { try $0.execute(sql, parameters) }
    } catch let error as PGError where error.isConnectionLoss {
      return try withReader { try $0.execute(sql, parameters) }
    }
  }

  /// Lends `body` a reader connection from the pool (or a new one), and takes it back when it
  /// is still fit for use: connected, and out of any transaction `body` left open.
  private func withReader<R>(_ body: (PGConnection) throws -> R) throws -> R {
    // Reads may page through large tables: a longer allowance between their statements.
    let connection =
      try readers.withLock { $0.popLast() }
      ?? Self.connect(conninfo, node: node, idleInTransaction: .seconds(10))
    var healthy = true
    defer {
      if healthy { readers.withLock { if $0.count < Self.pooledReaders { $0.append(connection) } } }
    }
    do {
      return try body(connection)
    } catch {
      if let error = error as? PGError, error.isConnectionLoss {
        healthy = false
      } else {
        healthy = (try? connection.execute("ROLLBACK")) != nil
      }
      throw error
    }
  }

  /// How many times `write` runs its body when another node changed what it read before it
  /// could commit (`runsAgain`).
  static let writeAttempts = 3

  /// Runs `body` again, in a new transaction, when the database refuses its commit because
  /// another node changed what it read: committed an active trial of a subject it starts
  /// (after `body` read the subject as free), or changed a trial it writes (after `body` read
  /// it). The next run reads what is there now, so that only the command the change concerns
  /// fails (`subjectAlreadyActive`, `notActive`) or sees it (an extension of an extended
  /// trial), not every command of the transaction, and a fire of a trial that moved is left
  /// out. After `writeAttempts` runs, the error is `translate`d.
  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try writer.withLock { slot in
      var attempt = 1
      while true {
        do {
          return try writeOnce(body, on: &slot)
        } catch let error as PGError where Self.runsAgain(error) && attempt < Self.writeAttempts {
          attempt += 1
        } catch {
          throw Self.translate(error)
        }
      }
    }
  }

  /// One run of `body` and its commit on the writer connection (`slot`, connected first when
  /// it is not); rolled back when it fails.
  private func writeOnce<R>(
    _ body: (any TrialWriteTransaction) throws -> R, on slot: inout PGConnection?
  ) throws -> sending R {
    let connection: PGConnection
    if let existing = slot, existing.isConnected {
      connection = existing
    } else {
      slot = nil
      connection = try Self.connect(conninfo, node: node)
      slot = connection
    }
    do {
      // BEGIN goes with the transaction's first statement.
      let txn = PostgresWriteTransaction(
        connection: connection, owned: ownership.owned, shards: shards, node: node,
        refusesEarlyFires: refusesEarlyFires)
      let result = try body(txn)
      // The writes, the wake-ups, the log (its head's row locked only while the server
      // carries these out) and the commit, in one round trip.
      try txn.commit(notifying: trialNotifications)
      return result
    } catch {
      if let error = error as? PGError, error.needsNewSession {
        slot = nil
      } else if (try? connection.execute("ROLLBACK")) == nil {
        slot = nil
      }
      throw error
    }
  }

  /// The wake-ups for the owners of the trials written, sent at the commit.
  private func trialNotifications(_ txn: PostgresWriteTransaction) -> [PostgresWriteTransaction.Notification]
  {
    var notifications: [PostgresWriteTransaction.Notification] = []
    var payload = ""
    func send() {
      guard !payload.isEmpty else { return }
      notifications.append((Self.trialsChannel, node + " " + payload))
      payload = ""
    }
    // Every trial a command wrote: its shard may change hands while the command commits, and
    // then only the wake-up tells the new owner. A fire's trial is left out: the fence held
    // its shard for the transaction, and the owner that fired it plans it.
    for id in Set(txn.changedTrials).sorted() where txn.fenced[shards.shard(of: id)] == nil {
      if payload.utf8.count > Self.payloadLimit { send() }
      payload += payload.isEmpty ? id.description : "," + id.description
    }
    send()
    return notifications
  }

  /// Whether `error` is the refusal of a second active trial of one subject (two nodes
  /// starting it at once).
  /// Whether a failed write is run again: another node took the subject of a trial it starts,
  /// or changed a trial it read (`trialwatch.written`: a serialization failure).
  static func runsAgain(_ error: PGError) -> Bool {
    isActiveSubjectRace(error) || error.sqlState == "40001"
  }

  static func isActiveSubjectRace(_ error: PGError) -> Bool {
    guard error.sqlState == "23505", case .server(_, let message, _) = error else { return false }
    return message.contains("trial_open_subject") || message.contains("trial_active_subject")
  }

  /// A second active trial of one subject (two nodes starting it at once) is the error the
  /// caller knows; any other database error travels as it is.
  static func translate(_ error: any Error) -> any Error {
    guard let error = error as? PGError, isActiveSubjectRace(error) else { return error }
    return TrialError.invalid(.subject, "another node started a trial for this subject at the same moment")
  }

  // MARK: Restoring shards

  /// Every active trial of the shards this node owns, with the events already taken; the
  /// counts are the whole fleet's.
  public func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    var summary = RestoreSummary()
    summary.byState = try counts()
    summary.trials = summary.byState.values.reduce(0, +)
    try restore(shards: Set(ownership.owned.keys), into: &planner)
    // The trials come in one read; progress is reported as the count passes each step.
    if progressEvery > 0 {
      for step in stride(from: progressEvery, through: summary.trials, by: progressEvery) { progress(step) }
    }
    return summary
  }

  /// Plans the open trials of `shards` (another node's until now): every event of the
  /// current revision not yet in the ledger. Returns how many trials were planned.
  @discardableResult
  public func restore(shards: Set<Int>, into planner: inout Planner) throws -> Int {
    guard !shards.isEmpty else { return 0 }
    return try readTransaction { txn in
      let list = [PGArray.literal(shards.sorted())]
      let trials = try txn.query(
        """
        SELECT \(PostgresRecords.trialColumns) FROM trialwatch.trial
        WHERE (state IN ('active', 'paused', 'grace') OR follow_ups_ms IS NOT NULL) AND shard = ANY($1::integer[])
        """, list)
      let taken = try txn.query(
        """
        SELECT l.trial_id, l.revision, l.offset_ms FROM trialwatch.ledger l
        JOIN trialwatch.trial t ON t.trial_id = l.trial_id AND t.revision = l.revision
        WHERE (t.state IN ('active', 'paused', 'grace') OR t.follow_ups_ms IS NOT NULL)
          AND t.shard = ANY($1::integer[])
        """, list)
      var done = Set<EventID>()
      for row in 0..<taken.rows {
        guard let trial = taken.int64(row, 0), let revision = taken.int(row, 1),
          let offset = taken.int64(row, 2)
        else { continue }
        done.insert(PostgresRecords.eventID(trial: trial, revision: revision, offset: offset))
      }
      planner.reserveCapacity(trials: planner.trialCount + trials.rows)
      let rows = try TrialRows(trials)
      for row in 0..<trials.rows {
        planner.restore(try rows.trial(row)) { done.contains($0) }
      }
      return trials.rows
    }
  }

  /// The entries of `shards` taken but not delivered, by nodes other than `nodes` (those
  /// deliver their own), in id order: a shard's new owner delivers what a dead node took.
  public func undelivered(shards: Set<Int>, takenByOtherThan nodes: Set<String>) throws -> [LedgerEntry] {
    guard !shards.isEmpty else { return [] }
    return try readTransaction { txn in
      let result = try txn.query(
        """
        SELECT \(PostgresRecords.entryColumns) FROM trialwatch.ledger
        WHERE delivered_s IS NULL AND shard = ANY($1::integer[]) AND NOT (coalesce(node, '') = ANY($2::text[]))
        """, [PGArray.literal(shards.sorted()), PGArray.literal(nodes.sorted().map { Optional($0) })])
      return try PostgresRecords.ledgerEntries(result).sorted { $0.id < $1.id }
    }
  }

  /// Trials by state, over the whole fleet: the sums of the counts the writes keep
  /// (`trialwatch.trial_count`), a few rows a node, read in one statement. States without a
  /// trial are left out.
  public func counts() throws -> [TrialState: Int] {
    let result = try readStatement(
      "SELECT state, sum(n)::bigint FROM trialwatch.trial_count GROUP BY state HAVING sum(n) <> 0")
    var counts: [TrialState: Int] = [:]
    for row in 0..<result.rows {
      guard let state = result.string(row, 0).flatMap(TrialState.init), let count = result.int(row, 1) else {
        continue
      }
      counts[state] = count
    }
    return counts
  }

  /// Active trials by plan, over the whole fleet, in one statement over the active trials.
  public func activeTrialsByPlan() throws -> [String: Int] {
    let result = try readStatement(
      """
      SELECT attributes->>'plan', count(*) FROM trialwatch.trial
        WHERE state = 'active' AND attributes ? 'plan' GROUP BY 1
      """)
    var counts: [String: Int] = [:]
    for row in 0..<result.rows {
      guard let plan = result.string(row, 0), let count = result.int(row, 1) else { continue }
      counts[plan] = count
    }
    return counts
  }
}
