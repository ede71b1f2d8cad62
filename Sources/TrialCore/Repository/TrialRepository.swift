import FoundationEssentials

/// Reads inside one consistent snapshot of the store.
public protocol TrialReadTransaction {
  func trial(_ id: TrialID) throws -> Trial?
  /// The id of the subject's active trial, if it has one.
  func activeTrialID(subject: String) throws -> TrialID?
  /// The id of the subject's most recently started trial, active or ended (its active trial,
  /// when it has one).
  func latestTrialID(subject: String) throws -> TrialID?
  /// Trials in id order, starting after `after`, until `body` returns false.
  func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws
  func ledgerEntry(_ id: EventID) throws -> LedgerEntry?
  /// The ledger entries of one trial, over all its revisions, in id order.
  func ledgerEntries(trial: TrialID) throws -> [LedgerEntry]
  /// Entries taken but not yet delivered, until `body` returns false.
  func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws
  /// The wall time the daemon last recorded, to notice a backward clock step across restarts.
  func lastSeenWallTime() throws -> Date?
  /// Where the event log stands.
  func eventLogBounds() throws -> EventLogBounds
  /// Logged events after `after`, in cursor order, until `body` returns false.
  func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws
  func consumer(named name: String) throws -> ConsumerRecord?
  /// Every consumer, in name order, until `body` returns false.
  func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws
  /// The record that a subject of this key had a trial granted once in `scope`.
  func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse?
  /// The subject uses after `after` (all of them from nil), in scope and key order (bytes of the
  /// scope's text, then of the key), until `body` returns false.
  func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws
  /// The figures of the cohorts started from day `from` through day `through` (days since
  /// 1970-01-01, UTC), of every plan, in key order (`TrialStats`).
  func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)]
  /// What the store keeps of a webhook endpoint (its position is its consumer's).
  func webhookEndpoint(named name: String) throws -> WebhookEndpointState?
  /// Every webhook endpoint's state, in name order (bytes), until `body` returns false.
  func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws
  /// An endpoint's pending events after `after`, in cursor order, until `body` returns false.
  func scanWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
}

/// Writes inside one transaction: all of them land, or none.
public protocol TrialWriteTransaction: TrialReadTransaction {
  /// Inserts or replaces the trial, keeping the subject index in step: a subject maps to
  /// its trial while that trial is active.
  func putTrial(_ trial: Trial) throws
  /// Records an event as taken. An undelivered entry is also placed in the outbox; a
  /// delivered one is removed from it.
  func putLedgerEntry(_ entry: LedgerEntry) throws
  func setLastSeenWallTime(_ date: Date) throws
  /// Appends a taken event to the event log under the next cursor.
  func appendEvent(_ entry: LedgerEntry, attributes: TrialAttributes) throws -> LoggedEvent
  /// Removes every logged event up to and including `through`, which becomes the log's
  /// `prunedThrough` (never moving back). Returns how many were removed.
  @discardableResult
  func pruneEvents(through: EventCursor) throws -> Int
  /// Inserts or replaces a consumer.
  func putConsumer(_ consumer: ConsumerRecord) throws
  /// Records the log's generation (a restore or an import starts a new one): cursors read
  /// from now on are of it.
  func setLogGeneration(_ generation: LogGeneration) throws
  /// Removes a consumer; false when there was none of that name.
  func removeConsumer(named name: String) throws -> Bool
  /// Removes an ended trial with its ledger entries (and their outbox entries), and the subject
  /// index entry that names it (`TrialRetention`). An active trial, or none of that id, is left.
  func removeTrial(_ id: TrialID) throws
  /// Adds `delta` to the figures of cohort `key` (`TrialStats`), with this transaction's commit.
  func addToCohort(_ key: CohortKey, _ delta: CohortCounts) throws
  /// Inserts or replaces the record of a subject use (of its scope and key).
  func putSubjectUse(_ use: SubjectUse) throws
  /// Removes the record of a subject use; false when there was none.
  func removeSubjectUse(scope: SubjectUse.Scope, key: String) throws -> Bool
  /// Inserts or replaces a webhook endpoint's state.
  func putWebhookEndpoint(_ state: WebhookEndpointState) throws
  /// Removes a webhook endpoint's state and every pending event of it; false when there was
  /// neither.
  func removeWebhookEndpoint(named name: String) throws -> Bool
  /// Inserts or replaces an endpoint's pending event (of its endpoint and cursor).
  func putWebhookEvent(_ event: WebhookPendingEvent) throws
  /// Removes an endpoint's pending events up to and including `through`: the endpoint's position
  /// passed them. Returns how many were removed.
  @discardableResult
  func removeWebhookEvents(endpoint: String, through: EventCursor) throws -> Int
  /// Of the due events, those this transaction may record (`TrialBook.take` asks first). A
  /// store of one daemon admits them all; a store shared by a fleet admits only events of
  /// shards this node owns at its epoch, due by the store's clock, and holds that ownership
  /// until the commit.
  func admit(_ due: [DueEvent]) throws -> [DueEvent]
  /// Records deliveries: each entry still undelivered gets its time, which takes it out of
  /// the outbox; ids not in the ledger, or delivered already (in this transaction too), are
  /// passed over. The default reads each entry and puts it back; a store across a network
  /// may send the marks unread, to be applied by the database with the commit.
  func markDelivered(_ deliveries: [(id: EventID, at: Date)]) throws
  /// Notes a change of a trial's state this transaction writes (`TrialBook.write`,
  /// `TrialRetention`), for `transitions`.
  func noteTransition(_ transition: TrialTransition)
  /// The changes of trials' states this transaction wrote, in the order written: what a commit
  /// changes in the counts of trials by state and by plan (the engine's `TrialFigures`).
  var transitions: [TrialTransition] { get }
}

