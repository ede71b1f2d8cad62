import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// A fixed instant the tests count from (tests never read the wall clock).
let origin = Date(timeIntervalSinceReferenceDate: 780_000_000)
let day: TimeInterval = 86_400

/// Everything a repository holds, for comparing two of them.
struct RepositorySnapshot: Equatable {
  var trials: [Trial] = []
  var ledger: [LedgerEntry] = []
  var outbox: [EventID] = []
  var lastSeen: Date?
  var activeByIndex: [String: TrialID] = [:]
  /// The event log (whole, unless `fromBatch` is given), its bounds, and its consumers.
  var events: [LoggedEvent] = []
  var logBounds = EventLogBounds()
  var consumers: [ConsumerRecord] = []
  /// The webhook endpoints' state, and their pending events, by endpoint.
  var webhooks: [WebhookEndpointState] = []
  var webhookEvents: [WebhookPendingEvent] = []

  /// With `fromBatch`, only the trials of the crash workload's batches from that one on,
  /// the whole outbox, and of the log only its bounds.
  init(_ repository: any TrialRepository, fromBatch: Int? = nil) throws {
    self = try repository.read { try RepositorySnapshot(txn: $0, fromBatch: fromBatch) }
  }

  /// What a read-only reader of a store (a backup, a store of an earlier schema) holds.
  init(_ reader: LMDBStoreReader) throws {
    self = try reader.read { try RepositorySnapshot(txn: $0, fromBatch: nil) }
  }

  private init(txn: any TrialReadTransaction, fromBatch: Int?) throws {
    let after = fromBatch.map {
      TrialID(StoreCrashWorkload.trialID(batch: max($0, 1), index: 0).rawValue - 1)
    }
    try txn.scanTrials(after: after) { trial in
      trials.append(trial)
      return true
    }
    for trial in trials {
      ledger += try txn.ledgerEntries(trial: trial.id)
      if trial.isActive, let id = try txn.activeTrialID(subject: trial.subject) {
        activeByIndex[trial.subject] = id
      }
    }
    try txn.scanOutbox {
      outbox.append($0.id)
      return true
    }
    lastSeen = try txn.lastSeenWallTime()
    logBounds = try txn.eventLogBounds()
    if fromBatch == nil {
      try txn.scanEvents(after: .origin) {
        events.append($0)
        return true
      }
    }
    consumers = try EventFeed.consumers(in: txn)
    webhooks = try collected { try txn.scanWebhookEndpoints($0) }
    for endpoint in webhooks {
      webhookEvents += try collected {
        try txn.scanWebhookEvents(endpoint: endpoint.name, after: .origin, $0)
      }
    }
  }
}

extension RepositorySnapshot {
  /// The same, with the events taken at one instant in event-id order under the same cursors:
  /// simultaneous events are logged in the planner's order, which a planner rebuilt by a
  /// restore may have otherwise.
  func normalizingLogOrder() -> RepositorySnapshot {
    var copy = self
    let sorted = events.sorted {
      $0.entry.takenAt != $1.entry.takenAt ? $0.entry.takenAt < $1.entry.takenAt : $0.id < $1.id
    }
    copy.events = zip(events, sorted).map {
      LoggedEvent(cursor: $0.cursor, entry: $1.entry, attributes: $1.attributes)
    }
    return copy
  }

  /// The same, as a restore leaves it: the log in generation `generation`, its cursors and the
  /// consumers' positions of it.
  func restored(as generation: LogGeneration?) -> RepositorySnapshot {
    guard let generation else { return self }
    var copy = self
    copy.events = events.map {
      LoggedEvent(
        cursor: $0.cursor.of(generation: generation.number), entry: $0.entry, attributes: $0.attributes)
    }
    copy.logBounds = EventLogBounds(
      last: logBounds.last, prunedThrough: logBounds.prunedThrough, count: logBounds.count,
      generation: generation)
    copy.consumers = consumers.map {
      var consumer = $0
      consumer.acknowledged = consumer.acknowledged.of(generation: generation.number)
      return consumer
    }
    copy.webhooks = webhooks.map {
      var state = $0
      for index in state.attempts.indices {
        state.attempts[index].cursor = state.attempts[index].cursor?.of(generation: generation.number)
      }
      return state
    }
    copy.webhookEvents = webhookEvents.map {
      var event = $0
      event.cursor = event.cursor.of(generation: generation.number)
      return event
    }
    return copy
  }

