import FoundationEssentials
import Glibc
import TrialCore

/// One thing wrong in a store: where (the database and the key of the record) and what.
public struct StoreProblem: Hashable, Sendable, CustomStringConvertible {
  /// `trials`, `subjects`, `ledger`, `outbox`, `events`, `consumers`, `uses`, `cohorts`,
  /// `webhooks`, `meta`, `main` (the databases themselves), or `file` for the store file as a whole.
  public var database: String
  /// The record's key; empty for a problem of the file as a whole.
  public var key: [UInt8]
  /// What is wrong, in words; other records it concerns are named with their keys.
  public var message: String

  public init(database: String, key: [UInt8], message: String) {
    self.database = database
    self.key = key
    self.message = message
  }

  /// The key in hexadecimal.
  public var keyHex: String { hex(key) }

  /// The key as the store's messages name it: `trials/000000000000002a`,
  /// `ledger/000000000000002a-r1-expiry`, `subjects/"acme-42"`, `events/0000000000000007`,
  /// `consumers/"mailer"`.
  public var keyName: String {
    key.withUnsafeBytes { StoreKeys.describe($0, in: database) }
  }

  /// `ledger/000000000000002a-r1-expiry (key 000000000000002a00000001ffffffffffffffff): …`
  public var description: String {
    key.isEmpty && database == "file" ? message : "\(keyName) (key \(keyHex)): \(message)"
  }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
  let digits = Array("0123456789abcdef".utf8)
  var text: [UInt8] = []
  for byte in bytes {
    text.append(digits[Int(byte >> 4)])
    text.append(digits[Int(byte & 15)])
  }
  return String(decoding: text, as: UTF8.self)
}

/// What a verification found: the counts it read and every problem.
public struct StoreCheckReport: Hashable, Sendable {
  /// Problems beyond this many are counted, not kept.
  public static let problemLimit = 1_000

  /// The store file checked.
  public var path: String
  public var trials = 0
  public var activeTrials = 0
  public var subjects = 0
  public var ledgerEntries = 0
  public var outboxEntries = 0
  /// Events kept in the event log, and its consumers.
  public var loggedEvents = 0
  public var consumers = 0
  /// The log's newest cursor and how far it was pruned (`meta/events-last`,
  /// `meta/events-pruned-through`).
  public var logLast = EventCursor.origin
  public var logPrunedThrough = EventCursor.origin
  /// The event log's generation (`meta/events-generation`).
  public var logGeneration = LogGeneration.initial
  /// The store's schema (`meta/schema`); a schema-1 store has no event log yet.
  public var schema: UInt32 = 0
  /// The wall time of the store's last commit (`meta/last-seen`).
  public var lastSeen: Date?
  /// The first `problemLimit` problems, in the order found.
  public var problems: [StoreProblem] = []
  /// Every problem found.
  public var problemCount = 0

  public init(path: String) {
    self.path = path
  }

  public var isClean: Bool { problemCount == 0 }

  /// `…/data.mdb: 1204 trials (17 active), 3480 ledger entries, 2 undelivered, 3480 logged
  /// events, 1 consumer: no problems`; for a store of an earlier schema, which trialwatchd
  /// upgrades when it next opens it, the schema follows the counts.
  public var summary: String {
    let counts =
      "\(trials) trial\(trials == 1 ? "" : "s") (\(activeTrials) active), \(ledgerEntries) ledger "
      + "entr\(ledgerEntries == 1 ? "y" : "ies"), \(outboxEntries) undelivered, \(loggedEvents) logged "
      + "event\(loggedEvents == 1 ? "" : "s"), \(consumers) consumer\(consumers == 1 ? "" : "s")"
      + (schema > 0 && schema < LMDBTrialRepository.schemaVersion
        ? "; store schema \(schema) (trialwatchd upgrades it to \(LMDBTrialRepository.schemaVersion) when it next "
          + "opens it)" : "")
    guard !isClean else { return "\(path): \(counts): no problems" }
    let listed = problemCount > problems.count ? " (the first \(problems.count) listed)" : ""
    return "\(path): \(counts): \(problemCount) problem\(problemCount == 1 ? "" : "s")\(listed)"
  }

