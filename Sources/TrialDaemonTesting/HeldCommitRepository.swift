import Dispatch
import Foundation
import Synchronization
import TestSupport
import TrialCore
import TrialTesting

/// A repository whose next write, once `holdNextWrite()` is called, stops inside its
/// transaction until `releaseWrite()`: a commit in progress (an `fdatasync` that takes its
/// time), for tests that show what does not wait for it. Its next scan of the trials, once
/// `holdNextScan()` is called, stops the same way until `releaseScan()`: a long read (a scan
/// of a large store). Otherwise the repository it wraps (in memory unless given).
public final class HeldCommitRepository: TrialRepository, @unchecked Sendable {
  // @unchecked: the repository wrapped is safe to use from any thread, as every store is.
  private let inner: any TrialRepository
  private let writes = Hold()
  private let scans = Hold()

  public init(_ inner: any TrialRepository = InMemoryTrialRepository()) {
    self.inner = inner
  }

  /// The next write will stop until `releaseWrite()`.
  public func holdNextWrite() { writes.arm() }
  /// Waits until the held write has begun; false when it did not within `timeout` seconds.
  public func waitUntilWriteHeld(timeout: Double = patience) -> Bool {
    writes.waitUntilHeld(timeout: timeout)
  }
  public func releaseWrite() { writes.release() }
  /// Whether a write is stopped here now (held, and neither released nor given up on).
  public var isWriteHeld: Bool { writes.isHolding }

  /// The next read that scans the trials will stop until `releaseScan()`.
  public func holdNextScan() { scans.arm() }
  /// Waits until the held scan has begun; false when it did not within `timeout` seconds.
  public func waitUntilScanHeld(timeout: Double = patience) -> Bool { scans.waitUntilHeld(timeout: timeout) }
  public func releaseScan() { scans.release() }

  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try inner.read { txn in try body(HeldScan(inner: txn) { [scans] in scans.stopIfArmed() }) }
  }

  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try inner.write { txn in
      let result = try body(txn)
      writes.stopIfArmed()
      return result
    }
  }

  public func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try inner.restore(into: &planner, progressEvery: progressEvery, progress: progress)
  }
}

/// A read transaction whose `scanTrials` first calls `beforeScan`.
private struct HeldScan: TrialReadTransaction {
  let inner: any TrialReadTransaction
  let beforeScan: () -> Void

  func trial(_ id: TrialID) throws -> Trial? { try inner.trial(id) }
  func activeTrialID(subject: String) throws -> TrialID? { try inner.activeTrialID(subject: subject) }
  func latestTrialID(subject: String) throws -> TrialID? { try inner.latestTrialID(subject: subject) }
  func scanTrials(after: TrialID?, _ body: (Trial) throws -> Bool) throws {
    beforeScan()
    try inner.scanTrials(after: after, body)
  }
  func ledgerEntry(_ id: EventID) throws -> LedgerEntry? { try inner.ledgerEntry(id) }
  func ledgerEntries(trial: TrialID) throws -> [LedgerEntry] { try inner.ledgerEntries(trial: trial) }
  func scanOutbox(_ body: (LedgerEntry) throws -> Bool) throws { try inner.scanOutbox(body) }
  func lastSeenWallTime() throws -> Date? { try inner.lastSeenWallTime() }
  func eventLogBounds() throws -> EventLogBounds { try inner.eventLogBounds() }
  func scanEvents(after: EventCursor, _ body: (LoggedEvent) throws -> Bool) throws {
    try inner.scanEvents(after: after, body)
  }
  func consumer(named name: String) throws -> ConsumerRecord? { try inner.consumer(named: name) }
  func scanConsumers(_ body: (ConsumerRecord) throws -> Bool) throws { try inner.scanConsumers(body) }
  func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
    try inner.subjectUse(scope: scope, key: key)
  }
  func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
    try inner.scanSubjectUses(after: after, body)
  }
  func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
    try inner.cohorts(from: from, through: through)
  }
  func webhookEndpoint(named name: String) throws -> WebhookEndpointState? {
    try inner.webhookEndpoint(named: name)
  }
  func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {
    try inner.scanWebhookEndpoints(body)
  }
  func scanWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
  {
    try inner.scanWebhookEvents(endpoint: endpoint, after: after, body)
  }
}

/// One place where the repository can be made to stop: armed, the next pass stops there until
/// released.
private final class Hold: Sendable {
  private let armed = Atomic<Bool>(false)
  private let holding = Atomic<Bool>(false)
  private let entered = DispatchSemaphore(value: 0)
  private let released = DispatchSemaphore(value: 0)

  func arm() { armed.store(true, ordering: .sequentiallyConsistent) }

  func waitUntilHeld(timeout: Double) -> Bool { entered.wait(timeout: .now() + timeout) == .success }

  func release() { released.signal() }

  var isHolding: Bool { holding.load(ordering: .sequentiallyConsistent) }

  /// Stops until released, when armed (once).
  func stopIfArmed() {
    guard armed.exchange(false, ordering: .sequentiallyConsistent) else { return }
    holding.store(true, ordering: .sequentiallyConsistent)
    entered.signal()
    // A test that fails before releasing must not hang the suite.
    _ = released.wait(timeout: .now() + patience)
    holding.store(false, ordering: .sequentiallyConsistent)
  }
}