  /// The first difference from `other`, in a line; nil when equal.
  func difference(from other: RepositorySnapshot) -> String? {
    func first<T: Equatable>(_ name: String, _ mine: [T], _ theirs: [T]) -> String? {
      guard mine != theirs else { return nil }
      if let index = mine.indices.first(where: { $0 < theirs.count && mine[$0] != theirs[$0] }) {
        return "\(name)[\(index)]: \(mine[index]) ≠ \(theirs[index])"
      }
      return "\(name): \(mine.count) ≠ \(theirs.count) items (first extra: "
        + "\(mine.count > theirs.count ? "\(mine[theirs.count])" : "\(theirs[mine.count])"))"
    }
    if let found = first("trials", trials, other.trials) ?? first("ledger", ledger, other.ledger) {
      return found
    }
    if let found = first("outbox", outbox, other.outbox) { return found }
    if lastSeen != other.lastSeen {
      return "last seen: \(String(describing: lastSeen)) ≠ \(String(describing: other.lastSeen))"
    }
    if activeByIndex != other.activeByIndex { return "subject index differs" }
    if let found = first("events", events, other.events) { return found }
    if logBounds != other.logBounds { return "log bounds: \(logBounds) ≠ \(other.logBounds)" }
    if let found = first("consumers", consumers, other.consumers) { return found }
    if let found = first("webhooks", webhooks, other.webhooks) { return found }
    return first("webhook events", webhookEvents, other.webhookEvents)
  }
}

/// The bytes and modification time of a file, to show it was left untouched.
struct FileFingerprint: Equatable {
  var bytes: Data
  var modified: timespec
  var size: Int

  init(_ path: String) throws {
    bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    var st = stat()
    guard stat(path, &st) == 0 else {
      throw StoreError(.failure, path: path, problem: "stat failed: errno \(errno)")
    }
    modified = st.st_mtim
    size = Int(st.st_size)
  }

  static func == (lhs: FileFingerprint, rhs: FileFingerprint) -> Bool {
    lhs.bytes == rhs.bytes && lhs.size == rhs.size && lhs.modified.tv_sec == rhs.modified.tv_sec
      && lhs.modified.tv_nsec == rhs.modified.tv_nsec
  }
}

/// Starts `count` trials with ids counting from `firstID`, in one transaction.
@discardableResult
func startTrials(
  _ repository: any TrialRepository, count: Int, firstID: UInt64 = 1, subjectPrefix: String = "subject",
  now: Date = origin
) throws -> [Trial] {
  let ids = SequenceTrialIDGenerator(Array(firstID..<firstID + UInt64(count)))
  return try repository.write { txn in
    try (0..<count).map { index in
      try TrialBook.startTrial(
        in: txn, subject: "\(subjectPrefix)-\(firstID + UInt64(index))",
        endDate: now.addingTimeInterval(Double(2 + index % 9) * day), reminders: .default, now: now, ids: ids
      ).trial
    }
  }
}

/// Reads a /proc file (their size reads as zero, so read to the end).
func readProcFile(_ path: String) -> String {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return "" }
  defer { close(fd) }
  var data: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if count < 0 && errno == EINTR { continue }
    guard count > 0 else { break }
    data += chunk[0..<count]
  }
  return String(decoding: data, as: UTF8.self)
}

/// A store in `directory` after the crash workload's batches 1 to `batches`; returns the store
/// directory and the store, open.
func workloadStore(batches: Int, in directory: TemporaryDirectory) throws -> (String, LMDBTrialRepository) {
  let path = directory.appending("store")
  let store = try LMDBTrialRepository(directory: path)
  var planner = Planner()
  for batch in 1...batches { try StoreCrashWorkload.runBatch(batch, repository: store, planner: &planner) }
  return (path, store)
}

/// A store written by an earlier version, to be upgraded: the fixture
/// `Fixtures/schema<N>/data.mdb` (Fixtures/README.md) copied into a store directory of its own
/// (mode 0600, as a store file is), opened at a fixed time.
enum FixtureStore {
  /// 2026-03-01T12:30:45Z: the time the upgrades in the tests happen at.
  static let upgradeTime = Date(timeIntervalSince1970: 1_772_368_245)

  /// The name of the copy an upgrade from `schema` keeps, at `upgradeTime`.
  static func copyName(schema: Int) -> String { "data.mdb.schema\(schema)-20260301T123045Z" }

  /// The fixture of `schema`, copied into `directory`; returns the store directory.
  static func copy(schema: Int, into directory: TemporaryDirectory) throws -> String {
    let fixture = try #require(
      Bundle.module.path(forResource: "data", ofType: "mdb", inDirectory: "Fixtures/schema\(schema)"))
    let path = directory.appending("store")
    try FileManager.default.createDirectory(
      atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    try FileManager.default.copyItem(atPath: fixture, toPath: path + "/data.mdb")
    #expect(chmod(path + "/data.mdb", 0o600) == 0)
    return path
  }

  /// Opens the store for writing at `upgradeTime`, which upgrades it.
  static func open(_ path: String) throws -> LMDBTrialRepository {
    try LMDBTrialRepository(directory: path, clock: StaticWallClock(upgradeTime))
  }
}
