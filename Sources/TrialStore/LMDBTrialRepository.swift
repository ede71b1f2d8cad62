import FoundationEssentials
import Glibc
import TrialCore

/// Counts and sizes of an open store, read in constant time.
public struct StoreStatistics: Hashable, Sendable {
  public var trials: Int
  public var activeTrials: Int
  public var ledgerEntries: Int
  /// Entries taken but not yet delivered.
  public var outboxEntries: Int
  /// Events kept in the event log.
  public var loggedEvents: Int
  /// The event log's newest cursor, and how far it has been pruned.
  public var logLast: EventCursor
  public var logPrunedThrough: EventCursor
  /// Consumers of the event log.
  public var consumers: Int
  /// Bytes of the store file.
  public var fileSize: Int
  /// Bytes of address space reserved for the file; grows on demand.
  public var mapSize: Int
  /// The store's schema version (1 for a store of an earlier version read as it is).
  public var schema: UInt32
}

/// The trial repository kept in an LMDB file store: one directory holding `data.mdb` (mode
/// 0600) and `lock.mdb`. Key layout, record encoding and durability: docs/store-format.md.
///
/// Every write transaction is durable when `write` returns. One process opens a store at a
/// time (an exclusive lock on the directory); within the process the repository may be used
/// from any thread. Read transactions run at once, on as many threads as call `read`, each on
/// its own LMDB snapshot, alongside the one write transaction: a read never waits for a
/// commit (its `fdatasync`). Writes run one at a time. Growing the map (when a write finds it
/// full) and closing wait for the reads in progress and hold new ones back meanwhile; a read
/// beyond LMDB's reader slots (`LMDBEnvironment.readerSlots`) waits for a slot. See `StoreGate`.
public final class LMDBTrialRepository: TrialRepository, @unchecked Sendable {
  public struct Options: Hashable, Sendable {
    /// Address space reserved for the file at first; the map doubles whenever it fills.
    public var initialMapSize: Int
    /// The map never grows beyond this.
    public var maximumMapSize: Int
    /// Create the directory and an empty store when none exists.
    public var createIfMissing: Bool

    public init(initialMapSize: Int = 256 << 20, maximumMapSize: Int = 1 << 40, createIfMissing: Bool = true)
    {
      self.initialMapSize = initialMapSize
      self.maximumMapSize = maximumMapSize
      self.createIfMissing = createIfMissing
    }
  }

  /// The schema this version writes and reads. A store with a higher one is refused; one
  /// with a lower one is upgraded when opened for writing (see `upgrade`), and read as it is
  /// by `LMDBStoreReader`.
  public static let schemaVersion: UInt32 = 9

  struct Databases {
    var trials: LMDBDatabase
    var subjects: LMDBDatabase
    var ledger: LMDBDatabase
    var outbox: LMDBDatabase
    var meta: LMDBDatabase
    /// The event log and its consumers; nil in a schema-1 store (opened read-only).
    var events: LMDBDatabase?
    var consumers: LMDBDatabase?
    /// The records of subjects that had a trial granted once; nil before schema 5.
    var uses: LMDBDatabase?
    /// The conversion figures, by cohort; nil before schema 7.
    var cohorts: LMDBDatabase?
    /// Webhook endpoints' state and pending events (`WebhookRecords`); nil before schema 8.
    var webhooks: LMDBDatabase?
    /// The schema of the store as opened.
    var schema: UInt32

    static let names = [
      "trials", "subjects", "ledger", "outbox", "meta", "events", "consumers", "uses", "cohorts", "webhooks",
    ]
  }

  enum MetaKey {
    static let schema = "schema"
    static let lastSeen = "last-seen"
    /// How many trials are active (u64), kept in step by every write.
    static let activeCount = "active-trials"
    /// The event log's newest cursor (u64; 0 before the first event).
    static let logLast = "events-last"
    /// Events up to this cursor have been pruned (u64; 0 for none).
    static let logPrunedThrough = "events-pruned-through"
    /// The log's generation (`LogGeneration.record`, UTF-8), written by a restore or an import;
    /// absent: generation 0.
    static let logGeneration = "events-generation"
  }

  /// The store directory.
  public let directory: String
  /// The store file inside it.
  public var dataFilePath: String { environment.dataPath }

