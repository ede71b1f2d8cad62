import Foundation
import TrialCore

/// A repository kept in memory, with the same transaction semantics as the file store: a
/// write that throws leaves nothing behind; reads run on any thread, each on the state last
/// committed, alongside the one write. For unit tests of the logic above the store.
public final class InMemoryTrialRepository: TrialRepository, @unchecked Sendable {
  // @unchecked: `state` and the counters are touched under `lock`; writes, one at a time,
  // under `writer`.
  struct State {
    var trials: [TrialID: Trial] = [:]
    /// Each subject's latest trial, active or ended (as the file store's subject index).
    var subjects: [String: TrialID] = [:]
    var ledger: [EventID: LedgerEntry] = [:]
    /// The ledger's ids by trial, so that one trial's entries are found without a scan.
    var ledgerByTrial: [TrialID: Set<EventID>] = [:]
    var outbox: Set<EventID> = []
    var lastSeen: Date?
    /// The event log, in cursor order.
    var events: [LoggedEvent] = []
    /// The log's newest cursor, and the one it is pruned through.
    var eventsLast = EventCursor.origin
    var eventsPrunedThrough = EventCursor.origin
    var consumers: [String: ConsumerRecord] = [:]
    /// By scope and key.
    var uses: [String: SubjectUse] = [:]
    var cohorts: [CohortKey: CohortCounts] = [:]
    var generation = LogGeneration.initial
    var webhookEndpoints: [String: WebhookEndpointState] = [:]
    /// Each endpoint's pending events, by sequence.
    var webhookEvents: [String: [UInt64: WebhookPendingEvent]] = [:]

    static func useKey(_ scope: SubjectUse.Scope, _ key: String) -> String { "\(scope)\u{0}\(key)" }

    var eventBounds: EventLogBounds {
      EventLogBounds(
        last: eventsLast, prunedThrough: eventsPrunedThrough, count: events.count, generation: generation)
    }
  }

  private var state = State()
  private var commits = 0
  private var failure: (any Error)?
  private var lastingFailure: (any Error)?
  private let lock = NSLock()
  private let writer = NSRecursiveLock()

  /// Number of committed write transactions.
  public var commitCount: Int { lock.withLock { commits } }
  /// When set, the next commit fails with this error (and changes nothing).
  public var failNextCommit: (any Error)? {
    get { lock.withLock { failure } }
    set { lock.withLock { failure = newValue } }
  }

  /// While set, every commit fails with this error (and changes nothing): a full disk.
  public var failCommits: (any Error)? {
    get { lock.withLock { lastingFailure } }
    set { lock.withLock { lastingFailure = newValue } }
  }

