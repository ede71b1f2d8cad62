import Dispatch
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing
import TrialControl
import TrialControlServer
import TrialCore
import TrialDaemon
import TrialEngine
import TrialPostgresTesting
import TrialStore
import TrialTesting

#if canImport(Glibc)
  import Glibc
#endif

/// A control server on a socket in a fresh temporary directory, answering through the
/// daemon's own handlers over a real `Engine` (in memory or on LMDB). Time is virtual: it
/// starts at `start` and moves only when the test moves it.
public final class ControlFixture {
  public static let start = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15T15:06:40Z

  public let scratch: TemporaryDirectory
  public var directory: String { scratch.path }
  public let socketPath: String
  public let logs = CapturedLogs()
  public let server: ControlServer
  public let engine: EngineParts
  /// With `holdingWrites`: the store, whose next commit the test may hold (`holdNextWrite`).
  public let writes: HeldCommitRepository?
  private let calls = CallCounts()

  /// Calls that reached a handler, and calls handlers have taken (a change is then queued).
  private final class CallCounts: Sendable {
    let received = Atomic<Int>(0)
    let taken = Atomic<Int>(0)
    let arrivals = DispatchSemaphore(value: 0)
  }

  public init(
    store: StoreKind = .memory, options: ControlServer.Options = ControlServer.Options(),
    group: UInt32? = nil,
    authorizer: ControlAuthorizer? = nil, ids: [UInt64] = [], start: Date = ControlFixture.start,
    repository given: (any TrialRepository)? = nil, fleetStatus: (@Sendable () -> FleetStatus?)? = nil,
    holdingWrites: Bool = false
  ) throws {
    scratch = try TemporaryDirectory("control")
    socketPath = scratch.appending("io.trialwatch")
    let repository: any TrialRepository
    switch (given, store) {
    case (let given?, _): repository = given
    case (nil, .memory): repository = InMemoryTrialRepository()
    case (nil, .lmdb): repository = try LMDBTrialRepository(directory: scratch.appending("store"))
    case (nil, .postgres): repository = try PostgresTestStore().repository
    }
    writes = holdingWrites ? HeldCommitRepository(repository) : nil
    engine = try EngineParts(
      repository: writes ?? repository, ids: ids, start: start, fleetStatus: fleetStatus)
    var options = options
    options.version = "1.2.3-test"
    let calls = self.calls
    let routes = (engine.handlers.routes + engine.metrics.routes).map { route in
      route.observed(
        starting: { calls.received.add(1, ordering: .relaxed) },
        taken: {
          calls.taken.add(1, ordering: .relaxed)
          calls.arrivals.signal()
        })
    }
    server = try ControlServer(
      listener: .bind(path: socketPath, group: group), routes: routes, counters: engine.handlers.counters,
      options: options, authorizer: authorizer, logger: logs.makeLogger())
    server.start()
  }

  deinit {
    stop()
    engine.close()
  }

  /// The engine's current time.
  public var now: Date { engine.now }

  /// Time passes: each event fires as it falls due.
  public func advance(by interval: TimeInterval) { engine.advance(by: interval) }

  /// The machine sleeps for `interval` and resumes: what fell due meanwhile is taken late.
  public func jump(by interval: TimeInterval) { engine.jump(by: interval) }

  /// The events delivered since the last call, as watchers got them.
  @discardableResult
  public func fireDue() -> [EventObject] { engine.fireDue() }

  /// Keeps the engine's queue busy until `releaseEngine()`, as a long commit would.
  public func holdEngine() { engine.hold() }
  public func releaseEngine() { engine.release() }

  /// Calls that reached a handler so far.
  public var callsReceived: Int { calls.received.load(ordering: .relaxed) }

  /// Waits, at most `timeout` seconds, until handlers have taken `count` calls.
  public func waitUntilReceived(_ count: Int, timeout: Double = patience) -> Bool {
    let deadline = DispatchTime.now() + timeout
    while calls.taken.load(ordering: .relaxed) < count {
      if calls.arrivals.wait(timeout: deadline) == .timedOut {
        return calls.taken.load(ordering: .relaxed) >= count
      }
    }
    return true
  }

  /// Ends every Watch, as a stopping daemon does.
  public func finishWatchers() { engine.handlers.finishWatchers() }

  public func client() throws -> VarlinkClient {
    let client = try VarlinkClient(path: socketPath)
    client.setReceiveTimeout(seconds: patience)
    return client
  }

  /// A client watching: Watch sent, and its first reply read.
  public func watcher() throws -> VarlinkClient {
    let watcher = try client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    return watcher
  }

  /// Stops the server and waits (bounded) until every connection is closed.
  @discardableResult
  public func stop() -> Bool {
    let done = DispatchSemaphore(value: 0)
    server.stop { done.signal() }
    return done.wait(timeout: .now() + 10) == .success
  }
}

/// The daemon's engine as `ControlService` wires it: an `Engine` over a repository, owned by
/// one serial queue, behind `TrialsHandlers`. Time is virtual: a `TestScheduler`.
public final class EngineParts: @unchecked Sendable {
  // @unchecked: the engine, the scheduler and the repository are touched only on `queue`.
  public let queue = DispatchQueue(label: "trialwatch.test-engine")
  public let scheduler: TestScheduler
  public let repository: any TrialRepository
  public let engine: Engine
  public let handlers: TrialsHandlers
  /// `io.systemd.Metrics` of the same engine.
  public let metrics: MetricsHandlers
  private let taken = TakenEvents()
  private let held = DispatchSemaphore(value: 0)
  private let holds = Mutex(0)

