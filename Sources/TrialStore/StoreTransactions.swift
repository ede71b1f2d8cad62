import FoundationEssentials
import TrialCore

/// A read transaction of `LMDBTrialRepository`: trials, the subject index, the ledger and the
/// outbox, decoded from their records.
class StoreReadTransaction: TrialReadTransaction {
  let txn: LMDBTransaction
  let databases: LMDBTrialRepository.Databases
  let path: String
  let codec = RecordCodec()

  init(_ txn: LMDBTransaction, databases: LMDBTrialRepository.Databases, path: String) {
    self.txn = txn
    self.databases = databases
    self.path = path
  }

  /// The trial read last in this transaction, as it stands, or the ended trial written last:
  /// firing reads a trial and then puts it again, and the put needs the old trial again.
  var lastTrial: Trial? {
    didSet { lastTrialHead = lastTrial.map { (id: $0.id, revision: $0.revision, state: $0.state) } }
  }
  /// The id, revision and state of `lastTrial`: what the hot paths ask of it, without a copy
  /// of the whole trial (which retains each of its references).
  private(set) var lastTrialHead: (id: TrialID, revision: UInt32, state: TrialState)?
  /// The id looked up last and not found: starting a trial looks its new id up, then puts it.
  var absentTrial: TrialID?
  /// The event log's newest cursor, read once per transaction; a write moves it as it
  /// appends, and `finish` writes it.
  var logLast: EventCursor?
  /// The log's generation, read once per transaction (`meta/events-generation`).
  var logGeneration: LogGeneration?

