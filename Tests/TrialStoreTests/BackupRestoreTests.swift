import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct BackupTests {
  @Test func backup_OfAStoppedStore_IsACompactedCopyWithTheSameRecords() throws {
    let directory = try TemporaryDirectory("backup")
    let (path, store) = try workloadStore(batches: 30, in: directory)
    let expected = try RepositorySnapshot(store)
    let statistics = try store.statistics()
    store.close()
    let dataFile = path + "/data.mdb"
    let before = try FileFingerprint(dataFile)

    let reader = try LMDBStoreReader(directory: path)
    let file = directory.appending("trialwatch.backup")
    let report = try reader.backup(to: file)
    reader.close()
    #expect(report.file == file)
    #expect(report.statistics.trials == statistics.trials)
    #expect(report.statistics.ledgerEntries == statistics.ledgerEntries)
    #expect(report.statistics.outboxEntries == statistics.outboxEntries)
    #expect(report.statistics.activeTrials == statistics.activeTrials)
    #expect(report.lastSeen == expected.lastSeen)
    #expect(report.bytes <= statistics.fileSize, "compacted")
    var st = stat()
    #expect(stat(file, &st) == 0)
    #expect(Int(st.st_size) == report.bytes)
    #expect(st.st_mode & 0o777 == 0o600)
    #expect(try FileFingerprint(dataFile) == before, "the store was only read")
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
      $0.contains(".tmp-")
    }
    #expect(leftovers.isEmpty)

    let restored = directory.appending("restored")
    let restore = try StoreRestore.restore(backup: file, into: restored, now: StoreCorruption.origin)
    let reopened = try LMDBTrialRepository(directory: restored)
    #expect(restore.generation?.number == 1)
    #expect(
      try RepositorySnapshot(reopened).difference(from: expected.restored(as: restore.generation)) == nil)
  }

  @Test func backup_ByTheOpenRepository_WritesTheSameStore() throws {
    let directory = try TemporaryDirectory("backup")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try StoreCorruption.makeFixture(store)
    let report = try store.backup(to: directory.appending("copy"))
    #expect(report.statistics.trials == 5)
    #expect(report.statistics.loggedEvents == 3 && report.statistics.consumers == 1)
    #expect(report.statistics.schema == LMDBTrialRepository.schemaVersion)
    #expect(try LMDBStoreReader(file: report.file).verify().isClean)
    #expect(try RepositorySnapshot(store).trials.count == 5, "the repository stays usable")
    // The log, its bounds and the consumers come along, and come back with a restore.
    _ = try store.write { try $0.pruneEvents(through: EventCursor(1)) }
    let expected = try RepositorySnapshot(store)
    _ = try store.backup(to: directory.appending("copy"))
    #expect(try RepositorySnapshot(LMDBStoreReader(file: directory.appending("copy"))) == expected)
    let restore = try StoreRestore.restore(
      backup: directory.appending("copy"), into: directory.appending("restored"), now: StoreCorruption.origin)
    let restored = try LMDBTrialRepository(directory: directory.appending("restored"))
    #expect(restored.upgrade == nil)
    // The log goes on from the backup's newest event, in a generation of its own.
    #expect(restore.generation == LogGeneration(number: 1, began: 3, parent: 0))
    #expect(
      try RepositorySnapshot(restored).difference(from: expected.restored(as: restore.generation)) == nil)
    #expect(expected.events.map(\.cursor.sequence) == [2, 3])
    #expect(expected.consumers.map(\.name) == ["mailer"])
    #expect(
      expected.webhooks.map(\.name) == ["hooks"] && expected.webhookEvents.map(\.cursor) == [EventCursor(2)])
    let next = try fireExpiries(
      restored, at: [StoreCorruption.origin.addingTimeInterval(9 * 86_400)], firstID: 50)
    #expect(next.map(\.cursor) == [EventCursor(4, generation: 1)])
  }

  @Test func backup_IntoAMissingDirectory_FailsAndWritesNothing() throws {
    let directory = try TemporaryDirectory("backup")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try StoreCorruption.makeFixture(store)
    let error = try #require(throws: StoreError.self) {
      try store.backup(to: directory.appending("no/such/file"))
    }
    #expect(error.kind == .notFound)
    #expect(error.description.contains(directory.appending("no/such")))
  }

  @Test func backup_IntoTheStoreDirectory_IsRefused() throws {
    let directory = try TemporaryDirectory("backup")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    let error = try #require(throws: StoreError.self) { try store.backup(to: path + "/data.mdb") }
    #expect(error.description.contains("inside the store directory"))
    #expect(try store.statistics().trials == 0)
  }

  @Test func backup_OverAnExistingFile_ReplacesItWhole() throws {
    let directory = try TemporaryDirectory("backup")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try StoreCorruption.makeFixture(store)
    let file = directory.appending("copy")
    try Data("an older backup".utf8).write(to: URL(fileURLWithPath: file))
    _ = try store.backup(to: file)
    #expect(try LMDBStoreReader(file: file).statistics().trials == 5)
  }

  /// A writer in another process (the crash-test tool, whose small map keeps growing) commits
  /// batches while this process verifies the store and backs it up: every snapshot is whole.
  @Test func backupAndVerify_AlongsideAWriterProcess_SeeWholeBatches() throws {
    let directory = try TemporaryDirectory("backup")
    let path = directory.appending("store")
    let writer = try ChildProcess(.product("trialwatch-crashtest"), [path])
    defer {
      writer.kill()
      writer.wait()
    }
    var seen = 0
    while seen < 5 {
      guard case .line = writer.readLine(timeout: 30) else {
        Issue.record("the writer stopped: \(writer.readRest())")
        return
      }
      seen += 1
    }
    var model = InMemoryTrialRepository()
    var modelPlanner = Planner()
    var modelBatch = 0
    for round in 1...3 {
      let reader = try LMDBStoreReader(directory: path)
      let report = try reader.verify()
      #expect(report.isClean, "round \(round): \(report.problems.prefix(3))")
      let file = directory.appending("backup-\(round)")
      _ = try reader.backup(to: file)
      reader.close()
      while case .line = writer.readLine(timeout: 0) {}
      #expect(writer.status == nil, "the writer runs on: \(writer.readRest())")

      let restored = directory.appending("restored-\(round)")
      let restore = try StoreRestore.restore(backup: file, into: restored, now: StoreCorruption.origin)
      let copy = try LMDBTrialRepository(directory: restored)
      let last = try StoreCrashWorkload.lastBatch(in: copy)
      if last < modelBatch {
        model = InMemoryTrialRepository()
        modelPlanner = Planner()
        modelBatch = 0
      }
      while modelBatch < last {
        modelBatch += 1
        try StoreCrashWorkload.runBatch(modelBatch, repository: model, planner: &modelPlanner)
      }
      #expect(
        try RepositorySnapshot(copy).difference(
          from: RepositorySnapshot(model).restored(as: restore.generation))
          == nil, "round \(round)")
      copy.close()
    }
  }
}

