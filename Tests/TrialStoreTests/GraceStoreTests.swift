import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// The file store's own side of grace (schema 9): the grace behind flag bit 4 of a trial record,
/// the state `grace` (code 5), the event `grace-started` (kind code 4), and a store of schema 8
/// upgraded with every record read as before.
@Suite struct GraceStoreTests {
  private func roundTrip(_ trial: Trial) throws -> Trial {
    var writer = ByteWriter()
    try RecordCodec().encode(trial, into: &writer)
    return try writer.bytes.withUnsafeBytes { try RecordCodec().decodeTrial($0, id: trial.id) }
  }

  @Test func trialRecord_WithOrWithoutGrace_ReadsBackTheSame() throws {
    let period = TrialPeriod(startDate: origin, endDate: origin + 10 * day)
    var trial = Trial(id: TrialID(7), subject: "acme", period: period, grace: .milliseconds(432_000_123))
    trial.state = .grace
    #expect(try roundTrip(trial) == trial)
    var paused = Trial(id: TrialID(8), subject: "acme", period: period, state: .paused, grace: .days(3))
    paused.pause = TrialPause(since: origin + day, until: origin + 2 * day)
    #expect(try roundTrip(paused) == paused)

    // A trial without a grace writes no flag bit 4: the record schema 8 wrote.
    let plain = Trial(id: TrialID(9), subject: "acme", period: period)
    var writer = ByteWriter()
    try RecordCodec().encode(plain, into: &writer)
    #expect(writer.bytes[2] & RecordCodec.graceFlag == 0)
    #expect(try roundTrip(plain) == plain)
  }

  @Test func trialRecord_GraceFlagWithoutAGrace_IsRefused() throws {
    let period = TrialPeriod(startDate: origin, endDate: origin + 10 * day)
    var writer = ByteWriter()
    try RecordCodec().encode(
      Trial(id: TrialID(7), subject: "a", period: period, grace: .days(1)), into: &writer)
    var bytes = writer.bytes
    // The grace (8 bytes after the four leading bytes, the revision and the two dates) set to 0.
    for index in 24..<32 { bytes[index] = 0 }
    let problem = #expect(throws: RecordProblem.self) {
      try bytes.withUnsafeBytes { try RecordCodec().decodeTrial($0, id: TrialID(7)) }
    }
    #expect(problem?.message == "the grace is out of range")
  }

  @Test func graceStarted_LedgerEntry_ReadsBackTheSame() throws {
    let event = TrialEvent(
      id: EventID(trialID: TrialID(7), revision: 2, kind: .graceStarted), due: origin + 10 * day)
    let entry = LedgerEntry(event: event, outcome: .fired, takenAt: origin + 11 * day, isLate: true)
    var writer = ByteWriter()
    RecordCodec().encode(entry, into: &writer)
    #expect(writer.bytes[1] == 4)
    let read = try StoreKeys.withLedgerKey(entry.id) { key in
      try writer.bytes.withUnsafeBytes {
        try RecordCodec().decodeLedgerEntry($0, key: try StoreKeys.ledgerKey(key))
      }
    }
    #expect(read == entry)
    #expect(
      StoreKeys.LedgerKey(trial: 7, revision: 2, order: 1 << 60).text == "0000000000000007-r2-grace-started")
  }

  /// A store of schema 8 (its records as this version writes those without a grace) is upgraded
  /// to 9: every record reads as before, and a trial with a grace is kept from then on.
  @Test func storeOfSchema8_Upgraded_ReadsItsRecordsAsBefore() throws {
    let directory = try TemporaryDirectory("grace")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(store)
    try store.withRawRecords { records in
      try records.put("meta", Array("schema".utf8), withUnsafeBytes(of: UInt32(8).littleEndian) { Array($0) })
    }
    let before = try RepositorySnapshot(store)
    store.close()
    #expect(try LMDBStoreReader(directory: path).statistics().schema == 8)

    let upgraded = try FixtureStore.open(path)
    #expect(upgraded.upgrade?.fromSchema == 8 && upgraded.upgrade?.toSchema == 9)
    #expect(upgraded.upgrade?.keptCopy == path + "/" + FixtureStore.copyName(schema: 8))
    #expect(try RepositorySnapshot(upgraded) == before)
    let now = FixtureStore.upgradeTime
    let trial = try upgraded.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: TrialAttributes(subject: "grace-1"), endDate: now + day, reminders: .none,
        grace: .days(2), now: now, ids: SequenceTrialIDGenerator([0x6A])
      ).trial
    }
    let start = DueEvent(event: trial.events[0], takenAt: now + day, disposition: .fire, isLate: false)
    _ = try upgraded.write { try TrialBook.take(in: $0, [start], now: now + day) }
    upgraded.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems.prefix(3))")
    let reopened = try LMDBTrialRepository(directory: path)
    #expect(reopened.upgrade == nil)
    let read = try #require(try reopened.trial(trial.id))
    #expect(read.state == .grace && read.grace == .days(2))
    reopened.close()
  }
}