  /// The conversion figures (`CohortRecords`); none before schema 7.
  func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
    try storedCohorts(from: from, through: through)
  }

  /// The trial as it stands: its record, expired if the record is active and the ledger holds
  /// the expiry of its revision (schema 3: an expiry does not rewrite the record).
  func trial(_ id: TrialID) throws -> Trial? {
    if lastTrialHead?.id == id { return lastTrial }
    if absentTrial == id { return nil }
    guard let stored = try storedTrial(id) else {
      absentTrial = id
      return nil
    }
    let found = try derived(stored)
    lastTrial = found
    return found
  }

  /// The trial record as written, without the expiry the ledger may hold.
  func storedTrial(_ id: TrialID) throws -> Trial? {
    try StoreKeys.withTrialKey(id) { key -> Trial? in
      guard let value = try txn.get(databases.trials, key) else { return nil }
      return try decoding(key, in: "trials", path: path) { try codec.decodeTrial(value, id: id) }
    }
  }

  /// `stored` as it stands: an active record, or one in grace (`grace-started` writes the
  /// state with its ledger entry), whose revision's expiry is in the ledger is expired, ended
  /// when the expiry was taken (`Trial.expired(byExpiryTakenAt:)`).
  func derived(_ stored: Trial) throws -> Trial {
    guard stored.isRunning else { return stored }
    return stored.expired(byExpiryTakenAt: try expiryTaken(stored.id, revision: stored.revision))
  }

  /// When the expiry of the trial's revision was taken, if the ledger holds it.
  func expiryTaken(_ id: TrialID, revision: UInt32) throws -> Date? {
    try ledgerEntry(EventID(trialID: id, revision: revision, kind: .expiry))?.takenAt
  }

  /// The subject index may still name a trial that has ended (see `putTrial`): the trial
  /// it names counts only while it is open (active or paused) and has this subject.
  func activeTrialID(subject: String) throws -> TrialID? {
    guard let id = try indexedTrialID(subject: subject), let trial = try trial(id),
      trial.isOpen, trial.subject == subject
    else { return nil }
    return id
  }

  /// The index names the subject's latest trial (an entry changes only when a trial starts,
  /// or moves to another subject).
  func latestTrialID(subject: String) throws -> TrialID? {
    guard let id = try indexedTrialID(subject: subject), try trial(id)?.subject == subject else { return nil }
    return id
  }

  /// What the subject index holds for `subject`.
  func indexedTrialID(subject: String) throws -> TrialID? {
    guard !subject.isEmpty else { return nil }
    var subject = subject
    return try subject.withUTF8 { bytes in
      let key = UnsafeRawBufferPointer(bytes)
      guard key.count <= 511, let value = try txn.get(databases.subjects, key) else { return nil }
      return try decoding(key, in: "subjects", path: path) { try StoreKeys.trialID(value) }
    }
  }

  func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws {
    try txn.withCursor(databases.trials) { cursor in
      var item: LMDBCursor.Item?
      if let after {
        guard after.rawValue < UInt64.max else { return }
        item = try StoreKeys.withTrialKey(TrialID(after.rawValue + 1)) { try cursor.seek($0) }
      } else {
        item = try cursor.first()
      }
      while let (key, value) = item {
        let trial = try decoding(key, in: "trials", path: path) {
          try codec.decodeTrial(value, id: try StoreKeys.trialID(key))
        }
        guard try body(try derived(trial)) else { return }
        item = try cursor.next()
      }
    }
  }

  func ledgerEntry(_ id: EventID) throws -> LedgerEntry? {
    try StoreKeys.withLedgerKey(id) { key in
      guard let value = try txn.get(databases.ledger, key) else { return nil }
      return try decodeEntry(key: key, value: value)
    }
  }

  func decodeEntry(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> LedgerEntry {
    try decoding(key, in: "ledger", path: path) {
      try codec.decodeLedgerEntry(value, key: try StoreKeys.ledgerKey(key))
    }
  }

  func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] {
    try txn.withCursor(databases.ledger) { cursor in
      var entries: [LedgerEntry] = []
      var item = try StoreKeys.withTrialKey(trial) { try cursor.seek($0) }
      while let (key, value) = item {
        let parsed = try decoding(key, in: "ledger", path: path) { try StoreKeys.ledgerKey(key) }
        guard parsed.trial == trial.rawValue else { break }
        entries.append(try decodeEntry(key: key, value: value))
        item = try cursor.next()
      }
      return entries
    }
  }

  func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws {
    try txn.withCursor(databases.outbox) { cursor in
      var item = try cursor.first()
      while let (key, _) = item {
        guard let value = try txn.get(databases.ledger, key) else {
          throw StoreError(
            .corruptRecord, path: path,
            problem: "the record \(StoreKeys.describe(key, in: "outbox")) has no ledger entry")
        }
        guard try body(try decodeEntry(key: key, value: value)) else { return }
        item = try cursor.next()
      }
    }
  }

  /// The active-trial count kept in the meta database.
  func activeTrialCount() throws -> Int {
    let count = try metaU64(LMDBTrialRepository.MetaKey.activeCount)
    guard count <= Int.max else {
      throw StoreError(
        .corruptRecord, path: path,
        problem: "the record meta/\"\(LMDBTrialRepository.MetaKey.activeCount)\" is unreadable: "
          + "the count is out of range")
    }
    return Int(count)
  }

  /// A u64 meta record; 0 when there is none.
  func metaU64(_ name: String) throws -> UInt64 {
    try Array(name.utf8).withUnsafeBytes { key in
      guard let value = try txn.get(databases.meta, key) else { return 0 }
      return try decoding(key, in: "meta", path: path) {
        var reader = ByteReader(value)
        let number = try reader.u64()
        try reader.expectEnd()
        return number
      }
    }
  }

  func lastSeenWallTime() throws -> Date? {
    try Array(LMDBTrialRepository.MetaKey.lastSeen.utf8).withUnsafeBytes { key in
      guard let value = try txn.get(databases.meta, key) else { return nil }
      return try decoding(key, in: "meta", path: path) {
        var reader = ByteReader(value)
        let date = try reader.date()
        try reader.expectEnd()
        return date
      }
    }
  }
}

/// A write transaction: every change to trials, the index, the ledger, the outbox, the event
/// log and the consumers.
final class StoreWriteTransaction: StoreReadTransaction, TrialWriteTransaction {
  var writer = ByteWriter()
  /// Change of the active-trial count, written once by `finish`.
  private var activeDelta = 0
  /// Events were appended: `logLast` is written by `finish`.
  var logLastChanged = false

  /// The changes of trials' states written (`TrialWriteTransaction.transitions`).
  private(set) var transitions: [TrialTransition] = []

  func noteTransition(_ transition: TrialTransition) { transitions.append(transition) }

  /// Changes to the conversion figures, written by `finish` (`CohortRecords`).
  var cohortDeltas: [CohortKey: CohortCounts] = [:]

  func addToCohort(_ key: CohortKey, _ delta: CohortCounts) throws {
    cohortDeltas[key, default: CohortCounts()].add(delta)
  }

