import Dispatch
import Foundation
import Logging
import Synchronization
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon

/// Log records kept for assertions; waits on them with a deadline.
final class CapturedLogs: @unchecked Sendable {
  struct Record: Sendable {
    var level: Logger.Level
    var message: String
    var metadata: [String: String]
  }

  private let condition = NSCondition()
  private var records: [Record] = []

  func append(_ record: Record) {
    condition.lock()
    records.append(record)
    condition.broadcast()
    condition.unlock()
  }

  var all: [Record] {
    condition.lock()
    defer { condition.unlock() }
    return records
  }

  /// Waits until a record satisfies `match`, at most `timeout` seconds.
  func waitFor(timeout: TimeInterval = 10, _ match: (Record) -> Bool) -> Record? {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let found = records.first(where: match) { return found }
      guard condition.wait(until: deadline) else { return records.first(where: match) }
    }
  }

  func makeLogger() -> Logger {
    Logger(label: "test") { _ in Handler(sink: self) }
  }

  struct Handler: LogHandler {
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
        Record(
          level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }
  }
}

/// The backend behind a `ServerFixture`'s control server.
enum BackendKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
  /// `InMemoryTrialsBackend`: a stand-in whose events fire only when the test asks.
  case inMemory
  /// The daemon's own: `EngineTrialsBackend` over an `Engine` and an LMDB store, in virtual time.
  case engine

  var testDescription: String { rawValue }
}

/// A control server on a socket in a fresh temporary directory, over either backend. Time
/// starts at `start` and moves only when the test moves it.
final class ServerFixture {
  static let start = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15T15:06:40Z

  let directory: String
  let socketPath: String
  /// The backend the server answers through, counting the calls handed to it.
  let backend: CountingBackend
  let logs = CapturedLogs()
  let server: ControlServer
  private let parts: Parts

  private enum Parts {
    case inMemory(InMemoryTrialsBackend, ManualWallClock)
    case engine(EngineParts)
  }

  init(
    backend kind: BackendKind = .inMemory, options: ControlServer.Options = ControlServer.Options(),
    group: UInt32? = nil, authorizer: ControlAuthorizer? = nil, ids: [UInt64] = [],
    answersInline: Bool = false
  ) throws {
    directory = try makeTemporaryDirectory()
    socketPath = directory + "/io.trialwatch"
    switch kind {
    case .inMemory:
      let clock = ManualWallClock(ServerFixture.start)
      let backend = InMemoryTrialsBackend(
        clock: clock, ids: SequenceTrialIDGenerator(ids), answersInline: answersInline)
      parts = .inMemory(backend, clock)
      self.backend = CountingBackend(backend)
    case .engine:
      let engine = try EngineParts(directory: directory + "/store", ids: ids)
      parts = .engine(engine)
      backend = CountingBackend(engine.backend)
    }
    var options = options
    options.version = "1.2.3-test"
    server = try ControlServer(
      listener: .bind(path: socketPath, group: group), backend: backend, options: options,
      authorizer: authorizer,
      logger: logs.makeLogger())
    server.start()
  }