  mutating func add(_ database: String, _ key: some Sequence<UInt8>, _ message: String) {
    problemCount += 1
    if problems.count < Self.problemLimit {
      problems.append(StoreProblem(database: database, key: Array(key), message: message))
    }
  }
}

/// Checks every record of a store in one read snapshot: each decodes; every active trial is
/// in the subject index and its ledger lets a restore plan its pending events
/// (`TrialConsistency`); every ledger entry belongs to a trial; every undelivered entry is in
/// the outbox and every outbox entry is an undelivered ledger entry; every subject index
/// entry names a trial of that subject; the meta records are sane and the active count right;
/// the event log and its consumers agree with the ledger and the log's bounds (see
/// `checkEventLog`). Damage that LMDB meets (a broken page) ends the check with a problem of
/// the file.
final class StoreVerifier {
  let txn: LMDBTransaction
  let databases: LMDBTrialRepository.Databases
  let codec = RecordCodec()
  var report: StoreCheckReport
  /// The open trials of each cohort, as the trials read (`checkCohorts` compares the figures).
  var openByCohort: [CohortKey: (active: Int64, paused: Int64)] = [:]

  init(_ txn: LMDBTransaction, databases: LMDBTrialRepository.Databases, path: String) {
    self.txn = txn
    self.databases = databases
    report = StoreCheckReport(path: path)
  }

  func run() -> StoreCheckReport {
    do {
      let storedActive = try checkMeta()
      try checkDatabaseNames()
      try checkTrialsAndLedger()
      try checkSubjects()
      try checkOutbox()
      try checkEventLog()
      try checkConsumers()
      try checkUses()
      try checkCohorts()
      try checkWebhooks()
      if storedActive != report.activeTrials {
        report.add(
          "meta", Array(LMDBTrialRepository.MetaKey.activeCount.utf8),
          "the active-trial count is \(storedActive), but \(report.activeTrials) trials are active")
      }
    } catch let error as StoreError {
      report.add("file", [], "the store file is damaged; the check stopped there: \(error.problem)")
    } catch {
      report.add("file", [], "the check stopped: \(error)")
    }
    return report
  }

  /// Checks the meta records; returns the active-trial count they hold.
  private func checkMeta() throws -> Int {
    var active = 0
    try txn.forEach(databases.meta) { key, value in
      switch String(decoding: key, as: UTF8.self) {
      case LMDBTrialRepository.MetaKey.schema:
        if value.count != 4 {
          report.add("meta", key, "the schema version has \(value.count) bytes, not 4")
        } else {
          let schema = UInt32(littleEndian: value.loadUnaligned(as: UInt32.self))
          report.schema = schema
          if schema < 1 || schema > LMDBTrialRepository.schemaVersion {
            report.add("meta", key, "schema \(schema) is not one this version reads")
          }
        }
      case LMDBTrialRepository.MetaKey.lastSeen:
        var reader = ByteReader(value)
        if let date = try? reader.date(), (try? reader.expectEnd()) != nil {
          report.lastSeen = date
        } else {
          report.add("meta", key, "the last-seen wall time is unreadable (\(value.count) bytes)")
        }
      case LMDBTrialRepository.MetaKey.logLast, LMDBTrialRepository.MetaKey.logPrunedThrough:
        checkLogBound(key: key, value: value)
      case LMDBTrialRepository.MetaKey.logGeneration:
        do {
          report.logGeneration = try StoreReadTransaction.generation(value)
        } catch let problem as RecordProblem {
          report.add("meta", key, problem.message)
        }
      case LMDBTrialRepository.MetaKey.activeCount:
        var reader = ByteReader(value)
        if let count = try? reader.u64(), (try? reader.expectEnd()) != nil, count <= Int.max {
          active = Int(count)
        } else {
          report.add("meta", key, "the active-trial count is unreadable (\(value.count) bytes)")
        }
      default:
        report.add("meta", key, "a meta record this version of trialwatch does not know")
      }
    }
    return active
  }

