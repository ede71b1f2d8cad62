import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The shared store's schema of variants: a database of version 9 upgraded through every step,
/// its trials read without a variant, and a trial's variant readable as its own column.
@Suite struct PostgresVariantSchemaTests {
  @Test func schemaBeforeVariants_IsUpgraded_AndTheVariantIsAColumn() throws {
    let (connection, membership, repository) = try PostgresSchemaTests.upgradedWithANode(from: 9)
    defer { _ = membership }
    #expect(try repository.trial(TrialID(1))?.attributes.variant == nil)

    let now = Date(timeIntervalSinceReferenceDate: 60)
    var attributes = TrialAttributes(subject: "new-1", plan: "pro")
    attributes.variant = "long"
    let started = try repository.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: attributes, endDate: now + 3_600, reminders: .none, now: now,
        ids: SequenceTrialIDGenerator([0x10])
      ).trial
    }
    #expect(try repository.trial(started.id)?.attributes.variant == "long")
    let rows = try connection.execute(
      """
      SELECT trial_id, variant, attributes->>'plan' FROM trialwatch.trial ORDER BY trial_id
      """)
    let last = rows.rows - 1
    #expect(rows.int64(last, 0) == 16 && rows.string(last, 1) == "long" && rows.string(last, 2) == "pro")
    #expect((0..<last).allSatisfy { rows.string($0, 1) == nil })
    let index = try connection.execute(
      "SELECT count(*) FROM pg_indexes WHERE schemaname = 'trialwatch' AND indexname = 'trial_plan_variant'")
    #expect(index.int(0, 0) == 1)

    // The figures by variant: grouped by the database, which can read them by that index.
    let figures = try repository.cohortsByVariant(plan: "pro", from: .min, through: .max)
    #expect(figures == ["long": CohortCounts(started: 1)])
    _ = try connection.execute("SET enable_seqscan = off")
    let plan = try connection.execute(
      "EXPLAIN " + PostgresTrialRepository.variantFiguresSQL, ["pro", "-1e12", "1e12"])
    let lines = (0..<plan.rows).compactMap { plan.string($0, 0) }.joined(separator: "\n")
    #expect(lines.contains("trial_plan_variant"), "\(lines)")
  }
}