  /// What opening the store upgraded (a store written by an earlier version): nil when it
  /// was already of this version's schema.
  public let upgrade: StoreUpgradeReport?
  /// The schema the store had before this open upgraded it; nil when it was not upgraded.
  public var upgradedFrom: UInt32? { upgrade?.fromSchema }

  let environment: LMDBEnvironment
  private let databases: Databases
  let gate: StoreGate

  /// Opens the store in `directory`, creating it (directory mode 0700, file mode 0600) when
  /// missing and `options.createIfMissing` is set. A store of an earlier schema is upgraded
  /// in place (see `StoreUpgrade`): a copy of its file is kept beside it first, named with the
  /// time `clock` gives; `upgrade` tells what was done.
  /// - Throws: `StoreError`: `.damaged` for a truncated, empty or overwritten file, or one
  ///   that is not a trialwatch store; `.newerSchema` for a store written by a newer
  ///   version; `.inUse` when another process has it open; `.notFound`. The description
  ///   names the file and the problem. A store that fails to open is never modified (an
  ///   upgrade that fails leaves it at its old schema).
  public init(directory: String, options: Options = Options(), clock: any WallClock = SystemWallClock())
    throws
  {
    self.directory = directory
    environment = try LMDBEnvironment(
      directory: directory, initialMapSize: options.initialMapSize, maximumMapSize: options.maximumMapSize,
      maxDatabases: Databases.names.count, create: options.createIfMissing)
    do {
      let opened = try Self.openDatabases(environment, create: true)
      if opened.schema < Self.schemaVersion {
        (databases, upgrade) = try StoreUpgrade.run(environment, opened, now: clock.now())
      } else {
        (databases, upgrade) = (opened, nil)
      }
    } catch {
      environment.close()
      throw error
    }
    // A few slots are left to the processes that read beside the daemon (backup, verification),
    // and to reads inside reads, which take a slot each but no place.
    gate = StoreGate(readerPlaces: environment.readerSlots - 16)
  }

  deinit {
    environment.close()
  }

  /// Closes the store; later calls throw `StoreError` `.closed`. Idempotent.
  public func close() {
    gate.alone { environment.close() }
  }

  /// Opens the databases of an existing store, checking that it is a trialwatch store of a
  /// schema this version reads; in an empty environment, creates them when `create` is set.
  static func openDatabases(_ environment: LMDBEnvironment, create: Bool) throws -> Databases {
    let path = environment.dataPath
    let existing = try environment.read(keepDatabases: true) { txn -> Databases? in
      guard let meta = try txn.openDatabase("meta", create: false) else {
        guard try txn.entryCount(try txn.mainDatabase()) == 0, create else {
          throw StoreError(
            .damaged, path: path,
            problem: "an LMDB file, but not a trialwatch store (it has no \"meta\" database); "
              + "it was left untouched")
        }
        return nil
      }
      let schema = try Array(MetaKey.schema.utf8).withUnsafeBytes { key -> UInt32? in
        guard let value = try txn.get(meta, key) else { return nil }
        guard value.count == 4 else {
          throw StoreError(
            .corruptRecord, path: path, problem: "the record meta/\"schema\" has \(value.count) bytes, not 4")
        }
        return UInt32(littleEndian: value.loadUnaligned(as: UInt32.self))
      }
      guard let schema else {
        throw StoreError(
          .damaged, path: path, problem: "the store has no schema version (meta/\"schema\" is missing)")
      }
      guard schema <= schemaVersion else {
        throw StoreError(
          .newerSchema, path: path,
          problem: "written by a newer version of trialwatch (store schema \(schema); this version reads "
            + "up to \(schemaVersion)); it was left untouched")
      }
      guard schema >= 1 else {
        throw StoreError(.damaged, path: path, problem: "unknown store schema \(schema)")
      }
      func open(_ name: String) throws -> LMDBDatabase {
        guard let db = try txn.openDatabase(name, create: false) else {
          throw StoreError(.damaged, path: path, problem: "the store has no \"\(name)\" database")
        }
        return db
      }
      var databases = Databases(
        trials: try open("trials"), subjects: try open("subjects"), ledger: try open("ledger"),
        outbox: try open("outbox"), meta: meta, schema: schema)
      if schema >= 2 {
        databases.events = try open("events")
        databases.consumers = try open("consumers")
      }
      if schema >= 5 { databases.uses = try open("uses") }
      if schema >= 7 { databases.cohorts = try open("cohorts") }
      if schema >= 8 { databases.webhooks = try open("webhooks") }
      return databases
    }
    if let existing { return existing }
    // A new store: create the databases and record the schema, in one transaction.
    return try environment.write { txn in
      func create(_ name: String) throws -> LMDBDatabase { try txn.openDatabase(name, create: true)! }
      let databases = Databases(
        trials: try create("trials"), subjects: try create("subjects"), ledger: try create("ledger"),
        outbox: try create("outbox"), meta: try create("meta"), events: try create("events"),
        consumers: try create("consumers"), uses: try create("uses"), cohorts: try create("cohorts"),
        webhooks: try create("webhooks"), schema: schemaVersion)
      try StoreUpgrade.putMeta(txn, databases.meta, MetaKey.schema, UInt32(schemaVersion))
      try StoreUpgrade.putMeta(txn, databases.meta, MetaKey.logLast, UInt64(0))
      try StoreUpgrade.putMeta(txn, databases.meta, MetaKey.logPrunedThrough, UInt64(0))
      return databases
    }
  }