  deinit {
    stop()
    if case .engine(let engine) = parts { engine.close() }
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// The engine's parts, for tests of the daemon's own backend.
  var engine: EngineParts {
    guard case .engine(let engine) = parts else { preconditionFailure("not the engine backend") }
    return engine
  }

  /// The backend's current time.
  var now: Date {
    switch parts {
    case .inMemory(_, let clock): clock.now()
    case .engine(let engine): engine.now
    }
  }

  /// Time passes. The engine fires each event as it falls due; the in-memory backend only
  /// moves its clock, and fires what is due at `fireDue()`.
  func advance(by interval: TimeInterval) {
    switch parts {
    case .inMemory(_, let clock): clock.advance(by: interval)
    case .engine(let engine): engine.advance(by: interval)
    }
  }

  /// The machine sleeps for `interval` and resumes: time moves at once and what fell due
  /// meanwhile is taken late, at the new time (by the engine as it wakes; by the in-memory
  /// backend at `fireDue()`).
  func jump(by interval: TimeInterval) {
    switch parts {
    case .inMemory(_, let clock): clock.advance(by: interval)
    case .engine(let engine): engine.jump(by: interval)
    }
  }

  /// Fires whatever is due now, and returns the events taken since the last call (for the
  /// engine, which fires events as time passes, those it took meanwhile), as watchers get them.
  @discardableResult
  func fireDue() throws -> [EventObject] {
    switch parts {
    case .inMemory(let backend, _): try backend.fireDue()
    case .engine(let engine): engine.fireDue()
    }
  }

  /// Holds every call handed to the backend until `releaseBackend()`, as a busy engine does:
  /// the in-memory backend suspends its queue; the engine's queue is kept busy.
  func holdBackend() {
    switch parts {
    case .inMemory(let backend, _): backend.pause()
    case .engine(let engine): engine.hold()
    }
  }

  func releaseBackend() {
    switch parts {
    case .inMemory(let backend, _): backend.resume()
    case .engine(let engine): engine.release()
    }
  }

  /// Calls handed to the backend so far, carried out or not.
  var callsReceived: Int { backend.callsReceived }

  /// Waits, at most `timeout` seconds, until `count` calls have been handed to the backend.
  func waitUntilReceived(_ count: Int, timeout: Double = 10) -> Bool {
    backend.waitUntilReceived(count, timeout: timeout)
  }

  /// Watches the backend knows of: the in-memory backend counts its own, the engine's are
  /// counted by the server.
  var watcherCount: Int {
    switch parts {
    case .inMemory(let backend, _): backend.watcherCount
    case .engine: server.watcherCount
    }
  }

  /// Ends every Watch, as a stopping daemon does.
  func finishWatchers() {
    switch parts {
    case .inMemory(let backend, _): backend.finishWatchers()
    case .engine(let engine): engine.backend.finishWatchers()
    }
  }

  func client() throws -> TrialsClient {
    let client = try TrialsClient(path: socketPath)
    client.connection.setReceiveTimeout(seconds: 10)
    return client
  }

  func raw() throws -> VarlinkClient {
    let client = try VarlinkClient(path: socketPath)
    client.setReceiveTimeout(seconds: 10)
    return client
  }

  /// Stops the server and waits (bounded) until every connection is closed.
  @discardableResult
  func stop() -> Bool {
    let done = DispatchSemaphore(value: 0)
    server.stop { done.signal() }
    return done.wait(timeout: .now() + 10) == .success
  }
}

/// The daemon's own backend as `ControlService` wires it: an `Engine` over an LMDB store,
/// owned by one serial queue, behind `EngineTrialsBackend`. Time is virtual: a
/// `TestScheduler` that moves only when the test moves it.
final class EngineParts: @unchecked Sendable {
  // @unchecked: the engine, the scheduler and the repository's writes are touched only on `queue`.
  let queue = DispatchQueue(label: "trialwatch.test-engine")
  let scheduler: TestScheduler
  let repository: LMDBTrialRepository
  let engine: Engine
  let backend: EngineTrialsBackend
  private let taken = TakenEvents()
  private let held = DispatchSemaphore(value: 0)
  private let holds = Mutex(0)

  init(directory: String, ids: [UInt64]) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let scheduler = TestScheduler(now: ServerFixture.start)
    let repository = try LMDBTrialRepository(directory: directory)
    self.scheduler = scheduler
    self.repository = repository
    engine = Engine(
      repository: repository, scheduler: QueueRunScheduler(scheduler, queue: queue),
      ids: SequenceTrialIDGenerator(ids), sinks: [taken])
    _ = try queue.sync { [engine] in try engine.start() }
    backend = EngineTrialsBackend(
      engine: engine, queue: queue, startedAt: ServerFixture.start,
      storeBytes: { [weak repository] in (try? repository?.statistics())?.fileSize })
  }

  var now: Date { scheduler.manualClock.now() }

