import FoundationEssentials
import Glibc
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// What opening a store of an earlier schema did to it.
public struct StoreUpgradeReport: Hashable, Sendable {
  /// The schema the store had, and the one it has now.
  public var fromSchema: UInt32
  public var toSchema: UInt32
  /// The copy of the store file as it was, kept beside it (`data.mdb.schema<N>-<UTC time>`).
  public var keptCopy: String
  /// Ledger entries written to the new event log.
  public var backfilledEvents: Int
}

/// Brings a store written by an earlier version to this version's schema, when the one writer
/// opens it. First a compacted copy of the file is written beside it, atomically and synced
/// (`data.mdb.schema<N>-<UTC time>`); then one write transaction makes every change, so the
/// store is either upgraded whole or left at its old schema.
///
/// Schema 8 → 9 changes no record: it adds what the trial lifecycle writes, which an older
/// version must not read: use records of version 2 (`UseRecords`: the last start a cooldown,
/// `OnceFor=`, let a subject make), while those of version 1 read with their first trial as
/// their last; trial records with a cancel-at-end mark (flag bit 3), a grace (flag bit 4, and the
/// state `grace`) or an extension count (flag bit 5); the skip reason cancel-at-end (outcome
/// code 7) and the event `grace-started`. The schema is set so that an older version refuses
/// the store.
///
/// Schema 7 → 8 creates the empty `webhooks` database (webhook endpoints' state and pending
/// events).
///
/// Schema 6 → 7 creates `cohorts`, the conversion figures, counted from the trials the store
/// holds (those retention removed before are not in them).
///
/// Schema 5 → 6 changes no record: it adds what a paused trial writes (the state `paused`, the
/// pause in the trial record, the events `paused` and `resumed`), which an older version must
/// not read; the schema is set so that it refuses the store.
///
/// Schema 4 → 5 creates the empty `uses` database (subjects that had a trial granted once).
///
/// Schema 3 → 4 changes no record: records of version 2 (trials and logged events with an
/// attribute section) are written from then on, and those of version 1 read as before, with no
/// attribute but the subject. The schema is set, so that an older version refuses the store.
///
/// Schema 2 → 3 changes no record (an expiry no longer rewrites its trial's record; a trial
/// whose record is active reads expired once the ledger holds its revision's expiry, and a
/// schema-2 record, rewritten as expired, reads the same): the schema is set.
///
/// Schema 1 → 2 (then 3): creates `events` and `consumers`, writes every ledger entry to the event log
/// (ordered by when it was taken, then by event id, with the subject of its trial; cursors
/// from 1), sets `events-last` and `events-pruned-through`, then the schema.
enum StoreUpgrade {
  static func run(
    _ environment: LMDBEnvironment, _ databases: LMDBTrialRepository.Databases, now: Date
  ) throws -> (LMDBTrialRepository.Databases, StoreUpgradeReport) {
    let from = databases.schema
    let copy = try keepCopy(environment, databases, now: now)
    var backfilled = 0
    let upgraded = try environment.write { txn -> LMDBTrialRepository.Databases in
      var upgraded = databases
      if from < 2 {
        (upgraded, backfilled) = try addEventLog(txn, databases, path: environment.dataPath)
      }
      if from < 5 { upgraded.uses = try txn.openDatabase("uses", create: true) }
      if from < 7 {
        upgraded.cohorts = try txn.openDatabase("cohorts", create: true)
        try countCohorts(txn, upgraded, path: environment.dataPath)
      }
      if from < 8 { upgraded.webhooks = try txn.openDatabase("webhooks", create: true) }
      // Schemas 2 → 3 → 4, 5 → 6 and 8 → 9 change no record: an expiry no longer rewrites its
      // trial's record, and a record of schema 2 (expired when its expiry was taken) reads the
      // same; records of version 1 (no attribute section) read as before; schemas 6 and 9 only add.
      try putMeta(txn, databases.meta, LMDBTrialRepository.MetaKey.schema, LMDBTrialRepository.schemaVersion)
      upgraded.schema = LMDBTrialRepository.schemaVersion
      return upgraded
    }
    let report = StoreUpgradeReport(
      fromSchema: from, toSchema: LMDBTrialRepository.schemaVersion, keptCopy: copy,
      backfilledEvents: backfilled)
    return (upgraded, report)
  }

  /// Schema 6 → 7: the figures of every trial the store holds, as it stands (an active record
  /// whose expiry the ledger holds counts as expired), in the cohorts of `databases`.
  static func countCohorts(_ txn: LMDBTransaction, _ databases: LMDBTrialRepository.Databases, path: String)
    throws
  {
    let store = StoreWriteTransaction(txn, databases: databases, path: path)
    try store.scanTrials(after: nil) { trial in
      try store.addToCohort(TrialStats.cohort(of: trial), TrialStats.contribution(of: trial))
      return true
    }
    try store.writeCohorts()
  }

