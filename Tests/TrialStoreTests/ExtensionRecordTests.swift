import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// The extension count in the file store (flag bit 5 of a trial record, schema 9): written only
/// above 0, so that a record without it is byte for byte what schema 8 wrote, and the upgrade
/// from schema 8, which changes no record.
@Suite struct ExtensionRecordTests {
  private func encoded(_ trial: Trial) throws -> [UInt8] {
    var writer = ByteWriter()
    try RecordCodec().encode(trial, into: &writer)
    return writer.bytes
  }

  private func decoded(_ bytes: [UInt8], id: TrialID) throws -> Trial {
    try bytes.withUnsafeBytes { try RecordCodec().decodeTrial($0, id: id) }
  }

  private var paused: Trial {
    Trial(
      id: TrialID(5), subject: "acme-5", labels: try! TrialLabels(["tier": "pro"]),
      period: TrialPeriod(startDate: origin, endDate: origin + 15 * day), state: .paused, revision: 3,
      pause: TrialPause(since: origin + day, until: origin + 8 * day))
  }

  @Test func countAboveZero_FollowsThePause_AndReadsBack() throws {
    var trial = paused
    let without = try encoded(trial)
    #expect(without[2] == 2 | 4)
    trial.extensions = 2
    let with = try encoded(trial)
    #expect(with[2] == 2 | 4 | 32)
    // The record of schema 8 with the count inserted after the pause's two dates.
    let afterPause = 4 + 4 + 8 * 4
    #expect(Array(with[..<afterPause].dropFirst(3)) == Array(without[..<afterPause].dropFirst(3)))
    #expect(Array(with[afterPause..<afterPause + 4]) == [2, 0, 0, 0])
    #expect(Array(with[(afterPause + 4)...]) == Array(without[afterPause...]))
    #expect(try decoded(with, id: trial.id) == trial)
    #expect(try decoded(without, id: trial.id).extensions == 0)
  }

  @Test func flagWithoutACount_OrAnUnknownFlag_IsRefused() throws {
    var trial = paused
    trial.extensions = 1
    var zero = try encoded(trial)
    let afterPause = 4 + 4 + 8 * 4
    zero[afterPause] = 0
    #expect(throws: RecordProblem.self) { try decoded(zero, id: trial.id) }
    var unknown = try encoded(paused)
    unknown[2] |= 64
    #expect(throws: RecordProblem.self) { try decoded(unknown, id: trial.id) }
  }

  /// A store of schema 8 with an active trial is upgraded to 9 changing no record; the trial
  /// counts 0, its extensions are counted from then on, and the store verifies clean.
  @Test func storeOfSchema8_Upgraded_ItsTrialsCountingNone() throws {
    let directory = try TemporaryDirectory("extensions")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    let started = try store.startTrial(
      subject: "acme-8", endDate: origin + 15 * day, reminders: .none, now: origin,
      ids: SequenceTrialIDGenerator([8]))
    store.close()
    let environment = try LMDBEnvironment(
      directory: path, initialMapSize: 1 << 20, maximumMapSize: 1 << 30,
      maxDatabases: LMDBTrialRepository.Databases.names.count, create: false)
    try environment.write { txn in
      let meta = try #require(try txn.openDatabase("meta", create: false))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.schema, UInt32(8))
    }
    environment.close()
    #expect(try LMDBStoreReader(directory: path).statistics().schema == 8)

    let upgraded = try FixtureStore.open(path)
    #expect(upgraded.upgrade?.fromSchema == 8 && upgraded.upgrade?.toSchema == 9)
    #expect(try upgraded.trial(started.trial.id) == started.trial)
    let extended = try upgraded.write { txn in
      try TrialBook.extendTrial(
        in: txn, started.trial.id, to: origin + 30 * day, now: origin + day,
        limits: ExtensionLimits(maxExtensions: 2))
    }
    #expect(extended.trial.extensions == 1)
    upgraded.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean && report.schema == 9)
    let reopened = try LMDBTrialRepository(directory: path)
    #expect(try reopened.trial(started.trial.id) == extended.trial)
    reopened.close()
  }
}
