import Dispatch
import FoundationEssentials
import Synchronization
import TrialCore

/// Where the engine's writes are carried out: one at a time, in the order they were
/// submitted, each durable before its completion runs on the engine's context.
///
/// The engine takes due events at the instant its timer wakes and hands their commit to the
/// lane, so that a slow commit (a busy machine, a slow `fdatasync`, a database across a
/// network) never holds up the next wake: the taken time stays the wake time, and the events
/// are delivered once their commit is done. Writes submitted while another is in progress are
/// carried out together, in one transaction (a group commit), each body in turn.
///
/// Every transaction of the lane first runs `prelude` (the engine records the deliveries made
/// since the last write there), whose result is handed to `committed` on the engine's context,
/// with the transitions of trials the transaction wrote, before the completions of the
/// transaction's writes; `settled` runs after them.
public protocol CommitLane: AnyObject {
  /// Carries `write` out in a write transaction after every write submitted before it; then,
  /// on the engine's context, tells it how that went (`CommitWrite`).
  func submit(_ write: any CommitWrite)
  /// Runs `body` in a transaction of its own after every write submitted before it, and
  /// returns its result; called on the engine's context, which waits: only for the engine's
  /// last write, at stop.
  func perform<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R
  /// Waits until every write submitted so far is done, and runs their completions now; on
  /// the engine's context.
  func drain()
  /// Refuses the writes submitted from now on, from any thread: each is failed with
  /// `Engine.stopping`, on the engine's context. `perform` and `drain` go on (the engine's stop).
  func close()
  /// Since when (the scheduler's monotonic time) the oldest write still in progress was
  /// submitted; nil when none is. The watchdog stays silent while a write is stuck.
  var busySince: TimeInterval? { get }
  /// Set by the engine before its first write.
  var hooks: CommitHooks? { get set }
  /// How long its transactions took, from any thread (the metrics).
  var durations: CommitDurations { get }
}

/// The durations of a lane's transactions, in seconds: recorded on the lane's queue, read from
/// any thread.
public final class CommitDurations: Sendable {
  private let histogram = Mutex(Histogram(bounds: Histogram.commitBounds))

  public init() {}

  public var current: Histogram { histogram.withLock { $0 } }

  func record(seconds: Double) {
    histogram.withLock { $0.record(seconds) }
  }
}

/// What a transaction of the lane made durable, beside its writes' own results.
public struct CommitRecord {
  /// The deliveries the prelude recorded.
  public var deliveries: [EventID] = []
  /// The changes of trials' states the transaction wrote (`TrialWriteTransaction.transitions`).
  public var transitions: [TrialTransition] = []
}

/// What the engine does in every transaction of its lane (see `CommitLane`).
public struct CommitHooks {
  /// Runs first in every transaction of the lane; returns the deliveries it recorded.
  public let prelude: (any TrialWriteTransaction) throws -> [EventID]
  /// On the engine's context, once a transaction is durable, before its writes' completions.
  public let committed: (CommitRecord) -> Void
  /// On the engine's context, after the completions of a transaction's writes (or their
  /// failure).
  public let settled: () -> Void
  /// On the engine's context, when a transaction failed (before its writes' completions): the
  /// error, and how many writes it failed.
  public let refused: (any Error, Int) -> Void
}

/// A write the lane carries out, and what it does with the outcome: one object a write, which
/// keeps its own result (no closures, nothing boxed on the way through the lane).
public protocol CommitWrite: AnyObject {
  /// In the transaction, on the lane's context. Throws only for a failure of the store, which
  /// fails every write of the transaction. A store may run a transaction's writes again (a
  /// conflict retried): what the last run found is what counts.
  func run(in txn: any TrialWriteTransaction) throws
  /// On the engine's context, once the transaction is durable (`failure` nil) or failed, after
  /// the hooks' `committed` and before their `settled`.
  func done(failure: (any Error)?)
  /// On the engine's context, after the hooks' `settled`: the engine has taken in the whole
  /// transaction, so an answer given now is never ahead of the snapshot reads are answered from.
  func settled()
  /// Whether the write is bookkeeping the engine shows nothing of (the deliveries recorded, by
  /// the prelude): a transaction of such writes alone skips the hooks' `settled`.
  var isBookkeeping: Bool { get }
}

