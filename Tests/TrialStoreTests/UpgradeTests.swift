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

/// A store written by an earlier version, kept as `Fixtures/schemaN/data.mdb` (Fixtures/README.md),
/// and what it holds.
struct UpgradeFixture: Sendable, CustomStringConvertible {
  var schema: UInt32
  /// How many trials, ledger entries, undelivered events and logged events it holds.
  var trials, ledgerEntries, outboxEntries, loggedEvents: Int
  /// The active trials, by id.
  var active: [UInt64]
  var logBounds: EventLogBounds
  /// The consumers, by name.
  var consumers: [String]
  /// What the check of the store, read as it is, says of it.
  var summary: String
  /// The events the upgrade writes into the log from the ledger.
  var backfilled: Int
  /// The trials whose events fall due at `FixtureStore.upgradeTime`, one id an event.
  var dueAtUpgrade: [UInt64]
  /// The trials expired once those events are taken.
  var expiredOnceDue: Int

  var description: String { "schema \(schema)" }
  var copyName: String { FixtureStore.copyName(schema: Int(schema)) }
  /// The log's length once upgraded.
  var loggedAfterUpgrade: Int { loggedEvents + backfilled }

  /// The version before the event log.
  static let schema1 = UpgradeFixture(
    schema: 1, trials: 7, ledgerEntries: 13, outboxEntries: 1, loggedEvents: 0, active: [1, 4],
    logBounds: EventLogBounds(), consumers: [],
    summary: "13 ledger entries, 1 undelivered, 0 logged events, 0 consumers; store schema 1", backfilled: 13,
    dueAtUpgrade: [1, 1, 1, 4, 4], expiredOnceDue: 6)
  /// The version whose expiries rewrote their trials' records.
  static let schema2 = UpgradeFixture(
    schema: 2, trials: 8, ledgerEntries: 13, outboxEntries: 3, loggedEvents: 13, active: [1, 4, 8],
    logBounds: EventLogBounds(last: EventCursor(13), prunedThrough: .origin, count: 13),
    consumers: ["audit", "mailer"], summary: "store schema 2 (trialwatchd upgrades it to 9", backfilled: 0,
    dueAtUpgrade: [1, 1, 1, 4, 4, 8, 8, 8], expiredOnceDue: 7)
  /// The version before attribute sections: written by the same program as schema 2.
  static let schema3 = UpgradeFixture(
    schema: 3, trials: 8, ledgerEntries: 13, outboxEntries: 3, loggedEvents: 13, active: [1, 4, 8],
    logBounds: EventLogBounds(last: EventCursor(13), prunedThrough: .origin, count: 13),
    consumers: ["audit", "mailer"], summary: "store schema 3 (trialwatchd upgrades it to 9", backfilled: 0,
    dueAtUpgrade: [1, 1, 1, 4, 4, 8, 8, 8], expiredOnceDue: 7)
  static let all = [schema1, schema2, schema3]

  /// The fixture copied into `directory`; returns the store directory.
  func copy(into directory: TemporaryDirectory) throws -> String {
    try FixtureStore.copy(schema: Int(schema), into: directory)
  }
}

/// Opening the stores of earlier schemas: read as they are, upgraded in place when opened for
/// writing, the old file kept beside.
@Suite struct UpgradeTests {
  static let upgradeTime = FixtureStore.upgradeTime

  private func open(_ path: String) throws -> LMDBTrialRepository { try FixtureStore.open(path) }

  /// Takes what is due at the upgrade time; returns the events logged.
  private func takeDue(_ store: LMDBTrialRepository) throws -> [LoggedEvent] {
    var planner = Planner()
    try store.restore(into: &planner)
    return try store.commit(planner.takeDue(at: Self.upgradeTime), now: Self.upgradeTime)
  }