  /// Moves virtual time on the engine's queue: due events fire, are committed and delivered.
  func advance(by interval: TimeInterval) {
    queue.sync { scheduler.advance(by: interval) }
  }

  func jump(by interval: TimeInterval) {
    queue.sync { scheduler.jump(by: interval) }
  }

  /// Runs what is due now; returns the events delivered since the last call.
  func fireDue() -> [EventObject] {
    queue.sync { scheduler.advance(by: 0) }
    return taken.drain()
  }

  /// Keeps the engine's queue busy until `release()`: whatever is sent to it meanwhile waits.
  func hold() {
    holds.withLock { $0 += 1 }
    queue.async { self.held.wait() }
  }

  func release() {
    holds.withLock { $0 -= 1 }
    held.signal()
  }

  /// The group commits the engine has run: each is one write transaction.
  var commits: Int {
    queue.sync { scheduler.log.filter { $0.label == "commit" }.count }
  }

  /// Every trial in the store, in id order.
  func storedTrials() throws -> [Trial] {
    try queue.sync { try repository.read { try $0.allTrials() } }
  }

  /// Stops the engine, as the daemon does, and closes the store.
  func close() {
    // A test that stopped early may still hold the queue.
    for _ in 0..<holds.withLock({ $0 }) { release() }
    queue.sync {
      engine.stop()
      scheduler.expectNoPendingActions()
    }
    repository.close()
  }
}

/// The engine's scheduler in the fixture: virtual time from a `TestScheduler`, except that an
/// action asked for with no delay (the engine's group commit) runs as soon as the queue is
/// free, as `DispatchWakeScheduler` runs it. Changes sent together by clients are committed
/// together, and no test has to move time for a call to be answered.
private final class QueueRunScheduler: WakeScheduler, @unchecked Sendable {
  // @unchecked: used only on `queue`, as the engine's scheduler is.
  private let virtual: TestScheduler
  private let queue: DispatchQueue

  init(_ virtual: TestScheduler, queue: DispatchQueue) {
    self.virtual = virtual
    self.queue = queue
  }

  var clock: any WallClock { virtual.clock }
  var monotonicNow: TimeInterval { virtual.monotonicNow }

  @discardableResult
  func schedule(at deadline: Date, label: String, _ action: @escaping () -> Void) -> any ScheduledWake {
    virtual.schedule(at: deadline, label: label, action)
  }

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

/// Hands every call to a backend, counting them, so that a test can wait until what clients
/// sent has reached the backend.
final class CountingBackend: TrialsBackend {
  let base: any TrialsBackend
  /// Calls made, counted as they start; and calls the backend has returned from, by which
  /// time it has queued the work (a change waits on the engine's queue).
  private let counts = Mutex((received: 0, queued: 0))
  private let arrivals = DispatchSemaphore(value: 0)

  init(_ base: any TrialsBackend) {
    self.base = base
  }

  var callsReceived: Int { counts.withLock { $0.received } }

  /// Waits, at most `timeout` seconds, until the backend has taken in `count` calls.
  func waitUntilReceived(_ count: Int, timeout: Double) -> Bool {
    let deadline = DispatchTime.now() + timeout
    while counts.withLock({ $0.queued }) < count {
      if arrivals.wait(timeout: deadline) == .timedOut { return counts.withLock { $0.queued } >= count }
    }
    return true
  }

  private func counting(_ call: () -> Void) {
    counts.withLock { $0.received += 1 }
    call()
    counts.withLock { $0.queued += 1 }
    arrivals.signal()
  }

  func startTrial(_ parameters: StartTrialParameters, completion: @escaping Completion<TrialObject>) {
    counting { base.startTrial(parameters, completion: completion) }
  }

  func getTrial(_ parameters: GetTrialParameters, completion: @escaping Completion<TrialObject>) {
    counting { base.getTrial(parameters, completion: completion) }
  }

