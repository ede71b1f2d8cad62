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

/// Opening a store written by the version before the event log (schema 1): the fixture
/// `Fixtures/schema1/data.mdb` was written by that version (Fixtures/README.md).
@Suite struct UpgradeTests {
  static let upgradeTime = FixtureStore.upgradeTime
  static let copyName = FixtureStore.copyName(schema: 1)

  private func schema1Store(in directory: TemporaryDirectory) throws -> String {
    try FixtureStore.copy(schema: 1, into: directory)
  }

  private func open(_ path: String) throws -> LMDBTrialRepository { try FixtureStore.open(path) }

  @Test func schema1Store_OpenedReadOnly_ReadsAnEmptyLogAndIsLeftAlone() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema1Store(in: directory)
    let before = try FileFingerprint(path + "/data.mdb")
    let reader = try LMDBStoreReader(directory: path)
    let statistics = try reader.statistics()
    #expect(statistics.schema == 1)
    #expect(statistics.trials == 7 && statistics.activeTrials == 2)
    #expect(statistics.ledgerEntries == 13 && statistics.outboxEntries == 1)
    #expect(statistics.loggedEvents == 0 && statistics.consumers == 0)
    let snapshot = try RepositorySnapshot(reader)
    #expect(snapshot.events.isEmpty && snapshot.consumers.isEmpty)
    #expect(snapshot.logBounds == EventLogBounds())
    #expect(try reader.read { try $0.consumer(named: "mailer") } == nil)
    let report = try reader.verify()
    #expect(report.isClean, "\(report.problems)")
    #expect(report.schema == 1)
    #expect(
      report.summary.contains(
        "13 ledger entries, 1 undelivered, 0 logged events, 0 consumers; store schema 1"))
    reader.close()
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(!FileManager.default.fileExists(atPath: path + "/" + Self.copyName))
  }

  @Test func schema1Store_OpenedForWriting_IsUpgradedKeepingEveryRecord() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema1Store(in: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    #expect(before.trials.count == 7 && before.ledger.count == 13 && before.outbox.count == 1)

    let store = try open(path)
    let upgrade = try #require(store.upgrade)
    #expect(store.upgradedFrom == 1)
    #expect(upgrade.fromSchema == 1 && upgrade.toSchema == 3)
    #expect(upgrade.keptCopy == path + "/" + Self.copyName)
    #expect(upgrade.backfilledEvents == 13)
    #expect(try store.statistics().schema == LMDBTrialRepository.schemaVersion)

    let after = try RepositorySnapshot(store)
    #expect(after.trials == before.trials)
    #expect(after.ledger == before.ledger)
    #expect(after.outbox == before.outbox)
    #expect(after.lastSeen == before.lastSeen)
    #expect(after.activeByIndex == before.activeByIndex)
    #expect(after.consumers.isEmpty)
    // The log holds every ledger entry, by when it was taken then by id, from cursor 1.
    let taken = before.ledger.sorted {
      $0.takenAt != $1.takenAt ? $0.takenAt < $1.takenAt : $0.id < $1.id
    }
    #expect(after.events.map(\.cursor.sequence) == Array(1...13))
    #expect(
      after.events.map(\.entry)
        == taken.map {
          LedgerEntry(event: $0.event, outcome: $0.outcome, takenAt: $0.takenAt, isLate: $0.isLate)
        })
    let subjects = Dictionary(uniqueKeysWithValues: before.trials.map { ($0.id, $0.subject) })
    #expect(after.events.allSatisfy { $0.subject == subjects[$0.id.trialID] })
    #expect(after.logBounds == EventLogBounds(last: EventCursor(13), prunedThrough: .origin, count: 13))
    // Events taken at one instant are in id order: the reminders skipped at the first start.
    #expect(after.events.prefix(3).map(\.id.trialID) == [TrialID(2), TrialID(3), TrialID(3)])
    #expect(after.events.prefix(3).allSatisfy { $0.entry.outcome == .skipped(.alreadyDueAtStart) })

    // New events follow the backfill.
    var planner = Planner()
    try store.restore(into: &planner)
    let now = Self.upgradeTime
    let fired = try store.commit(planner.takeDue(at: now), now: now)
    #expect(fired.map(\.id.trialID.rawValue).sorted() == [1, 1, 1, 4, 4])
    #expect(fired.map(\.cursor.sequence) == Array(14...18))
    #expect(try store.outbox().count == 6)
  }

  @Test func upgrade_KeepsTheOldFileBeside_AsASchema1Store() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema1Store(in: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    let store = try open(path)
    let copy = try #require(store.upgrade?.keptCopy)
    var st = stat()
    #expect(stat(copy, &st) == 0 && st.st_mode & 0o777 == 0o600)
    let reader = try LMDBStoreReader(file: copy)
    #expect(try reader.statistics().schema == 1)
    #expect(try reader.verify().isClean)
    #expect(try RepositorySnapshot(reader) == before)
    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.contains(".tmp-") })
  }

  @Test func upgradedStore_OpenedAgain_IsNotUpgradedAgainAndVerifiesClean() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema1Store(in: directory)
    let first = try open(path)
    let log = try RepositorySnapshot(first).events
    first.close()
    let second = try LMDBTrialRepository(
      directory: path, clock: StaticWallClock(Self.upgradeTime.addingTimeInterval(3_600)))
    #expect(second.upgrade == nil && second.upgradedFrom == nil)
    #expect(try RepositorySnapshot(second).events == log)
    second.close()
    let copies = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.contains(".schema") }
    #expect(copies == [Self.copyName])
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems)")
    #expect(report.loggedEvents == 13 && report.logLast == EventCursor(13) && report.schema == 3)
    #expect(!report.summary.contains("schema"))
  }

  @Test func upgrade_ACopyOfThatNameAlreadyThere_IsKeptAndAnotherNameTaken() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema1Store(in: directory)
    let taken = path + "/" + Self.copyName
    try Data("an earlier copy".utf8).write(to: URL(fileURLWithPath: taken))
    let store = try open(path)
    #expect(store.upgrade?.keptCopy == taken + "-2")
    #expect(try Data(contentsOf: URL(fileURLWithPath: taken)) == Data("an earlier copy".utf8))
  }

  @Test func newerSchema_IsRefused_AndLeftByteIdentical() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(store)
    try StoreFileDamage.raiseSchema(of: store)
    store.close()
    let before = try FileFingerprint(path + "/data.mdb")
    let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    let error = try #require(throws: StoreError.self) { try open(path) }
    #expect(error.kind == .newerSchema)
    #expect(error.description.contains("store schema 4; this version reads up to 3"))
    #expect(throws: StoreError.self) { try LMDBStoreReader(directory: path) }
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == names)
  }

  /// A backup taken before the upgrade (schema 1) restores as it is, and the store is upgraded
  /// when it is next opened for writing.
  @Test func restore_Schema1Backup_IsUpgradedAtTheNextOpen() throws {
    let directory = try TemporaryDirectory("upgrade")
    let old = try schema1Store(in: directory)
    let backup = directory.appending("schema1.backup")
    _ = try LMDBStoreReader(directory: old).backup(to: backup)
    let path = directory.appending("current")
    let current = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(current)
    current.close()

    let report = try StoreRestore.restore(backup: backup, into: path, now: Self.upgradeTime)
    #expect(report.statistics.schema == 1)
    #expect(report.statistics.trials == 7)
    #expect(report.keptAside != nil)
    let restored = try open(path)
    #expect(restored.upgradedFrom == 1)
    #expect(restored.upgrade?.keptCopy == path + "/" + Self.copyName)
    let snapshot = try RepositorySnapshot(restored)
    #expect(snapshot.trials.count == 7)
    #expect(snapshot.events.count == 13)
    #expect(snapshot.consumers.isEmpty, "the replaced store's consumer went with it")
    restored.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }
}