@Suite struct RestoreTests {
  /// A store with the fixture in `directory/store`, and a backup of it at `directory/backup`.
  private func storeAndBackup(_ directory: TemporaryDirectory) throws -> (store: String, backup: String) {
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(store)
    let backup = directory.appending("backup")
    _ = try store.backup(to: backup)
    store.close()
    return (path, backup)
  }

  @Test func restore_KeepsTheReplacedStoreAside_AndInstallsTheBackup() throws {
    let directory = try TemporaryDirectory("restore")
    let (path, backup) = try storeAndBackup(directory)
    // The store moves on after the backup.
    let store = try LMDBTrialRepository(directory: path)
    _ = try store.endTrial(
      TrialID(5), outcome: .converted, now: StoreCorruption.origin.addingTimeInterval(86_400))
    store.close()
    let replaced = try FileFingerprint(path + "/data.mdb")

    let now = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15T15:06:40Z
    let report = try StoreRestore.restore(backup: backup, into: path, now: now)
    #expect(report.keptAside == path + "/data.mdb.replaced-20250615T150640Z")
    #expect(report.statistics.trials == 5)
    #expect(report.statistics.activeTrials == 3)
    #expect(!report.createdDirectory)
    #expect(try FileFingerprint(report.keptAside!).bytes == replaced.bytes)
    let restored = try LMDBTrialRepository(directory: path)
    #expect(try restored.read { try $0.trial(TrialID(5)) }?.state == .active)
    restored.close()
    // A second restore in the same second keeps the first one's file too.
    let again = try StoreRestore.restore(backup: backup, into: path, now: now)
    #expect(again.keptAside == path + "/data.mdb.replaced-20250615T150640Z-2")
    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.contains("restoring") })
    var st = stat()
    #expect(stat(path + "/data.mdb", &st) == 0 && st.st_mode & 0o777 == 0o600)
  }

  @Test func restore_IntoAMissingDirectory_CreatesIt() throws {
    let directory = try TemporaryDirectory("restore")
    let (_, backup) = try storeAndBackup(directory)
    let report = try StoreRestore.restore(
      backup: backup, into: directory.appending("new/state"), now: StoreCorruption.origin)
    #expect(report.createdDirectory)
    #expect(report.keptAside == nil)
    #expect(try LMDBTrialRepository(directory: directory.appending("new/state")).statistics().trials == 5)
  }

  @Test func restore_WhileTheStoreIsOpen_IsRefusedAsInUse() throws {
    let directory = try TemporaryDirectory("restore")
    let (path, backup) = try storeAndBackup(directory)
    let writer = try ChildProcess(.product("trialwatch-crashtest"), [path])
    defer {
      writer.kill()
      writer.wait()
    }
    guard case .line = writer.readLine(timeout: 30) else {
      Issue.record("the writer never reported: \(writer.readRest())")
      return
    }
    let error = try #require(throws: StoreError.self) {
      try StoreRestore.restore(backup: backup, into: path, now: StoreCorruption.origin)
    }
    #expect(error.kind == .inUse)
    #expect(error.description.contains("stop trialwatch.service first"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: path).allSatisfy { !$0.contains("replaced") })
  }

  @Test func restore_WhileAReaderHasTheStoreOpen_IsRefusedAsInUse() throws {
    let directory = try TemporaryDirectory("restore")
    let (path, backup) = try storeAndBackup(directory)
    // A reader in another process: the restore must see LMDB's lock on lock.mdb.
    let reader = try ChildProcess(
      .path("/usr/bin/python3"),
      [
        "-c",
        "import fcntl,sys; f=open(sys.argv[1],'r+b'); fcntl.lockf(f, fcntl.LOCK_SH, 1, 0); "
          + "print('locked', flush=True); sys.stdin.read()",
        path + "/lock.mdb",
      ], input: .pipe)
    // It holds the lock until its input is closed.
    defer {
      reader.closeInput()
      reader.wait()
    }
    #expect(reader.readLine(timeout: 30) == .line("locked"))
    let error = try #require(throws: StoreError.self) {
      try StoreRestore.restore(backup: backup, into: path, now: StoreCorruption.origin)
    }
    #expect(error.kind == .inUse)
    #expect(error.description.contains("reading the store"))
  }

  /// Damaged files and files that are not backups this version reads are refused, with an
  /// error naming the file, and the store is left exactly as it was.
  @Test(arguments: BadBackup.allCases)
  func restore_BadFile_IsRefusedAndTheStoreIsUntouched(_ bad: BadBackup) throws {
    let directory = try TemporaryDirectory("restore")
    let (path, _) = try storeAndBackup(directory)
    let scratch = directory.appending("scratch")
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    let file = directory.appending("bad-backup")
    try bad.make(at: file, scratch: scratch)
    let before = try FileFingerprint(path + "/data.mdb")
    let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()

    let error = try #require(throws: StoreError.self) {
      try StoreRestore.restore(backup: file, into: path, now: StoreCorruption.origin)
    }
    #expect(bad.expectedKinds.contains(error.kind), "\(error)")
    #expect(error.path == file, "names the backup, not the copy: \(error)")
    for word in bad.expectedWords { #expect(error.description.contains(word), "\(error)") }
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == names)
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }
}
