import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct BatchTests {
  @Test func manyMutationsInOneTransaction_AllLand() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    let trials = try startTrials(store, count: 2_000)
    let ledgerBefore = try RepositorySnapshot(store).ledger.count
    var planner = Planner()
    for trial in trials { planner.add(trial, now: origin) }
    let now = origin.addingTimeInterval(4 * day)
    let due = planner.takeDue(at: now)
    // Starts, ends and a burst of due events, in one transaction.
    let recorded = try store.write { txn -> [LoggedEvent] in
      _ = try TrialBook.endTrial(in: txn, trials[0].id, outcome: .converted, now: now)
      _ = try startBatchTrials(txn, count: 500, firstID: 10_000, now: now)
      return try TrialBook.commit(in: txn, due, now: now)
    }
    store.close()
    let reopened = try LMDBTrialRepository(directory: directory.appending("store"))
    let snapshot = try RepositorySnapshot(reopened)
    #expect(snapshot.trials.count == 2_500)
    // The new trials' 3-day reminders were already due at their start: recorded as skipped.
    #expect(snapshot.ledger.count == ledgerBefore + recorded.count + 500)
    #expect(snapshot.outbox.count == recorded.count)
    #expect(snapshot.lastSeen == now)
    #expect(snapshot.trials.first { $0.id == trials[0].id }?.state == .converted)
    let statistics = try reopened.statistics()
    #expect(statistics.trials == 2_500)
    #expect(statistics.activeTrials == snapshot.trials.filter(\.isActive).count)
    #expect(statistics.ledgerEntries == snapshot.ledger.count)
  }

  @Test func expiryTaken_ReadsAsExpiredInItsTransaction_AndLeavesTheRecordAsWritten() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    let trial = try #require(try startTrials(store, count: 1).first)
    let now = trial.period.endDate.addingTimeInterval(1)
    var planner = Planner()
    planner.add(trial, now: origin)
    let due = planner.takeDue(at: now).filter { $0.event.kind == .expiry }
    #expect(due.count == 1)
    let (during, record) = try store.write { txn -> (Trial?, Trial?) in
      _ = try TrialBook.commit(in: txn, due, now: now)
      let record = try (txn as? StoreReadTransaction)?.storedTrial(trial.id)
      return (try txn.trial(trial.id), record)
    }
    // The expiry is in the ledger; the record stays the active one it was (schema 3 on).
    #expect(during?.state == .expired && during?.endedAt == now)
    #expect(record?.state == .active && record?.revision == trial.revision)
    let after = try store.read { try $0.trial(trial.id) }
    #expect(after == during)
    #expect(try store.statistics().activeTrials == 0)
  }

  @Test func throwInsideTheTransaction_AbortsEverything() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try startTrials(store, count: 10)
    let before = try RepositorySnapshot(store)
    struct Stop: Error {}
    #expect(throws: Stop.self) {
      try store.write { txn in
        _ = try startBatchTrials(txn, count: 300, firstID: 500)
        _ = try TrialBook.endTrial(in: txn, TrialID(1), outcome: .cancelled, now: origin)
        try txn.setLastSeenWallTime(origin.addingTimeInterval(99))
        throw Stop()
      }
    }
    #expect(try RepositorySnapshot(store) == before)
    #expect(try store.statistics().activeTrials == 10)
  }

  @Test func writeInsideAWrite_IsRefused() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    let error = try #require(throws: StoreError.self) {
      try store.write { _ in try store.write { try $0.setLastSeenWallTime(origin) } }
    }
    #expect(error.kind == .misuse)
    // A read inside a write sees the last committed state.
    try startTrials(store, count: 1)
    let seen = try store.write { txn in
      _ = try startBatchTrials(txn, count: 1, firstID: 2)
      return try store.read { try $0.trial(TrialID(2)) }
    }
    #expect(seen == nil)
  }
}

/// `startTrials` inside a caller's transaction.
func startBatchTrials(_ txn: any TrialWriteTransaction, count: Int, firstID: UInt64, now: Date = origin)
  throws
  -> [Trial]
{
  let ids = SequenceTrialIDGenerator(Array(firstID..<firstID + UInt64(count)))
  return try (0..<count).map { index in
    try TrialBook.startTrial(
      in: txn, subject: "batch-\(firstID + UInt64(index))", endDate: now.addingTimeInterval(3 * day),
      reminders: .default, now: now, ids: ids
    ).trial
  }
}