extension TrialWriteTransaction {
  public func admit(_ due: [DueEvent]) throws -> [DueEvent] { due }

  public func markDelivered(_ deliveries: [(id: EventID, at: Date)]) throws {
    for delivery in deliveries {
      guard var entry = try ledgerEntry(delivery.id), entry.deliveredAt == nil else { continue }
      entry.deliveredAt = delivery.at
      try putLedgerEntry(entry)
    }
  }
}

/// Where trials and the event ledger live. Implementations: the LMDB file store
/// (TrialStore) and an in-memory one for tests (TrialTesting). The operations trialwatch
/// performs on top of these primitives (starting with a fresh id, firing exactly once) are
/// written once, in the extension below.
public protocol TrialRepository: AnyObject {
  func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R
  /// Runs `body` in one write transaction, committed durably before returning. A throw
  /// from `body` aborts the transaction and changes nothing. An implementation may run
  /// `body` more than once (the file store does, after growing its file), so `body` must act
  /// only through the transaction and its result.
  func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R
  /// Rebuilds `planner` from the store: every active trial's events from the first one not
  /// in the ledger on; `progress` is called every `progressEvery` trials read. A default
  /// (`restoreByScanning`) is written over the transaction primitives; a store may read
  /// faster. Call it as `restore(into:progress:)`.
  @discardableResult
  func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  /// One trial, in a read of its own. A default (`read`) is written over the transaction; a
  /// store across a network reads it in one statement.
  func trial(_ id: TrialID) throws -> Trial?
  /// Up to `limit` logged events after `after`, the cursor checked first (`EventFeed.events`),
  /// in a read of its own. A default (`read`) is written over the transaction; a store across a
  /// network reads them in one statement.
  func loggedEvents(after: EventCursor, limit: Int) throws -> [LoggedEvent]
  /// How many active trials each plan has, by plan name (trials without a plan left out). A
  /// default (`read`, a scan of the trials) is written over the transaction; a store with a
  /// query language counts in one statement.
  func activeTrialsByPlan() throws -> [String: Int]
  /// The figures of the trials of `plan` started from day `from` through day `through` (days
  /// since 1970-01-01, UTC), by variant, counted as the cohorts count them (`TrialStats`); trials
  /// without a variant left out. Read from the trials kept (unlike the cohorts' aggregates, a
  /// trial removed by retention no longer counts). A default (`read`, a scan of the trials) is
  /// written over the transaction; a store with a query language groups in one statement.
  func cohortsByVariant(plan: String, from: Int32, through: Int32) throws -> [String: CohortCounts]
}

extension TrialRepository {
  public func trial(_ id: TrialID) throws -> Trial? {
    try read { try $0.trial(id) }
  }

  public func loggedEvents(after: EventCursor, limit: Int) throws -> [LoggedEvent] {
    try read { try EventFeed.events(after: after, limit: limit, in: $0) }
  }

  public func activeTrialsByPlan() throws -> [String: Int] {
    try read { txn in
      var counts: [String: Int] = [:]
      try txn.scanTrials(after: nil) { trial in
        if trial.isActive, let plan = trial.attributes.plan { counts[plan, default: 0] += 1 }
        return true
      }
      return counts
    }
  }

  public func cohortsByVariant(plan: String, from: Int32, through: Int32) throws -> [String: CohortCounts] {
    try read { txn in
      var figures: [String: CohortCounts] = [:]
      try txn.scanTrials(after: nil) { trial in
        TrialStats.addByVariant(trial, plan: plan, from: from, through: through, to: &figures)
        return true
      }
      return figures
    }
  }
}

/// Everything a scan of a transaction gives, in its order (`txn.scanOutbox`, `scanConsumers`...):
/// for reads that want a whole set, known to be small, at once.
public func collected<T>(_ scan: (_ body: (T) throws -> Bool) throws -> Void) rethrows -> [T] {
  var all: [T] = []
  try scan {
    all.append($0)
    return true
  }
  return all
}