extension CommitWrite {
  public var isBookkeeping: Bool { false }
}

/// A write whose body and completion are closures: `completion` runs with the body's result
/// when the transaction is done (`done`).
final class ClosureWrite<R>: CommitWrite {
  private let body: (any TrialWriteTransaction) throws -> R
  private let completion: (Result<R, any Error>) -> Void
  private var result: R?
  let isBookkeeping: Bool

  init(
    _ body: @escaping (any TrialWriteTransaction) throws -> R, isBookkeeping: Bool = false,
    completion: @escaping (Result<R, any Error>) -> Void
  ) {
    self.body = body
    self.isBookkeeping = isBookkeeping
    self.completion = completion
  }

  func run(in txn: any TrialWriteTransaction) throws {
    result = nil
    result = try body(txn)
  }

  func done(failure: (any Error)?) {
    if let failure { return completion(.failure(failure)) }
    guard let result else { return completion(.failure(CommitLaneError.notRun)) }
    completion(.success(result))
  }

  func settled() {}
}

/// A write's completion ran without its body having run: a lane's fault, never the store's.
enum CommitLaneError: Error, CustomStringConvertible {
  case notRun

  var description: String { "the commit lane completed a write it had not carried out" }
}

/// Writes a lane carries out together, in one transaction, and what came of them: the lanes
/// share this, so that each runs a transaction and its completions the same way.
public struct CommitBatch {
  private(set) var writes: [any CommitWrite] = []
  private var failure: (any Error)?
  private var record = CommitRecord()

  public init() {}

  public var isEmpty: Bool { writes.isEmpty }
  public var count: Int { writes.count }

  public mutating func append(_ write: any CommitWrite) {
    writes.append(write)
  }

  /// Runs the hooks' prelude, then every write in turn, in one write transaction.
  public mutating func commit(to repository: any TrialRepository, hooks: CommitHooks?) {
    var record = CommitRecord()
    let writes = self.writes
    do {
      try repository.write { txn in
        record.deliveries = try hooks?.prelude(txn) ?? []
        for write in writes { try write.run(in: txn) }
        record.transitions = txn.transitions
      }
      failure = nil
    } catch {
      failure = error
    }
    self.record = record
  }

  /// Fails every write without running it (nothing is written).
  public mutating func fail(_ error: any Error) {
    failure = error
  }

  /// A write refused by a closed lane: failed with `Engine.stopping`, completed without hooks.
  public static func refusing(_ write: any CommitWrite) -> CommitBatch {
    var batch = CommitBatch()
    batch.append(write)
    batch.fail(Engine.stopping)
    return batch
  }

  /// On the engine's context, once `commit` (or `fail`) ran: the deliveries the transaction
  /// recorded, then each write's `done`, the hooks' `settled` (unless every write was
  /// bookkeeping), and each write's `settled`.
  public func complete(hooks: CommitHooks?) {
    if let failure { hooks?.refused(failure, writes.count) } else { hooks?.committed(record) }
    for write in writes { write.done(failure: failure) }
    if writes.contains(where: { !$0.isBookkeeping }) { hooks?.settled() }
    for write in writes { write.settled() }
  }
}

extension CommitHooks {
  /// A write of its own, the prelude first: its result, and what it made durable (for
  /// `committed`, on the engine's context). A lane's `perform`.
  public func write<R>(_ body: (any TrialWriteTransaction) throws -> R, on repository: any TrialRepository)
    throws -> (result: R, record: CommitRecord)
  {
    var record = CommitRecord()
    let result = try repository.write { txn in
      record.deliveries = try prelude(txn)
      let result = try body(txn)
      record.transitions = txn.transitions
      return result
    }
    return (result, record)
  }
}

extension CommitLane {
  /// Runs `body` in a write transaction after every write submitted before it; then, on the
  /// engine's context, `completion` with its result.
  func submit<R>(
    _ body: @escaping (any TrialWriteTransaction) throws -> R,
    completion: @escaping (Result<R, any Error>) -> Void
  ) {
    submit(ClosureWrite(body, completion: completion))
  }
}

/// A lane that carries out each write at once, on the caller's context, and runs its
/// completion before returning: a write is done when `submit` returns. For tests in virtual
/// time, where the engine's context is the test itself.
public final class ImmediateCommitLane: CommitLane {
  let repository: any TrialRepository
  public var hooks: CommitHooks?

