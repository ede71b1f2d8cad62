import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// The figures by variant on every store (`cohortsByVariant`: PostgreSQL groups them in one
/// statement, the others scan): each variant's trials of the plan, started in the days asked
/// for, counted as the cohorts count them; trials of another plan or without a variant left
/// out; the same as a count of the trials in Swift.
@Suite struct VariantStatsContractTests {
  static let plan = TrialPlan(
    name: "pro", length: .days(14), reminders: .none,
    variants: [TrialVariant(name: "short"), TrialVariant(name: "long", length: .days(30))])
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: ["pro": plan, "basic": TrialPlan(name: "basic", length: .days(14), reminders: .none)])

  @Test(arguments: StoreKind.allCases)
  func figuresByVariant_CountEachVariantsTrials(kind: StoreKind) throws {
    let store = try Subject(kind)
    func apply(_ command: TrialCommand, at hours: Double, id: UInt64 = 0) throws -> Trial {
      try store.repository.write { txn in
        try TrialBook.apply(
          command, in: txn, now: origin + hours * 3_600, defaults: Self.defaults,
          ids: SequenceTrialIDGenerator([id]), folding: SubjectFolding { $0 })
      }.trial
    }
    func start(_ subject: String, _ variant: String?, plan: String = "pro", at hours: Double, id: UInt64)
      throws -> Trial
    {
      try apply(try .start(subject: subject, plan: plan, variant: variant), at: hours, id: id)
    }
    let converted = try start("a", "short", at: 0, id: 0xB1)
    let cancelled = try start("b", "short", at: 0, id: 0xB2)
    _ = try start("c", "long", at: 0, id: 0xB3)
    let paused = try start("d", "long", at: 48, id: 0xB4)
    let late = try start("e", "long", at: 50, id: 0xB5)
    _ = try start("f", nil, plan: "basic", at: 0, id: 0xB6)
    _ = try apply(.end(converted.id, .converted), at: 27.5)
    _ = try apply(.end(cancelled.id, .cancelled), at: 1)
    _ = try apply(try .pause(.id(paused.id)), at: 49)
    _ = try apply(.end(late.id, .converted), at: 55.5)

    let first = CohortKey.day(of: origin)
    let last = CohortKey.day(of: origin + 50 * 3_600)
    #expect(last > first)
    let all = try store.repository.cohortsByVariant(plan: "pro", from: first, through: last)
    #expect(
      all == [
        "short": CohortCounts(started: 2, converted: 1, cancelled: 1, conversionHours: [27: 1]),
        "long": CohortCounts(started: 3, converted: 1, paused: 1, conversionHours: [5: 1]),
      ])
    #expect(all["long"]?.active == 1)
    // The first day alone, the later ones alone; another plan, days without trials.
    let firstDay = try store.repository.cohortsByVariant(plan: "pro", from: first, through: first)
    #expect(firstDay["long"] == CohortCounts(started: 1) && firstDay["short"] == all["short"])
    let later = try store.repository.cohortsByVariant(plan: "pro", from: first + 1, through: .max)
    #expect(later == ["long": CohortCounts(started: 2, converted: 1, paused: 1, conversionHours: [5: 1])])
    #expect(try store.repository.cohortsByVariant(plan: "basic", from: .min, through: .max).isEmpty)
    #expect(try store.repository.cohortsByVariant(plan: "pro", from: last + 1, through: .max).isEmpty)
    #expect(try store.repository.cohortsByVariant(plan: "pro", from: last, through: first).isEmpty)

    // As the trials counted one by one in Swift say, across a reopen.
    try store.reopen()
    for (from, through) in [(first, last), (first, first), (first + 1, Int32.max), (Int32.min, Int32.max)] {
      let counted = try store.repository.read { txn in
        var figures: [String: CohortCounts] = [:]
        try txn.scanTrials(after: nil) {
          TrialStats.addByVariant($0, plan: "pro", from: from, through: through, to: &figures)
          return true
        }
        return figures
      }
      #expect(try store.repository.cohortsByVariant(plan: "pro", from: from, through: through) == counted)
    }
  }
}