  private func checkDatabaseNames() throws {
    try txn.forEach(try txn.mainDatabase()) { key, _ in
      if !LMDBTrialRepository.Databases.names.contains(String(decoding: key, as: UTF8.self)) {
        report.add("main", key, "a database that is not trialwatch's")
      }
    }
    // A store of an earlier schema holds nothing in the databases of a later one: its upgrade
    // (`StoreUpgrade`) refuses an event log it did not make, and takes uses, cohorts and webhooks
    // as found.
    guard report.schema >= 1 else { return }
    let later: [(String, UInt32)] = [
      ("events", 2), ("consumers", 2), ("uses", 5), ("cohorts", 7), ("webhooks", 8),
    ]
    for (name, since) in later where report.schema < since {
      guard let database = try txn.openDatabase(name, create: false), try txn.entryCount(database) > 0 else {
        continue
      }
      report.add(
        "main", Array(name.utf8),
        "a store of schema \(report.schema) has records in \"\(name)\", a database of schema \(since): "
          + (since == 2 ? "its upgrade would refuse it" : "its upgrade would take them unchecked"))
    }
  }

  /// One pass over the trials with a second cursor over the ledger alongside (both are in
  /// trial id order), as the restore at start-up reads them.
  private func checkTrialsAndLedger() throws {
    try txn.withCursor(databases.trials) { trials in
      try txn.withCursor(databases.ledger) { ledger in
        var ledgerItem = try ledger.first()
        /// The ledger entries of trial `id`, after reporting those of no trial before it.
        func entries(upTo id: UInt64?) throws -> [(key: [UInt8], entry: LedgerEntry?)] {
          var found: [(key: [UInt8], entry: LedgerEntry?)] = []
          while let (key, value) = ledgerItem {
            guard let parsed = try? StoreKeys.ledgerKey(key) else {
              report.ledgerEntries += 1
              report.add("ledger", key, "a ledger key has \(key.count) bytes, not 20")
              ledgerItem = try ledger.next()
              continue
            }
            if let id, parsed.trial > id { break }
            report.ledgerEntries += 1
            if parsed.trial != id {
              report.add(
                "ledger", key,
                "no trial \(TrialID(parsed.trial)) (trials key \(hex(trialKey(parsed.trial)))) has this entry"
              )
            } else {
              found.append((Array(key), try checkLedgerEntry(key: key, value: value, parsed: parsed)))
            }
            ledgerItem = try ledger.next()
          }
          return found
        }
        var trialItem = try trials.first()
        while let (key, value) = trialItem {
          report.trials += 1
          guard let id = try? StoreKeys.trialID(key) else {
            report.add("trials", key, "a trial key has \(key.count) bytes, not 8")
            trialItem = try trials.next()
            continue
          }
          let ledgerEntries = try entries(upTo: id.rawValue)
          if let trial = try readable("trials", key, { try codec.decodeTrial(value, id: id) }) {
            try check(trial, key: key, ledger: ledgerEntries)
          }
          trialItem = try trials.next()
        }
        _ = try entries(upTo: nil)
      }
    }
  }

  /// The record `decode` reads, or nil once it is reported unreadable under `database`.
  func readable<Record>(
    _ database: String, _ key: UnsafeRawBufferPointer, _ decode: () throws -> Record
  ) throws -> Record? {
    do {
      return try decode()
    } catch let problem as RecordProblem {
      report.add(database, key, "the record is unreadable: \(problem.message)")
      return nil
    }
  }

  private func trialKey(_ id: UInt64) -> [UInt8] {
    withUnsafeBytes(of: id.bigEndian) { Array($0) }
  }

  private func checkLedgerEntry(
    key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, parsed: StoreKeys.LedgerKey
  )
    throws -> LedgerEntry?
  {
    guard let entry = try readable("ledger", key, { try codec.decodeLedgerEntry(value, key: parsed) })
    else { return nil }
    if !entry.isDelivered, try txn.get(databases.outbox, key) == nil {
      report.add(
        "ledger", key, "the entry is not delivered, but it is not in the outbox: it would never be delivered")
    }
    return entry
  }