  /// Schema 1 → 2: the event log, backfilled from the ledger, and the consumers. Returns the
  /// databases and the number of events logged.
  private static func addEventLog(
    _ txn: LMDBTransaction, _ databases: LMDBTrialRepository.Databases, path: String
  ) throws -> (LMDBTrialRepository.Databases, Int) {
    let from = databases.schema
    var upgraded = databases
    let events = try txn.openDatabase("events", create: true)!
    let consumers = try txn.openDatabase("consumers", create: true)!
    guard try txn.entryCount(events) == 0, try txn.entryCount(consumers) == 0 else {
      throw StoreError(
        .damaged, path: path,
        problem: "a store of schema \(from) already has an event log; it was left at schema \(from)")
    }
    let logged = try ledgerInTakenOrder(txn, databases, path: path)
    let codec = RecordCodec()
    var writer = ByteWriter()
    for (index, item) in logged.enumerated() {
      do {
        try codec.putEvent(
          item.entry, attributes: TrialAttributes(subject: item.subject), at: EventCursor(UInt64(index + 1)),
          in: events, txn,
          writer: &writer)
      } catch let problem as RecordProblem {
        throw StoreError(
          .corruptRecord, path: path,
          problem: "the ledger entry \(item.entry.id) cannot be logged: \(problem.message)")
      }
    }
    try putMeta(txn, databases.meta, LMDBTrialRepository.MetaKey.logLast, UInt64(logged.count))
    try putMeta(txn, databases.meta, LMDBTrialRepository.MetaKey.logPrunedThrough, UInt64(0))
    upgraded.events = events
    upgraded.consumers = consumers
    return (upgraded, logged.count)
  }

  /// Every ledger entry with its trial's subject, ordered by when it was taken, then by event
  /// id. An entry whose trial is missing (a damaged store; verification names it) is logged
  /// with an empty subject.
  private static func ledgerInTakenOrder(
    _ txn: LMDBTransaction, _ databases: LMDBTrialRepository.Databases, path: String
  ) throws -> [(entry: LedgerEntry, subject: String)] {
    let reader = StoreReadTransaction(txn, databases: databases, path: path)
    var logged: [(entry: LedgerEntry, subject: String)] = []
    logged.reserveCapacity(try txn.entryCount(databases.ledger))
    try txn.forEach(databases.ledger) { key, value in
      let entry = try reader.decodeEntry(key: key, value: value)
      // The reader keeps the trial read last: a trial's entries are together in the ledger.
      logged.append((entry, try reader.trial(entry.event.trialID)?.subject ?? ""))
    }
    logged.sort {
      $0.entry.takenAt != $1.entry.takenAt ? $0.entry.takenAt < $1.entry.takenAt : $0.entry.id < $1.entry.id
    }
    return logged
  }

  /// Writes a compacted copy of the store file beside it, as `data.mdb.schema<N>-<UTC time>`
  /// (`-2`, `-3`… when taken), atomically and synced; returns its path.
  private static func keepCopy(
    _ environment: LMDBEnvironment, _ databases: LMDBTrialRepository.Databases, now: Date
  ) throws -> String {
    let schema = databases.schema
    let base = environment.dataPath + ".schema\(schema)-" + StoreRestore.utcStamp(now)
    var attempt = 1
    var target = base
    while FileManager.default.fileExists(atPath: target) {
      attempt += 1
      target = base + "-\(attempt)"
    }
    do {
      let copy = try StoreBackup.copy(to: target, from: environment).statistics
      let store = try LMDBTrialRepository.statistics(environment, databases)
      guard
        (copy.trials, copy.ledgerEntries, copy.outboxEntries) == (
          store.trials, store.ledgerEntries, store.outboxEntries
        )
      else {
        throw StoreError(
          .failure, path: target,
          problem: "the copy holds \(copy.trials) trials and \(copy.ledgerEntries) ledger entries, the store "
            + "\(store.trials) and \(store.ledgerEntries)")
      }
    } catch let error as StoreError {
      throw StoreError(
        error.kind, path: error.path,
        problem: "\(error.problem) (keeping a copy of the store before upgrading it from schema \(schema); "
          + "the store was not changed)")
    }
    return target
  }

  /// Writes a meta record: a number, little-endian.
  static func putMeta(
    _ txn: LMDBTransaction, _ meta: LMDBDatabase, _ name: String, _ value: some FixedWidthInteger
  ) throws {
    try Array(name.utf8).withUnsafeBytes { key in
      try withUnsafeBytes(of: value.littleEndian) { try txn.put(meta, key, $0) }
    }
  }
}