  // MARK: Transactions

  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try gate.read {
      try environment.read { txn in
        try body(StoreReadTransaction(txn, databases: databases, path: environment.dataPath))
      }
    }
  }

  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try exclusiveWrite { txn in
      let transaction = StoreWriteTransaction(txn, databases: databases, path: environment.dataPath)
      let result = try body(transaction)
      try transaction.finish()
      return result
    }
  }

  /// The one write transaction at a time; the map grows with every read shut out.
  private func exclusiveWrite<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
    try gate.write(misuse: { StoreError(.misuse, path: self.directory, problem: $0) }) {
      try environment.write(growing: { grow in try gate.exclusively(grow) }, body)
    }
  }

  /// Runs `body` on the raw LMDB transaction (tests write damaged records this way).
  func rawWrite<R>(_ body: (LMDBTransaction, Databases) throws -> R) throws -> R {
    try exclusiveWrite { try body($0, databases) }
  }

  /// How many times the map has grown since opening.
  var mapGrowthCount: Int { gate.read { environment.growthCount } }

  // MARK: Restore

  /// Reads every trial in one pass over the trials, with a second cursor walking the ledger
  /// alongside (both are ordered by trial id), decoding only the trials that are active and
  /// only the keys of their ledger entries. Then releases the mapped pages the scan touched.
  @discardableResult
  public func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try gate.read {
      let path = environment.dataPath
      let databases = self.databases
      let summary = try environment.read { txn -> RestoreSummary in
        // Room for the active trials, as the meta record counts them: never more than the
        // trials there are, whatever a damaged count says.
        let active = min(
          try StoreReadTransaction(txn, databases: databases, path: path).activeTrialCount(),
          try txn.entryCount(databases.trials))
        planner.reserveCapacity(trials: planner.trialCount + active)
        let codec = RecordCodec()
        var byState = [Int](repeating: 0, count: TrialState.allCases.count)
        var total = 0
        var done: [UInt64] = []
        try txn.withCursor(databases.trials) { trials in
          try txn.withCursor(databases.ledger) { ledger in
            func key(_ item: LMDBCursor.Item?) throws -> StoreKeys.LedgerKey? {
              guard let item else { return nil }
              return try decoding(item.key, in: "ledger", path: path) { try StoreKeys.ledgerKey(item.key) }
            }
            var position = try key(ledger.first())
            var item = try trials.first()
            while let (trialKey, value) = item {
              let id = try decoding(trialKey, in: "trials", path: path) { try StoreKeys.trialID(trialKey) }
              let state = try decoding(trialKey, in: "trials", path: path) { try codec.trialState(value) }
              total += 1
              if total % max(progressEvery, 1) == 0 { progress(total) }
              let running = state == .active || state == .grace
              if !running { byState[Int(RecordCodec.stateCode(state))] += 1 }
              // An ended trial's follow-ups not yet taken are planned too.
              let followsUp =
                try state.isEnded
                && decoding(trialKey, in: "trials", path: path) { try codec.trialHasFollowUps(value) }
              if state == .paused {
                // Only its resume, when its pause runs out, is planned: never in the ledger while
                // the trial is paused (a resume starts the next revision).
                planner.restore(
                  try decoding(trialKey, in: "trials", path: path) { try codec.decodeTrial(value, id: id) }
                ) { _ in false }
              }
              if running || followsUp {
                let trial = try decoding(trialKey, in: "trials", path: path) {
                  try codec.decodeTrial(value, id: id)
                }
                done.removeAll(keepingCapacity: true)
                // Move the ledger cursor to this trial: a few steps forward, else a seek.
                var steps = 0
                while let current = position, current.trial < id.rawValue {
                  if steps < 8 {
                    steps += 1
                    position = try key(ledger.next())
                  } else {
                    position = try key(StoreKeys.withTrialKey(id) { try ledger.seek($0) })
                    break
                  }
                }
                while let current = position, current.trial == id.rawValue {
                  if current.revision == trial.revision { done.append(current.order) }
                  position = try key(ledger.next())
                }
                // A running record whose revision's expiry is in the ledger has ended as its end
                // says (`Trial.stateAtEnd`): expired, or cancelled when marked to cancel at its end.
                let stillRunning = planner.restore(trial) { done.contains($0.order) }
                if running {
                  let now = stillRunning ? state : trial.stateAtEnd(takenAt: trial.period.endDate).state
                  byState[Int(RecordCodec.stateCode(now))] += 1
                }
              }
              item = try trials.next()
            }
          }
        }
        var summary = RestoreSummary()
        summary.trials = total
        for state in TrialState.allCases where byState[Int(RecordCodec.stateCode(state))] > 0 {
          summary.byState[state] = byState[Int(RecordCodec.stateCode(state))]
        }
        return summary
      }
      environment.releaseMappedPages()
      return summary
    }
  }

  // MARK: Memory and statistics

  /// Drops the store file's pages from this process's resident memory (they stay in the
  /// page cache). `restore` does this itself once it has read everything. Returns the bytes
  /// of mapping released.
  @discardableResult
  public func releaseMappedPages() -> Int {
    gate.read { environment.releaseMappedPages() }
  }

  public func statistics() throws -> StoreStatistics {
    try gate.read { try Self.statistics(environment, databases) }
  }

  static func statistics(_ environment: LMDBEnvironment, _ databases: Databases) throws -> StoreStatistics {
    let info = try environment.info()
    return try environment.read { txn in
      let transaction = StoreReadTransaction(txn, databases: databases, path: environment.dataPath)
      let log = try transaction.eventLogBounds()
      return StoreStatistics(
        trials: try txn.entryCount(databases.trials), activeTrials: try transaction.activeTrialCount(),
        ledgerEntries: try txn.entryCount(databases.ledger),
        outboxEntries: try txn.entryCount(databases.outbox),
        loggedEvents: log.count, logLast: log.last, logPrunedThrough: log.prunedThrough,
        consumers: try databases.consumers.map { try txn.entryCount($0) } ?? 0, fileSize: info.fileSize,
        mapSize: info.mapSize, schema: databases.schema)
    }
  }

  // MARK: Backup

  /// Writes a consistent, compacted copy of the store to `file` (see `LMDBStoreReader.backup(to:)`;
  /// another process backs up a store trialwatchd has open that way). Reads and writes go on
  /// meanwhile.
  public func backup(to file: String) throws -> BackupReport {
    try gate.read { try StoreBackup.write(to: file, from: environment) }
  }

  /// Runs `body` on the raw records (databases by name: `trials`, `subjects`, `ledger`,
  /// `outbox`, `meta`, `events`, `consumers`, `uses`, `cohorts`, `webhooks`, `main`), outside every rule of
  /// the repository: for tests that plant damage (`StoreCorruption` in TrialStoreTesting) and the
  /// store's fuzz target.
  @_spi(StoreTesting)
  public func withRawRecords<R>(_ body: (RawStoreRecords) throws -> R) throws -> R {
    try rawWrite { txn, databases in try body(RawStoreRecords(txn: txn, databases: databases)) }
  }
}

/// Runs a decoding step, turning a `RecordProblem` into a `StoreError` naming the record.
@inline(__always)
func decoding<T>(_ key: UnsafeRawBufferPointer, in database: String, path: String, _ body: () throws -> T)
  throws
  -> T
{
  do {
    return try body()
  } catch let problem as RecordProblem {
    throw StoreError(
      .corruptRecord, path: path,
      problem: "the record \(StoreKeys.describe(key, in: database)) is unreadable: \(problem.message)")
  }
}