  public init() {}

  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try body(Transaction(state: lock.withLock { state }))
  }

  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try writer.withLock {
      let txn = Transaction(state: lock.withLock { state })
      let result = try body(txn)
      try lock.withLock {
        if let failure {
          self.failure = nil
          throw failure
        }
        if let lastingFailure { throw lastingFailure }
        state = txn.state
        commits += 1
      }
      return result
    }
  }

  private final class Transaction: TrialWriteTransaction {
    var state: State

    /// The changes of trials' states written (`TrialWriteTransaction.transitions`).
    private(set) var transitions: [TrialTransition] = []

    func noteTransition(_ transition: TrialTransition) { transitions.append(transition) }

    init(state: State) {
      self.state = state
    }

    func trial(_ id: TrialID) throws -> Trial? { state.trials[id] }

    func activeTrialID(subject: String) throws -> TrialID? {
      try latestTrialID(subject: subject).flatMap { state.trials[$0]?.isOpen == true ? $0 : nil }
    }

    func latestTrialID(subject: String) throws -> TrialID? {
      state.subjects[subject].flatMap { state.trials[$0]?.subject == subject ? $0 : nil }
    }

    func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws {
      for id in state.trials.keys.sorted() where after.map({ id > $0 }) ?? true {
        guard try body(state.trials[id]!) else { return }
      }
    }

    func ledgerEntry(_ id: EventID) throws -> LedgerEntry? { state.ledger[id] }

    func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] {
      (state.ledgerByTrial[trial] ?? []).sorted().map { state.ledger[$0]! }
    }

    func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws {
      for id in state.outbox.sorted() {
        guard try body(state.ledger[id]!) else { return }
      }
    }

    func lastSeenWallTime() throws -> Date? { state.lastSeen }

    func eventLogBounds() throws -> EventLogBounds { state.eventBounds }

    func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws {
      // Cursors are consecutive from the oldest kept: the first after `after` is found by index.
      let start = Int(clamping: after.sequence) - Int(clamping: state.eventsPrunedThrough.sequence)
      for event in state.events[max(0, min(start, state.events.count))...] {
        var event = event
        event.cursor = event.cursor.of(generation: state.generation.number)
        guard try body(event) else { return }
      }
    }

    func consumer(named name: String) throws -> ConsumerRecord? { state.consumers[name].map(stamped) }

    /// The consumer with its position in the log's generation.
    private func stamped(_ consumer: ConsumerRecord) -> ConsumerRecord {
      var consumer = consumer
      consumer.acknowledged = consumer.acknowledged.of(generation: state.generation.number)
      return consumer
    }

    func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws {
      for name in state.consumers.keys.sorted() {
        guard try body(stamped(state.consumers[name]!)) else { return }
      }
    }

    func putTrial(_ trial: Trial) throws {
      state.trials[trial.id] = trial
      if trial.isOpen { state.subjects[trial.subject] = trial.id }
    }

    func putLedgerEntry(_ entry: LedgerEntry) throws {
      state.ledger[entry.id] = entry
      state.ledgerByTrial[entry.event.trialID, default: []].insert(entry.id)
      if entry.isDelivered {
        state.outbox.remove(entry.id)
      } else {
        state.outbox.insert(entry.id)
      }
    }

    func setLastSeenWallTime(_ date: Date) throws { state.lastSeen = date }

    func appendEvent(_ entry: LedgerEntry, attributes: TrialAttributes) throws -> LoggedEvent {
      var entry = entry
      entry.deliveredAt = nil
      let cursor = state.eventsLast.next.of(generation: state.generation.number)
      let event = LoggedEvent(cursor: cursor, entry: entry, attributes: attributes)
      state.events.append(event)
      state.eventsLast = event.cursor
      return event
    }

    func pruneEvents(through: EventCursor) throws -> Int {
      let count = state.events.prefix { $0.cursor <= through }.count
      state.events.removeFirst(count)
      state.eventsPrunedThrough = max(state.eventsPrunedThrough, min(through, state.eventsLast))
      return count
    }

    func putConsumer(_ consumer: ConsumerRecord) throws { state.consumers[consumer.name] = consumer }

    func setLogGeneration(_ generation: LogGeneration) throws { state.generation = generation }

    func removeConsumer(named name: String) throws -> Bool {
      state.consumers.removeValue(forKey: name) != nil
    }

    func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
      state.uses[State.useKey(scope, key)]
    }

    func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
      let sorted = state.uses.values.sorted { $0.position.bytes.lexicographicallyPrecedes($1.position.bytes) }
      for use in sorted where after.map({ $0.bytes.lexicographicallyPrecedes(use.position.bytes) }) ?? true {
        guard try body(use) else { return }
      }
    }

    func removeTrial(_ id: TrialID) throws {
      guard let trial = state.trials[id], trial.state.isEnded else { return }
      state.trials[id] = nil
      for entry in state.ledgerByTrial.removeValue(forKey: id) ?? [] {
        state.ledger[entry] = nil
        state.outbox.remove(entry)
      }
      if state.subjects[trial.subject] == id { state.subjects[trial.subject] = nil }
    }

    func putSubjectUse(_ use: SubjectUse) throws { state.uses[State.useKey(use.scope, use.key)] = use }

    func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
      state.cohorts.filter { (from...through).contains($0.key.day) }.sorted { $0.key < $1.key }
        .map { (key: $0.key, counts: $0.value) }
    }

    func addToCohort(_ key: CohortKey, _ delta: CohortCounts) throws {
      var counts = state.cohorts[key, default: CohortCounts()]
      counts.add(delta)
      state.cohorts[key] = counts.isZero ? nil : counts
    }

    func webhookEndpoint(named name: String) throws -> WebhookEndpointState? {
      state.webhookEndpoints[name].map(stamped)
    }

    func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
      for name in state.webhookEndpoints.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
        guard try body(stamped(state.webhookEndpoints[name]!)) else { return }
      }
    }

    func scanWebhookEvents(
      endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool
    ) throws {
      let events = state.webhookEvents[endpoint] ?? [:]
      for sequence in events.keys.sorted() where sequence > after.sequence {
        var event = events[sequence]!
        event.cursor = event.cursor.of(generation: state.generation.number)
        guard try body(event) else { return }
      }
    }

    /// The endpoint's attempts with their cursors in the log's generation.
    private func stamped(_ endpoint: WebhookEndpointState) -> WebhookEndpointState {
      endpoint.inGeneration(state.generation.number)
    }

    func putWebhookEndpoint(_ endpoint: WebhookEndpointState) throws {
      state.webhookEndpoints[endpoint.name] = endpoint
    }

    func removeWebhookEndpoint(named name: String) throws -> Bool {
      let state = state.webhookEndpoints.removeValue(forKey: name) != nil
      let events = self.state.webhookEvents.removeValue(forKey: name).map { !$0.isEmpty } ?? false
      return state || events
    }

    func putWebhookEvent(_ event: WebhookPendingEvent) throws {
      state.webhookEvents[event.endpoint, default: [:]][event.cursor.sequence] = event
    }

    func removeWebhookEvents(endpoint: String, through: EventCursor) throws -> Int {
      guard let events = state.webhookEvents[endpoint] else { return 0 }
      let passed = events.keys.filter { $0 <= through.sequence }
      for sequence in passed { state.webhookEvents[endpoint]![sequence] = nil }
      if state.webhookEvents[endpoint]!.isEmpty { state.webhookEvents[endpoint] = nil }
      return passed.count
    }

    func removeSubjectUse(scope: SubjectUse.Scope, key: String) throws -> Bool {
      state.uses.removeValue(forKey: State.useKey(scope, key)) != nil
    }
  }
}

extension TrialReadTransaction {
  /// Every record of a subject granted a trial once, in scope and key order (for tests).
  public func allSubjectUses() throws -> [SubjectUse] {
    try collected { try scanSubjectUses(after: nil, $0) }
  }

  /// Every trial in the store, in id order (for tests: the whole store at once).
  public func allTrials() throws -> [Trial] { try collected { try scanTrials(after: nil, $0) } }
}

/// No file, nothing to say at opening, nothing to let go of.
extension InMemoryTrialRepository: StoreServices {
  public func fileSize() -> Int? { nil }
  public func space() -> StoreSpace? { nil }
  public var openingNotes: [StoreNote] { [] }
  public func close() {}
  public func releaseMemory() {}
}