@Suite struct StoreFileTests {
  @Test func newStore_HasMode0600_InADirectoryOfMode0700() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("nested/store")
    let store = try LMDBTrialRepository(directory: path)
    try startTrials(store, count: 3)
    for file in ["data.mdb", "lock.mdb"] {
      var st = stat()
      #expect(stat((path as NSString).appendingPathComponent(file), &st) == 0)
      #expect(st.st_mode & 0o777 == 0o600, "\(file)")
    }
    var st = stat()
    #expect(stat(path, &st) == 0)
    #expect(st.st_mode & 0o777 == 0o700)
    #expect(store.dataFilePath == (path as NSString).appendingPathComponent("data.mdb"))
  }

  @Test func storeFiles_AreClosedOnExec() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    var found = 0
    for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
      guard let fd = Int32(name),
        let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
        target.hasPrefix(directory.path)
      else { continue }
      found += 1
      #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "\(target) would leak into child processes")
    }
    #expect(found >= 3)
    store.close()
  }

  @Test func tinyMap_GrowsTransparently_EvenInsideOneLargeTransaction() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path, options: .init(initialMapSize: 64 << 10))
    let initialMap = try store.statistics().mapSize
    #expect(initialMap <= 64 << 10)
    var runs = 0
    let started = try store.write { txn -> Int in
      runs += 1
      let ids = SequenceTrialIDGenerator(Array(1...UInt64(5_000)))
      for index in 0..<5_000 {
        _ = try TrialBook.startTrial(
          in: txn, subject: "grow-\(index)-" + String(repeating: "x", count: 100),
          endDate: origin.addingTimeInterval(day), reminders: .default, now: origin, ids: ids)
      }
      return 5_000
    }
    #expect(started == 5_000)
    #expect(runs > 1, "the transaction met a full map and ran again")
    #expect(store.mapGrowthCount > 0)
    for batch in 0..<20 { try startTrials(store, count: 100, firstID: 10_000 + UInt64(batch) * 100) }
    #expect(try store.statistics().mapSize > initialMap)
    store.close()
    let reopened = try LMDBTrialRepository(directory: path, options: .init(initialMapSize: 64 << 10))
    #expect(try reopened.statistics().trials == 7_000)
    var planner = Planner()
    #expect(try reopened.restore(into: &planner).trials == 7_000)
  }

  @Test func secondOpen_IsRefusedAsInUse_UntilTheFirstCloses() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LMDBTrialRepository(directory: path)
    let error = try #require(throws: StoreError.self) { try LMDBTrialRepository(directory: path) }
    #expect(error.kind == .inUse)
    #expect(error.description.contains(path))
    first.close()
    #expect(throws: StoreError.self) { try first.read { try $0.lastSeenWallTime() } }
    _ = try LMDBTrialRepository(directory: path)
  }

  @Test func missingStore_WithoutCreate_IsNotFound() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("absent")
    let error = try #require(throws: StoreError.self) {
      try LMDBTrialRepository(directory: path, options: .init(createIfMissing: false))
    }
    #expect(error.kind == .notFound)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func releaseMappedPages_DropsTheStoreFromResidentMemory() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    for batch in 0..<4 { try startTrials(store, count: 5_000, firstID: 1 + UInt64(batch) * 5_000) }
    try store.read { txn in try txn.scanTrials(after: nil) { _ in true } }
    let before = residentKilobytes(of: store.dataFilePath)
    #expect(before > 1_000, "a full scan maps the file in")
    #expect(store.releaseMappedPages() > 0)
    #expect(residentKilobytes(of: store.dataFilePath) < before / 10)
    // Restore releases by itself.
    var planner = Planner()
    try store.restore(into: &planner)
    #expect(residentKilobytes(of: store.dataFilePath) < before / 10)
    #expect(planner.trialCount == 20_000)
  }

  /// Resident kilobytes of the mappings of `path`, from /proc/self/smaps.
  private func residentKilobytes(of path: String) -> Int {
    let text = readProcFile("/proc/self/smaps")
    var inside = false
    var total = 0
    for line in text.split(separator: "\n") {
      if let first = line.first, first.isHexDigit, line.contains("-"), line.split(separator: " ").count >= 5 {
        inside = line.hasSuffix(path)
      } else if inside, line.hasPrefix("Rss:") {
        total += Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
      }
    }
    return total
  }
}

@Suite struct DamagedStoreTests {
  /// Makes a store with some trials and returns the path of its directory.
  private func makeStore(in directory: TemporaryDirectory, trials: Int = 3_000) throws -> String {
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try startTrials(store, count: trials)
    store.close()
    return path
  }