  public init(
    repository: any TrialRepository, ids: [UInt64], start: Date,
    fleetStatus: (@Sendable () -> FleetStatus?)? = nil
  ) throws {
    let scheduler = TestScheduler(now: start)
    self.scheduler = scheduler
    self.repository = repository
    // The daemon's lane: writes on a queue of their own, those that wait behind one in progress
    // committed together. Its timing is real time; the engine's is virtual.
    let lane = DispatchCommitLane(
      repository: repository, engineQueue: queue,
      monotonicNow: { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 })
    engine = makeEngine(
      repository: repository, scheduler: QueueRunScheduler(scheduler, queue: queue), ids: ids, sinks: [taken],
      commits: lane)
    _ = try queue.sync { [engine] in try engine.start() }
    let services = repository as? any StoreServices
    handlers = TrialsHandlers(
      engine: engine, queue: queue, startedAt: start, version: "1.2.3-test",
      storeBytes: { [weak services] in services?.fileSize() }, fleetStatus: fleetStatus)
    metrics = MetricsHandlers(
      handlers: handlers, engine: engine, queue: queue, space: { [weak services] in services?.space() },
      fleet: nil)
  }

  public var now: Date { queue.sync { scheduler.manualClock.now() } }

  /// Moves virtual time on the engine's queue: due events fire, are committed and delivered;
  /// without `waitingForCommits`, the engine takes them and goes on while the lane commits.
  public func advance(by interval: TimeInterval, waitingForCommits: Bool = true) {
    queue.sync {
      scheduler.advance(by: interval)
      if waitingForCommits { engine.commits.drain() }
    }
  }

  public func jump(by interval: TimeInterval) {
    queue.sync {
      scheduler.jump(by: interval)
      engine.commits.drain()
    }
  }

  /// Runs what is due now; returns the events delivered since the last call.
  public func fireDue() -> [EventObject] {
    queue.sync {
      scheduler.advance(by: 0)
      engine.commits.drain()
    }
    return taken.drain()
  }

  /// Keeps the engine's queue busy until `release()`: whatever is sent to it meanwhile waits.
  public func hold() {
    holds.withLock { $0 += 1 }
    queue.async { self.held.wait() }
  }

  public func release() {
    holds.withLock { $0 -= 1 }
    held.signal()
  }

  /// The transactions the commit lane has run.
  public var commits: Int {
    queue.sync { Int(engine.commits.durations.current.count) }
  }

  /// Every trial in the store, in id order.
  public func storedTrials() throws -> [Trial] {
    try queue.sync { try repository.read { try $0.allTrials() } }
  }

  /// Stops the engine, as the daemon does, and closes the store.
  public func close() {
    // A test that stopped early may still hold the queue.
    for _ in 0..<holds.withLock({ $0 }) { release() }
    queue.sync {
      engine.stop()
      scheduler.expectNoPendingActions()
    }
    (repository as? any StoreServices)?.close()
  }
}

/// The engine's scheduler in the fixture: virtual time from a `TestScheduler`, except that an
/// action asked for with no delay (the engine's group commit) runs as soon as the queue is
/// free, as `DispatchWakeScheduler` runs it. Changes sent together by clients are committed
/// together, and no test has to move time for a call to be answered.
private final class QueueRunScheduler: ForwardingWakeScheduler, @unchecked Sendable {
  // @unchecked: used only on `queue`, as the engine's scheduler is.
  private let virtual: TestScheduler
  private let queue: DispatchQueue

  init(_ virtual: TestScheduler, queue: DispatchQueue) {
    self.virtual = virtual
    self.queue = queue
  }

  var inner: any WakeScheduler { virtual }

  @discardableResult
  func schedule(after delay: TimeInterval, label: String, _ action: @escaping () -> Void)
    -> any ScheduledWake
  {
    let wake = virtual.schedule(after: delay, label: label, action)
    if delay <= 0 {
      queue.async { self.virtual.advance(by: 0) }
    }
    return wake
  }
}

/// Every event the engine delivered, as watchers get them, until the test takes them.
private final class TakenEvents: EventSink, Sendable {
  private let events = Mutex<[EventObject]>([])

  func deliver(_ event: LoggedEvent, trial: Trial?) throws {
    events.withLock { $0.append(EventObject(event.entry, attributes: event.attributes)) }
  }

  func drain() -> [EventObject] {
    events.withLock { events in
      defer { events.removeAll() }
      return events
    }
  }
}

/// Log records kept for assertions; waits on them with a deadline.
public final class CapturedLogs: @unchecked Sendable {
  public struct Record: Sendable {
    public var level: Logger.Level
    public var message: String
    public var metadata: [String: String]
  }

  private let condition = NSCondition()
  private var records: [Record] = []

  public init() {}

  public var all: [Record] {
    condition.lock()
    defer { condition.unlock() }
    return records
  }

  /// Waits until a record satisfies `match`, at most `timeout` seconds.
  public func waitFor(timeout: TimeInterval = patience, _ match: (Record) -> Bool) -> Record? {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let found = records.first(where: match) { return found }
      guard condition.wait(until: deadline) else { return records.first(where: match) }
    }
  }

  public func makeLogger() -> Logger {
    Logger(label: "test") { _ in Handler(sink: self) }
  }

  fileprivate func append(_ record: Record) {
    condition.lock()
    records.append(record)
    condition.broadcast()
    condition.unlock()
  }

  private struct Handler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
      get { metadata[key] }
      set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
      var merged = metadata
      for (key, value) in event.metadata ?? [:] { merged[key] = value }
      sink.append(
        Record(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" })
      )
    }
  }
}