  public init(repository: any TrialRepository) {
    self.repository = repository
  }

  private var closed = false

  public func submit(_ write: any CommitWrite) {
    guard !closed else { return CommitBatch.refusing(write).complete(hooks: nil) }
    var batch = CommitBatch()
    batch.append(write)
    batch.commit(to: repository, hooks: hooks)
    batch.complete(hooks: hooks)
  }

  public func close() { closed = true }

  public func perform<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    guard let hooks else { return try repository.write(body) }
    let (result, record) = try hooks.write(body, on: repository)
    hooks.committed(record)
    return result
  }

  public func drain() {}

  public var busySince: TimeInterval? { nil }

  /// Nothing is timed here (tests in virtual time): the histogram stays empty.
  public let durations = CommitDurations()
}

/// The daemon's lane: a serial queue of its own carries the writes out, and their
/// completions go back to the engine's queue in the order of the writes. Writes that wait
/// while one is in progress are carried out together, in one transaction.
public final class DispatchCommitLane: CommitLane, @unchecked Sendable {
  // @unchecked: `hooks` is set before the first write; the rest is guarded by `state`.

  // @unchecked: a batch's writes run on the lane's queue, then complete on the engine's, one
  // at a time; the lock only passes them from one to the other.
  private struct Batch: @unchecked Sendable {
    var batch = CommitBatch()
  }

  private struct State {
    var waiting = Batch()
    /// Submission times of the writes not done yet, oldest first.
    var submitted: [TimeInterval] = []
    var running = false
    var closed = false
    /// Transactions done whose completions have not run yet, in order.
    var done: [Batch] = []
  }

  private let repository: any TrialRepository
  private let engineQueue: DispatchQueue
  private let monotonicNow: @Sendable () -> TimeInterval
  private let queue = DispatchQueue(label: "trialwatch.commit")
  private let state = Mutex(State())
  public var hooks: CommitHooks?

  /// `monotonicNow`: the engine's scheduler's monotonic time, for `busySince`.
  public init(
    repository: any TrialRepository, engineQueue: DispatchQueue,
    monotonicNow: @escaping @Sendable () -> TimeInterval
  ) {
    self.repository = repository
    self.engineQueue = engineQueue
    self.monotonicNow = monotonicNow
  }

  public var busySince: TimeInterval? { state.withLock { $0.submitted.first } }

  public let durations = CommitDurations()

  public func submit(_ write: any CommitWrite) {
    let now = monotonicNow()
    let start: Bool? = state.withLock { state in
      guard !state.closed else { return nil }
      state.waiting.batch.append(write)
      state.submitted.append(now)
      defer { state.running = true }
      return !state.running
    }
    switch start {
    case true?: queue.async { self.run() }
    case false?: break
    case nil:
      let refused = Batch(batch: .refusing(write))
      engineQueue.async { refused.batch.complete(hooks: nil) }
    }
  }

  public func close() {
    state.withLock { $0.closed = true }
  }

  /// On the lane's queue: carries out the waiting writes, all of them in each transaction,
  /// until none is left.
  private func run() {
    while true {
      var jobs = state.withLock { state in
        defer { state.waiting = Batch() }
        if state.waiting.batch.isEmpty { state.running = false }
        return state.waiting
      }
      guard !jobs.batch.isEmpty else { return }
      let began = monotonicNow()
      jobs.batch.commit(to: repository, hooks: hooks)
      durations.record(seconds: monotonicNow() - began)
      state.withLock { state in
        state.submitted.removeFirst(jobs.batch.count)
        state.done.append(jobs)
      }
      engineQueue.async { self.complete() }
    }
  }

  /// On the engine's queue: the completions of the transactions done, in order.
  private func complete() {
    while let done = state.withLock({ $0.done.isEmpty ? nil : $0.done.removeFirst() }) {
      done.batch.complete(hooks: hooks)
    }
  }

  public func perform<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    // Behind the writes submitted before: the lane's queue runs them first.
    guard let hooks else { return try queue.sync { try repository.write(body) } }
    let (result, record) = try queue.sync { try hooks.write(body, on: repository) }
    hooks.committed(record)
    return result
  }

  public func drain() {
    queue.sync {}
    complete()
  }
}