  /// Opens the damaged store, expects `kind`, and checks the data file was left untouched.
  private func expectRefused(
    _ path: String, kind: StoreError.Kind, mentioning words: [String],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let dataFile = (path as NSString).appendingPathComponent("data.mdb")
    let before = try FileFingerprint(dataFile)
    let error = try #require(throws: StoreError.self, sourceLocation: sourceLocation) {
      try LMDBTrialRepository(directory: path)
    }
    #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
    #expect(error.description.contains(dataFile), "\(error)", sourceLocation: sourceLocation)
    for word in words {
      #expect(error.description.contains(word), "\(error)", sourceLocation: sourceLocation)
    }
    #expect(
      try FileFingerprint(dataFile) == before, "the file was left untouched", sourceLocation: sourceLocation)
    // And again: a second attempt finds it the same.
    #expect(throws: StoreError.self, sourceLocation: sourceLocation) {
      try LMDBTrialRepository(directory: path)
    }
    #expect(try FileFingerprint(dataFile) == before, sourceLocation: sourceLocation)
  }

  private func rewrite(_ file: String, _ change: (inout Data) -> Void) throws {
    var data = try Data(contentsOf: URL(fileURLWithPath: file))
    change(&data)
    try data.write(to: URL(fileURLWithPath: file))
  }

  @Test func truncatedFile_IsRefused_AndLeftUntouched() throws {
    let directory = try TemporaryDirectory()
    let path = try makeStore(in: directory)
    let dataFile = (path as NSString).appendingPathComponent("data.mdb")
    try rewrite(dataFile) { $0 = $0.prefix($0.count / 2) }
    try expectRefused(path, kind: .damaged, mentioning: ["truncated"])
  }

  @Test func fileCutInsideItsHeader_IsRefused() throws {
    let directory = try TemporaryDirectory()
    let path = try makeStore(in: directory)
    try rewrite((path as NSString).appendingPathComponent("data.mdb")) { $0 = $0.prefix(5_000) }
    try expectRefused(path, kind: .damaged, mentioning: ["truncated"])
  }

  @Test func emptyFile_IsRefused_NotReinitialised() throws {
    let directory = try TemporaryDirectory()
    let path = try makeStore(in: directory)
    try rewrite((path as NSString).appendingPathComponent("data.mdb")) { $0 = Data() }
    try expectRefused(path, kind: .damaged, mentioning: ["empty"])
  }

  @Test func garbageFile_IsRefused() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("store")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    var random = SeededGenerator(seed: 42)
    let garbage = Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &random) })
    try garbage.write(to: URL(fileURLWithPath: (path as NSString).appendingPathComponent("data.mdb")))
    try expectRefused(path, kind: .damaged, mentioning: ["header is invalid"])
  }

  @Test func garbageOverTheHeader_IsRefused() throws {
    let directory = try TemporaryDirectory()
    let path = try makeStore(in: directory)
    var random = SeededGenerator(seed: 7)
    try rewrite((path as NSString).appendingPathComponent("data.mdb")) { data in
      for index in 0..<8_192 { data[index] = UInt8.random(in: 0...255, using: &random) }
    }
    try expectRefused(path, kind: .damaged, mentioning: ["header is invalid"])
  }

  @Test func storeOfANewerSchema_IsRefused_AndLeftUntouched() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try startTrials(store, count: 10)
    try store.rawWrite { txn, databases in
      try Array("schema".utf8).withUnsafeBytes { key in
        try withUnsafeBytes(of: UInt32(LMDBTrialRepository.schemaVersion + 1).littleEndian) {
          try txn.put(databases.meta, key, $0)
        }
      }
    }
    store.close()
    try expectRefused(
      path, kind: .newerSchema,
      mentioning: ["newer version", "schema \(LMDBTrialRepository.schemaVersion + 1)"])
  }

  @Test func lmdbFileOfAnotherProgram_IsRefused() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("store")
    try makeForeignLMDBStore(directory: path)
    try expectRefused(path, kind: .damaged, mentioning: ["not a trialwatch store"])
  }

  @Test func unreadableRecord_IsATypedErrorNamingItsKey() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try startTrials(store, count: 5)
    try store.rawWrite { txn, databases in
      try StoreKeys.withTrialKey(TrialID(3)) { key in
        try [9, 0, 0, 0].withUnsafeBytes { try txn.put(databases.trials, key, $0) }
      }
    }
    let error = try #require(throws: StoreError.self) { try store.read { try $0.trial(TrialID(3)) } }
    #expect(error.kind == .corruptRecord)
    #expect(error.description.contains("trials/0000000000000003"))
    #expect(error.description.contains("record version 9"))
    #expect(error.description.contains(store.dataFilePath))
    var planner = Planner()
    let restoreError = try #require(throws: StoreError.self) { try store.restore(into: &planner) }
    #expect(restoreError.description.contains("trials/0000000000000003"))
    // Other records still read.
    #expect(try store.read { try $0.trial(TrialID(4)) }?.subject == "subject-4")
  }
}