  override func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
    try writeCohorts()
    return try super.cohorts(from: from, through: through)
  }

  /// Writes what the transaction accumulated; called once `body` has returned.
  func finish() throws {
    try writeCohorts()
    if logLastChanged, let logLast {
      try putMeta(LMDBTrialRepository.MetaKey.logLast, logLast.sequence)
      logLastChanged = false
    }
    guard activeDelta != 0 else { return }
    let count = max(0, try activeTrialCount() + activeDelta)
    try putMeta(LMDBTrialRepository.MetaKey.activeCount, UInt64(count))
    activeDelta = 0
  }

  /// Writes a u64 meta record.
  func putMeta(_ name: String, _ value: UInt64) throws {
    try StoreUpgrade.putMeta(txn, databases.meta, name, value)
  }

  /// Keeps the subject index in step with the in-memory semantics: a subject names its
  /// trial while that trial is active. When a trial ends (expires, converts, is cancelled)
  /// its index entry is left in place rather than deleted — `activeTrialID` checks the trial
  /// it names — so that a burst of expiries rewrites no index pages; starting a new trial for
  /// the subject replaces the entry. An entry is deleted only when a trial changes subject.
  ///
  /// A trial that reads as it is to be written is not rewritten: so an expiry, whose ledger
  /// entry `TrialBook.commit` puts first, leaves the trial's record (and its page) alone.
  func putTrial(_ trial: Trial) throws {
    try StoreKeys.withTrialKey(trial.id) { key in
      var wasActive = false
      if let old = try self.trial(trial.id) {
        if old == trial { return }
        wasActive = old.isActive
        if old.subject != trial.subject, try indexedTrialID(subject: old.subject) == trial.id {
          var subject = old.subject
          try subject.withUTF8 { _ = try txn.delete(databases.subjects, UnsafeRawBufferPointer($0)) }
        }
      }
      writer.reset()
      do {
        try codec.encode(trial, into: &writer)
      } catch let problem as RecordProblem {
        throw TrialError.invalid(.trial, problem.message)
      }
      try writer.bytes.withUnsafeBytes { try txn.put(databases.trials, key, $0) }
      // A running trial is read again through the ledger (which may hold its expiry).
      lastTrial = trial.isRunning ? nil : trial
      if absentTrial == trial.id { absentTrial = nil }
      activeDelta += (trial.isActive ? 1 : 0) - (wasActive ? 1 : 0)
      if trial.isOpen {
        guard !trial.subject.isEmpty else { throw TrialError.invalid(.subject, "subject must not be empty") }
        var subject = trial.subject
        try subject.withUTF8 { subjectKey in
          try withUnsafeBytes(of: trial.id.rawValue.bigEndian) {
            try txn.put(databases.subjects, UnsafeRawBufferPointer(subjectKey), $0)
          }
        }
      }
    }
  }

  /// The first entry of a running trial's expiry expires the trial (see `trial(_:)`): the
  /// active count follows (a trial in grace left it as its grace started).
  func putLedgerEntry(_ entry: LedgerEntry) throws {
    if entry.event.kind == .expiry, let state = try expiringState(entry.event) {
      if state == .active { activeDelta -= 1 }
      // The trial read last is the one expiring (as when firing): it now reads as `derived`
      // makes it, with no second look-up; the put of the expired trial that follows finds it
      // unchanged and leaves its record alone.
      if let head = lastTrialHead, head.id == entry.event.trialID {
        lastTrial = head.state.isRunning ? lastTrial?.expired(byExpiryTakenAt: entry.takenAt) : nil
      }
    }
    writer.reset()
    codec.encode(entry, into: &writer)
    try StoreKeys.withLedgerKey(entry.id) { key in
      try writer.bytes.withUnsafeBytes { try txn.put(databases.ledger, key, $0) }
      if entry.isDelivered {
        try txn.delete(databases.outbox, key)
      } else {
        try txn.put(databases.outbox, key, UnsafeRawBufferPointer(start: nil, count: 0))
      }
    }
  }

  /// Whether putting `expiry` in the ledger expires its trial: the state it expires from
  /// (active, or in grace) when the trial is running at the expiry's revision, else nil. The
  /// trial read last (as `commit` reads it just before) answers without a look-up: it reads
  /// running only while its revision's expiry is not in the ledger.
  private func expiringState(_ expiry: TrialEvent) throws -> TrialState? {
    if let head = lastTrialHead, head.id == expiry.trialID, head.state.isRunning {
      return head.revision == expiry.revision ? head.state : nil
    }
    guard try ledgerEntry(expiry.id) == nil, let stored = try storedTrial(expiry.trialID) else {
      return nil
    }
    return stored.isRunning && stored.revision == expiry.revision ? stored.state : nil
  }

  func setLastSeenWallTime(_ date: Date) throws {
    writer.reset()
    writer.date(date)
    try Array(LMDBTrialRepository.MetaKey.lastSeen.utf8).withUnsafeBytes { key in
      try writer.bytes.withUnsafeBytes { try txn.put(databases.meta, key, $0) }
    }
  }
}