  func listTrials(_ parameters: ListTrialsParameters, completion: @escaping Completion<ListTrialsReply>) {
    counting { base.listTrials(parameters, completion: completion) }
  }

  func extendTrial(_ parameters: ExtendTrialParameters, completion: @escaping Completion<TrialObject>) {
    counting { base.extendTrial(parameters, completion: completion) }
  }

  func endTrial(_ parameters: EndTrialParameters, completion: @escaping Completion<TrialObject>) {
    counting { base.endTrial(parameters, completion: completion) }
  }

  func getPlan(_ parameters: GetPlanParameters, completion: @escaping Completion<[EventObject]>) {
    counting { base.getPlan(parameters, completion: completion) }
  }

  func simulate(_ parameters: SimulateParameters, completion: @escaping Completion<[EventObject]>) {
    counting { base.simulate(parameters, completion: completion) }
  }

  func getStatus(completion: @escaping Completion<DaemonStatus>) {
    counting { base.getStatus(completion: completion) }
  }

  func watch(_ subscriber: any WatchSubscriber) -> any WatchSubscription {
    base.watch(subscriber)
  }
}

/// Every event the engine delivered, as watchers get them, until the test takes them.
private final class TakenEvents: EventSink, Sendable {
  private let events = Mutex<[EventObject]>([])

  func deliver(_ entry: LedgerEntry, trial: Trial) throws {
    events.withLock { $0.append(EventObject(entry, subject: trial.subject)) }
  }

  func drain() -> [EventObject] {
    events.withLock { events in
      defer { events.removeAll() }
      return events
    }
  }
}

func makeTemporaryDirectory() throws -> String {
  var template = Array("/tmp/trialwatch-test-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
  let path = String(cString: made)
  // Traversable by other users, for the tests that connect as nobody.
  chmod(path, 0o711)
  return path
}

/// Waits until `condition` holds, checking again whenever `interval` passes, for at most
/// `timeout` seconds. For conditions the server reaches on its own queue.
func eventually(timeout: TimeInterval = 10, _ condition: () throws -> Bool) rethrows -> Bool {
  let deadline = Date(timeIntervalSinceNow: timeout)
  while Date() < deadline {
    if try condition() { return true }
    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(2))
  }
  return try condition()
}

/// Waits until the descriptor is readable or at end of stream (poll), at most `timeout`.
func waitReadable(_ fd: Int32, timeout: TimeInterval = 10) -> Bool {
  var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
  return poll(&entry, 1, Int32(timeout * 1000)) == 1
}

/// Reads until end of stream; returns what arrived, or nil if the stream did not end in time.
func readToEnd(_ fd: Int32, timeout: TimeInterval = 10) -> [UInt8]? {
  var collected: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65_536)
  while true {
    guard waitReadable(fd, timeout: timeout) else { return nil }
    let count = recv(fd, &buffer, buffer.count, 0)
    if count == 0 { return collected }
    if count < 0 {
      if errno == EINTR || errno == EAGAIN { continue }
      if errno == ECONNRESET { return collected }
      return nil
    }
    collected.append(contentsOf: buffer[0..<count])
  }
}

/// Splits NUL-terminated messages into replies.
func replies(in bytes: [UInt8]) throws -> [VarlinkReply] {
  try bytes.split(separator: 0, omittingEmptySubsequences: true).map { try VarlinkReply.decode($0) }
}

extension VarlinkClientError {
  var remoteName: String? { remoteError?.name }
}

/// The error name a throwing call ends with, or nil when it succeeds.
func errorName(_ body: () throws -> Void) -> String? {
  do {
    try body()
    return nil
  } catch let error as VarlinkClientError {
    return error.remoteError?.name ?? "client: \(error)"
  } catch {
    return "other: \(error)"
  }
}

/// The remote error a throwing call ends with.
func remoteError(_ body: () throws -> Void) -> ControlError? {
  do {
    try body()
    return nil
  } catch let error as VarlinkClientError {
    return error.remoteError
  } catch {
    return nil
  }
}

extension JSONValue {
  var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }
}