  @Test(arguments: UpgradeFixture.all)
  func oldStore_OpenedReadOnly_ReadsEverythingAndIsLeftAlone(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let before = try FileFingerprint(path + "/data.mdb")
    let reader = try LMDBStoreReader(directory: path)
    let statistics = try reader.statistics()
    #expect(statistics.schema == fixture.schema)
    #expect(statistics.trials == fixture.trials && statistics.activeTrials == fixture.active.count)
    #expect(
      statistics.ledgerEntries == fixture.ledgerEntries && statistics.outboxEntries == fixture.outboxEntries)
    #expect(
      statistics.loggedEvents == fixture.loggedEvents && statistics.consumers == fixture.consumers.count)
    let snapshot = try RepositorySnapshot(reader)
    #expect(snapshot.trials.filter(\.isActive).map(\.id.rawValue) == fixture.active)
    #expect(snapshot.events.count == fixture.loggedEvents)
    #expect(snapshot.consumers.map(\.name) == fixture.consumers)
    #expect(snapshot.logBounds == fixture.logBounds)
    #expect(try reader.read { try $0.consumer(named: "mailer") }?.name == fixture.consumers.last)
    let report = try reader.verify()
    #expect(report.isClean, "\(report.problems)")
    #expect(report.schema == fixture.schema)
    #expect(report.summary.contains(fixture.summary))
    reader.close()
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(!FileManager.default.fileExists(atPath: path + "/" + fixture.copyName))
  }

  @Test(arguments: UpgradeFixture.all)
  func oldStore_OpenedForWriting_IsUpgradedKeepingEveryRecord(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    #expect(before.trials.count == fixture.trials && before.ledger.count == fixture.ledgerEntries)
    #expect(before.outbox.count == fixture.outboxEntries && before.events.count == fixture.loggedEvents)
    #expect(before.consumers.map(\.name) == fixture.consumers)

    let store = try open(path)
    let upgrade = try #require(store.upgrade)
    #expect(store.upgradedFrom == fixture.schema)
    #expect(upgrade.fromSchema == fixture.schema && upgrade.toSchema == LMDBTrialRepository.schemaVersion)
    #expect(upgrade.keptCopy == path + "/" + fixture.copyName)
    #expect(upgrade.backfilledEvents == fixture.backfilled)
    #expect(try store.statistics().schema == LMDBTrialRepository.schemaVersion)
    #expect(try store.statistics().activeTrials == fixture.active.count)

    var after = try RepositorySnapshot(store)
    #expect(after.events.count == fixture.loggedAfterUpgrade)
    #expect(Array(after.events.prefix(fixture.loggedEvents)) == before.events)
    // Apart from the events written from the ledger, the store is as it was.
    after.events = before.events
    after.logBounds = before.logBounds
    #expect(after == before)
    store.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }

  /// The version before the event log: the upgrade writes every ledger entry into the log.
  @Test func schema1Upgrade_FillsTheLogFromTheLedger_InTheOrderTaken() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try UpgradeFixture.schema1.copy(into: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    let after = try RepositorySnapshot(try open(path))
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
  }

  /// The version whose expiries rewrote their trials' records: what it wrote reads the same.
  @Test func schema2Upgrade_KeepsTheOutboxConsumersAndExpiredTrials() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try UpgradeFixture.schema2.copy(into: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    #expect(
      before.outbox.map(\.description) == [
        "0000000000000004-r1-reminder-604800000ms", "0000000000000006-r2-reminder-86400000ms",
        "0000000000000006-r2-expiry",
      ])
    #expect(before.consumers.map(\.acknowledged.sequence) == [1, 6])
    let store = try open(path)
    #expect(try RepositorySnapshot(store) == before)
    // The trials expired under schema 2 read expired, ended when their expiry was taken.
    for id in [2, 3, 6, 7] as [UInt64] {
      let trial = try #require(try store.read { try $0.trial(TrialID(id)) })
      let expiry = try #require(
        try store.read {
          try $0.ledgerEntry(EventID(trialID: trial.id, revision: trial.revision, kind: .expiry))
        })
      #expect(trial.state == .expired && trial.endedAt == expiry.takenAt)
    }
    #expect(try store.read { try $0.trial(TrialID(5))?.state } == .cancelled)
  }

  /// New events follow the log, backfilled or not.
  @Test(arguments: UpgradeFixture.all)
  func upgradedStore_EventsTaken_FollowTheLog(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let store = try open(try fixture.copy(into: directory))
    let fired = try takeDue(store)
    let last = UInt64(fixture.loggedAfterUpgrade)
    #expect(fired.map(\.id.trialID.rawValue).sorted() == fixture.dueAtUpgrade)
    #expect(fired.map(\.cursor.sequence) == Array((last + 1)...(last + UInt64(fixture.dueAtUpgrade.count))))
    #expect(try store.outbox().count == fixture.outboxEntries + fixture.dueAtUpgrade.count)
  }

  /// After the upgrade, expiries leave their trials' records as they were: the trial reads
  /// expired from its ledger entry, the active count follows, and the store verifies clean.
  @Test(arguments: UpgradeFixture.all)
  func upgradedStore_EventsTaken_ExpireTrialsWithoutRewritingTheirRecords(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let store = try open(path)
    func record(_ id: UInt64) throws -> [UInt8]? {
      try store.withRawRecords { try $0.get("trials", withUnsafeBytes(of: id.bigEndian) { Array($0) }) }
    }
    let records = try fixture.active.map { try record($0) }
    _ = try takeDue(store)
    #expect(try fixture.active.map { try record($0) } == records)
    for id in fixture.active {
      let trial = try #require(try store.read { try $0.trial(TrialID(id)) })
      #expect(trial.state == .expired && trial.endedAt == Self.upgradeTime)
    }
    #expect(try store.statistics().activeTrials == 0)
    #expect(try store.read { try $0.activeTrialID(subject: "active-1") } == nil)
    var restored = Planner()
    let summary = try store.restore(into: &restored)
    #expect(summary.byState[.expired] == fixture.expiredOnceDue && summary.byState[.active] == nil)
    #expect(restored.trialCount == 0)
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems)")
  }

  @Test(arguments: UpgradeFixture.all)
  func upgrade_KeepsTheOldFileBeside_AsAStoreOfTheOldSchema(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    let store = try open(path)
    let copy = try #require(store.upgrade?.keptCopy)
    var st = stat()
    #expect(stat(copy, &st) == 0 && st.st_mode & 0o777 == 0o600)
    let reader = try LMDBStoreReader(file: copy)
    #expect(try reader.statistics().schema == fixture.schema)
    #expect(try reader.verify().isClean)
    #expect(try RepositorySnapshot(reader) == before)
    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.contains(".tmp-") })
  }

  @Test(arguments: UpgradeFixture.all)
  func upgradedStore_OpenedAgain_IsNotUpgradedAgainAndVerifiesClean(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let first = try open(path)
    let log = try RepositorySnapshot(first).events
    first.close()
    let second = try LMDBTrialRepository(
      directory: path, clock: StaticWallClock(Self.upgradeTime.addingTimeInterval(3_600)))
    #expect(second.upgrade == nil && second.upgradedFrom == nil)
    #expect(try RepositorySnapshot(second).events == log)
    second.close()
    let again = try open(path)
    #expect(again.upgrade == nil)
    again.close()
    let copies = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.contains(".schema") }
    #expect(copies == [fixture.copyName])
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems)")
    let logged = fixture.loggedAfterUpgrade
    #expect(
      report.loggedEvents == logged && report.logLast == EventCursor(UInt64(logged))
        && report.schema == LMDBTrialRepository.schemaVersion)
    #expect(!report.summary.contains("schema"))
  }

  @Test(arguments: UpgradeFixture.all)
  func upgrade_ACopyOfThatNameAlreadyThere_IsKeptAndAnotherNameTaken(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try fixture.copy(into: directory)
    let taken = path + "/" + fixture.copyName
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
    let schema = LMDBTrialRepository.schemaVersion
    #expect(error.description.contains("store schema \(schema + 1); this version reads up to \(schema)"))
    #expect(throws: StoreError.self) { try LMDBStoreReader(directory: path) }
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == names)
  }

  /// A backup taken before the upgrade restores as it is, and the store is upgraded when it
  /// is next opened for writing.
  @Test(arguments: UpgradeFixture.all)
  func restore_OldSchemaBackup_IsUpgradedAtTheNextOpen(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("upgrade")
    let old = try fixture.copy(into: directory)
    let backup = directory.appending("old.backup")
    _ = try LMDBStoreReader(directory: old).backup(to: backup)
    let before = try RepositorySnapshot(LMDBStoreReader(file: backup))
    let path = directory.appending("current")
    let current = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(current)
    current.close()

    let report = try StoreRestore.restore(backup: backup, into: path, now: Self.upgradeTime)
    #expect(report.statistics.schema == fixture.schema)
    #expect(report.statistics.trials == fixture.trials)
    #expect(report.keptAside != nil)
    let restored = try open(path)
    #expect(restored.upgradedFrom == fixture.schema)
    #expect(restored.upgrade?.keptCopy == path + "/" + fixture.copyName)
    let snapshot = try RepositorySnapshot(restored)
    #expect(snapshot.trials.count == fixture.trials)
    #expect(snapshot.events.count == fixture.loggedAfterUpgrade)
    #expect(
      snapshot.consumers == before.restored(as: report.generation).consumers,
      "the replaced store's consumer went with it")
    restored.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }
}
