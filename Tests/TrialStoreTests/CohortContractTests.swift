import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// The conversion figures on every store: written with the changes they count, kept across a
/// reopen and past the removal of the trials they count, and counted from the trials of a store
/// upgraded from a schema before them.
@Suite struct CohortContractTests {
  private func cohorts(_ repository: any TrialRepository) throws -> [CohortKey: CohortCounts] {
    Dictionary(
      uniqueKeysWithValues: try repository.read { try $0.cohorts(from: Int32.min, through: Int32.max) }.map {
        ($0.key, $0.counts)
      })
  }

  @Test(arguments: StoreKind.allCases)
  func cohorts_OutliveTheirTrials_AndAReopen(kind: StoreKind) throws {
    let store = try Subject(kind)
    let defaults = TrialDefaults(
      length: .days(2), reminders: .none,
      plans: ["pro": TrialPlan(name: "pro", length: .days(2), reminders: .none)])
    func apply(_ command: TrialCommand, at hours: Double, id: UInt64 = 0) throws -> Trial {
      try store.repository.write { txn in
        try TrialBook.apply(
          command, in: txn, now: origin + hours * 3_600, defaults: defaults,
          ids: SequenceTrialIDGenerator([id]),
          folding: SubjectFolding { $0 })
      }.trial
    }
    let converted = try apply(try .start(subject: "a", plan: "pro"), at: 0, id: 0xA1)
    let cancelled = try apply(try .start(subject: "b", plan: "pro"), at: 1, id: 0xA2)
    let expired = try apply(try .start(subject: "c"), at: 2, id: 0xA3)
    let paused = try apply(try .start(subject: "d", plan: "pro"), at: 30, id: 0xA4)
    _ = try apply(.end(converted.id, .converted), at: 27.5)
    _ = try apply(.end(cancelled.id, .cancelled), at: 28)
    _ = try apply(try .pause(.id(paused.id)), at: 31)
    let expiry = DueEvent(
      event: expired.events.last!, takenAt: expired.period.endDate, disposition: .fire, isLate: false)
    _ = try store.repository.commit([expiry], now: expired.period.endDate)

    let day = CohortKey.day(of: origin)
    let expected: [CohortKey: CohortCounts] = [
      CohortKey(day: day, plan: "pro"): CohortCounts(
        started: 2, converted: 1, cancelled: 1, conversionHours: [27: 1]),
      CohortKey(day: day, plan: ""): CohortCounts(started: 1, expired: 1),
      CohortKey(day: CohortKey.day(of: origin + 30 * 3_600), plan: "pro"): CohortCounts(
        started: 1, paused: 1),
    ]
    #expect(try cohorts(store.repository) == expected)
    // Retention removes the ended trials; the figures stay.
    try store.repository.write { txn in
      for id in [converted.id, cancelled.id, expired.id] { try txn.removeTrial(id) }
    }
    #expect(try store.reopen()?.isClean != false)
    #expect(try store.repository.trial(converted.id) == nil)
    #expect(try cohorts(store.repository) == expected)
    let later = CohortKey.day(of: origin + 30 * 3_600)
    #expect(
      try store.repository.read { try $0.cohorts(from: day + 1, through: later) }.map(\.key.day) == [later])
  }

  @Test(arguments: [1, 2, 3])
  func upgradedStore_CountsItsTrialsIntoCohorts(schema: Int) throws {
    let directory = try TemporaryDirectory("cohorts")
    let store = try FixtureStore.open(try FixtureStore.copy(schema: schema, into: directory))
    defer { store.close() }
    var expected: [CohortKey: CohortCounts] = [:]
    for trial in try store.read({ try $0.allTrials() }) {
      expected[TrialStats.cohort(of: trial), default: CohortCounts()].add(TrialStats.contribution(of: trial))
    }
    #expect(!expected.isEmpty)
    #expect(try cohorts(store) == expected)
    #expect(expected.values.contains { $0.expired > 0 } && expected.values.contains { $0.active > 0 })
  }

  @Test(arguments: [
    CohortCounts(started: 1, converted: 2, conversionHours: [3: 2]),
    CohortCounts(started: 3, converted: 2, conversionHours: [3: 1]),
    CohortCounts(started: 3, cancelled: -1),
  ])
  func cohortRecord_ThatDoesNotAddUp_IsRefused(counts: CohortCounts) throws {
    var writer = ByteWriter()
    CohortRecords.encode(counts, into: &writer)
    #expect(throws: RecordProblem.self) { try writer.bytes.withUnsafeBytes { try CohortRecords.decode($0) } }
    var good = ByteWriter()
    CohortRecords.encode(CohortCounts(started: 3, converted: 2, conversionHours: [3: 1, 9: 1]), into: &good)
    #expect(try good.bytes.withUnsafeBytes { try CohortRecords.decode($0) }.medianHoursToConversion == 3)
  }
}
