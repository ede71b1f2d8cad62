import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// The upgrade of schema 8 to 9 (the trial lifecycle: a trial's cancel-at-end mark, flag bit 3,
/// and the skip reason cancel-at-end) changes no record: a store of schema 8 reads the same
/// after it, byte for byte, and takes marks from then on.
@Suite struct CancelUpgradeTests {
  /// A store with an active, a paused and an expired trial, made to claim schema 8.
  private func storeOfSchema8(_ path: String) throws -> [UInt64: [UInt8]] {
    let store = try LMDBTrialRepository(directory: path)
    try store.write { txn in
      let ids = SequenceTrialIDGenerator([1, 2, 3])
      for subject in ["active", "paused", "expired"] {
        _ = try TrialBook.startTrial(
          in: txn, subject: subject, endDate: origin + 10 * day, reminders: .default, now: origin, ids: ids)
      }
      _ = try TrialBook.pauseTrial(in: txn, TrialID(2), maxPause: nil, now: origin + day)
    }
    let expired = try #require(try store.trial(TrialID(3)))
    let due = expired.events.map { DueEvent(event: $0, takenAt: $0.due, disposition: .fire, isLate: false) }
    _ = try store.write { try TrialBook.commit(in: $0, due, now: origin + 10 * day) }
    let records = try store.withRawRecords { raw in
      try Dictionary(
        uniqueKeysWithValues: [UInt64(1), 2, 3].map { id in
          (id, try #require(try raw.get("trials", withUnsafeBytes(of: id.bigEndian) { Array($0) })))
        })
    }
    try store.withRawRecords { records in
      try records.put("meta", Array("schema".utf8), withUnsafeBytes(of: UInt32(8).littleEndian) { Array($0) })
    }
    store.close()
    return records
  }

  @Test func storeOfSchema8_Upgraded_ReadsTheSameAndTakesAMark() throws {
    let directory = try TemporaryDirectory("cancel-upgrade")
    let path = directory.appending("store")
    let records = try storeOfSchema8(path)
    let before = try RepositorySnapshot(LMDBStoreReader(directory: path))
    #expect(try LMDBStoreReader(directory: path).statistics().schema == 8)

    let store = try FixtureStore.open(path)
    #expect(store.upgrade?.fromSchema == 8 && store.upgrade?.toSchema == 9)
    #expect(LMDBTrialRepository.schemaVersion == 9)
    #expect(try RepositorySnapshot(store) == before)
    for (id, record) in records {
      #expect(
        try store.withRawRecords { try $0.get("trials", withUnsafeBytes(of: id.bigEndian) { Array($0) }) }
          == record)
    }
    #expect(try store.trial(TrialID(3))?.state == .expired)
    // A mark on the active trial and on the paused one, written as bit 3.
    for id in [TrialID(1), TrialID(2)] {
      _ = try store.write {
        try TrialBook.cancelAtEnd(in: $0, id, remindAfterCancel: id == TrialID(2), now: origin + 2 * day)
      }
    }
    let flags = try store.withRawRecords { raw in
      try [UInt64(1), 2].map { try raw.get("trials", withUnsafeBytes(of: $0.bigEndian) { Array($0) })?[2] }
    }
    #expect(flags == [8, 2 | 8])
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems)")
    let reopened = try LMDBTrialRepository(directory: path)
    #expect(reopened.upgrade == nil)
    #expect(
      try reopened.trial(TrialID(2))?.cancelMark
        == TrialCancelMark(askedAt: origin + 2 * day, remindAfterCancel: true))
    #expect(try reopened.trial(TrialID(1))?.cancelsAt == origin + 10 * day)
  }

  /// Records of schema 9 that an older version must not read: a mark (bit 3) and the skip
  /// reason cancel-at-end (outcome code 7) read back as written; an unknown flag is refused.
  @Test func markAndReason_ReadBack_AndAnUnknownFlagIsRefused() throws {
    let codec = RecordCodec()
    var trial = Trial(
      id: TrialID(5), subject: "acme-5", period: TrialPeriod(startDate: origin, endDate: origin + 5 * day),
      state: .paused, pause: TrialPause(since: origin + day, until: origin + 3 * day),
      cancelMark: TrialCancelMark(askedAt: origin + 2 * day, remindAfterCancel: true))
    trial.attributes.plan = "pro"
    var writer = ByteWriter()
    try codec.encode(trial, into: &writer)
    let decoded = try writer.bytes.withUnsafeBytes { try codec.decodeTrial($0, id: trial.id) }
    #expect(decoded == trial)
    var unknown = writer.bytes
    unknown[2] |= 16
    #expect(throws: RecordProblem.self) {
      try unknown.withUnsafeBytes { try codec.decodeTrial($0, id: trial.id) }
    }

    let entry = LedgerEntry(
      event: trial.event(at: 0), outcome: .skipped(.cancelAtEnd), takenAt: origin + 2 * day, isLate: false)
    var entryWriter = ByteWriter()
    codec.encode(entry, into: &entryWriter)
    #expect(entryWriter.bytes[2] == 7)
    let key = StoreKeys.LedgerKey(trial: 5, revision: 1, order: entry.id.order)
    #expect(try entryWriter.bytes.withUnsafeBytes { try codec.decodeLedgerEntry($0, key: key) } == entry)
  }
}