  private func check(
    _ stored: Trial, key: UnsafeRawBufferPointer, ledger: [(key: [UInt8], entry: LedgerEntry?)]
  )
    throws
  {
    let entries = ledger.compactMap(\.entry)
    // As the store reads it: an active record (or one in grace) whose revision's expiry is in
    // the ledger is expired (schema 3; a schema-2 record was rewritten as expired).
    let trial = stored.expired(
      byExpiryTakenAt: entries.first { $0.event.kind == .expiry && $0.event.revision == stored.revision }?
        .takenAt)
    for problem in TrialConsistency.problems(of: trial, ledger: entries) {
      if let event = problem.event, let inLedger = ledger.first(where: { $0.entry?.id == event }) {
        report.add("ledger", inLedger.key, problem.message)
      } else {
        report.add("trials", key, problem.message)
      }
    }
    guard trial.isOpen else { return }
    if trial.isActive { report.activeTrials += 1 }
    // The cohorts count a trial in grace as they count an active one.
    let paused = trial.state == .paused
    openByCohort[TrialStats.cohort(of: trial), default: (0, 0)].active += paused ? 0 : 1
    openByCohort[TrialStats.cohort(of: trial), default: (0, 0)].paused += paused ? 1 : 0
    var subject = trial.subject
    let subjectKey = Array(subject.utf8)
    guard !subjectKey.isEmpty, subjectKey.count <= 511 else { return }
    let indexed = try subject.withUTF8 { bytes in
      try txn.get(databases.subjects, UnsafeRawBufferPointer(bytes)).map { Array($0) }
    }
    let name = "\"\(trial.subject)\" (subjects key \(hex(subjectKey)))"
    if let indexed {
      if indexed != Array(key) {
        let other =
          indexed.count == 8
          ? "\(TrialID(indexed.withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) }))"
          : "0x\(hex(indexed))"
        report.add(
          "trials", key, "the trial is active, but the subject index names trial \(other) for \(name)")
      }
    } else {
      report.add("trials", key, "the trial is active, but the subject index has no entry for \(name)")
    }
  }

  private func checkSubjects() throws {
    try txn.forEach(databases.subjects) { key, value in
      report.subjects += 1
      try checkSubject(key: key, value: value)
    }
  }

  private func checkSubject(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
    guard let subject = String(validating: key, as: UTF8.self) else {
      report.add("subjects", key, "the subject is not valid UTF-8")
      return
    }
    if let problem = Trial.validateSubject(subject) {
      report.add("subjects", key, "invalid subject: \(problem)")
    }
    guard let id = try? StoreKeys.trialID(value) else {
      report.add("subjects", key, "the entry has \(value.count) bytes, not a trial id of 8")
      return
    }
    guard let record = try txn.get(databases.trials, value) else {
      report.add("subjects", key, "names trial \(id) (trials key \(hex(value))), which does not exist")
      return
    }
    // An unreadable trial is reported by the pass over the trials.
    if let trial = try? codec.decodeTrial(record, id: id), trial.subject != subject {
      report.add(
        "subjects", key, "names trial \(id) (trials key \(hex(value))), whose subject is \"\(trial.subject)\""
      )
    }
  }

  private func checkOutbox() throws {
    try txn.forEach(databases.outbox) { key, value in
      report.outboxEntries += 1
      try checkOutboxEntry(key: key, value: value)
    }
  }

  private func checkOutboxEntry(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
    guard let parsed = try? StoreKeys.ledgerKey(key) else {
      report.add("outbox", key, "an outbox key has \(key.count) bytes, not 20")
      return
    }
    if value.count != 0 {
      report.add("outbox", key, "the entry holds \(value.count) bytes; it should be empty")
    }
    guard let record = try txn.get(databases.ledger, key) else {
      report.add(
        "outbox", key, "no ledger entry \(parsed.text) has this key: nothing can be delivered for it")
      return
    }
    if let entry = try? codec.decodeLedgerEntry(record, key: parsed), let delivered = entry.deliveredAt {
      report.add(
        "outbox", key,
        "the ledger entry was delivered at \(RFC3339.format(delivered)), but it is still in the outbox: "
          + "it would be delivered again")
    }
  }
}
