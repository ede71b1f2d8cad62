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

/// Opening a store written by the version whose expiries rewrote their trials' records
/// (schema 2): the fixture `Fixtures/schema2/data.mdb` was written by that version
/// (Fixtures/README.md).
@Suite struct UpgradeSchema2Tests {
  static let upgradeTime = FixtureStore.upgradeTime
  static let copyName = FixtureStore.copyName(schema: 2)

  private func schema2Store(in directory: TemporaryDirectory) throws -> String {
    try FixtureStore.copy(schema: 2, into: directory)
  }

  private func open(_ path: String) throws -> LMDBTrialRepository { try FixtureStore.open(path) }

  @Test func schema2Store_OpenedReadOnly_ReadsEverythingAndIsLeftAlone() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema2Store(in: directory)
    let before = try FileFingerprint(path + "/data.mdb")
    let reader = try LMDBStoreReader(directory: path)
    let statistics = try reader.statistics()
    #expect(statistics.schema == 2)
    #expect(statistics.trials == 8 && statistics.activeTrials == 3)
    #expect(statistics.ledgerEntries == 13 && statistics.outboxEntries == 3)
    #expect(statistics.loggedEvents == 13 && statistics.consumers == 2)
    let snapshot = try RepositorySnapshot(reader)
    #expect(snapshot.trials.filter(\.isActive).map(\.id.rawValue) == [1, 4, 8])
    #expect(snapshot.consumers.map(\.name) == ["audit", "mailer"])
    let report = try reader.verify()
    #expect(report.isClean, "\(report.problems)")
    #expect(report.summary.contains("store schema 2 (trialwatchd upgrades it to 3"))
    reader.close()
    #expect(try FileFingerprint(path + "/data.mdb") == before)
    #expect(!FileManager.default.fileExists(atPath: path + "/" + Self.copyName))
  }

  @Test func schema2Store_OpenedForWriting_IsUpgradedKeepingEveryRecord() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema2Store(in: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    #expect(before.trials.count == 8 && before.ledger.count == 13 && before.outbox.count == 3)
    #expect(before.events.count == 13 && before.consumers.count == 2)
    #expect(
      before.outbox.map(\.description) == [
        "0000000000000004-r1-reminder-604800000ms", "0000000000000006-r2-reminder-86400000ms",
        "0000000000000006-r2-expiry",
      ])
    #expect(before.consumers.map(\.acknowledged.sequence) == [1, 6])

    let store = try open(path)
    let upgrade = try #require(store.upgrade)
    #expect(upgrade.fromSchema == 2 && upgrade.toSchema == 3)
    #expect(upgrade.keptCopy == path + "/" + Self.copyName)
    #expect(upgrade.backfilledEvents == 0)
    #expect(try store.statistics().schema == 3)
    #expect(try store.statistics().activeTrials == 3)
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
    store.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }

  @Test func upgrade_KeepsTheOldFileBeside_AsASchema2Store() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema2Store(in: directory)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    let store = try open(path)
    let copy = try #require(store.upgrade?.keptCopy)
    var st = stat()
    #expect(stat(copy, &st) == 0 && st.st_mode & 0o777 == 0o600)
    let reader = try LMDBStoreReader(file: copy)
    #expect(try reader.statistics().schema == 2)
    #expect(try reader.verify().isClean)
    #expect(try RepositorySnapshot(reader) == before)
    store.close()
    let again = try open(path)
    #expect(again.upgrade == nil)
    let copies = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.contains(".schema") }
    #expect(copies == [Self.copyName])
  }

  /// After the upgrade, expiries leave their trials' records as they were: the trial reads
  /// expired from its ledger entry, the active count follows, and the store verifies clean.
  @Test func upgradedStore_EventsTaken_ExpireTrialsWithoutRewritingTheirRecords() throws {
    let directory = try TemporaryDirectory("upgrade")
    let path = try schema2Store(in: directory)
    let store = try open(path)
    func record(_ id: UInt64) throws -> [UInt8]? {
      try store.withRawRecords { try $0.get("trials", withUnsafeBytes(of: id.bigEndian) { Array($0) }) }
    }
    let records = try [1, 4, 8].map { try record($0) }
    var planner = Planner()
    try store.restore(into: &planner)
    let now = Self.upgradeTime
    let fired = try store.commit(planner.takeDue(at: now), now: now)
    #expect(fired.map(\.id.trialID.rawValue).sorted() == [1, 1, 1, 4, 4, 8, 8, 8])
    #expect(fired.map(\.cursor.sequence) == Array(14...21))
    #expect(try [1, 4, 8].map { try record($0) } == records)
    for id in [1, 4, 8] as [UInt64] {
      let trial = try #require(try store.read { try $0.trial(TrialID(id)) })
      #expect(trial.state == .expired && trial.endedAt == now)
    }
    #expect(try store.statistics().activeTrials == 0)
    #expect(try store.read { try $0.activeTrialID(subject: "active-1") } == nil)
    var restored = Planner()
    let summary = try store.restore(into: &restored)
    #expect(summary.byState[.expired] == 7 && summary.byState[.active] == nil)
    #expect(restored.trialCount == 0)
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems)")
  }
}
