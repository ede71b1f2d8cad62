import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The shared store's schema of milestones (step 15): a database of version 14 upgraded in
/// place, its trials read with none, and a trial's milestones kept, fired once across a restart
/// (a node taking its shards) or skipped by a pause, with the ledger's kind `milestone`.
@Suite struct PostgresMilestoneSchemaTests {
  @Test func schemaBeforeMilestones_IsUpgradedInPlace_AndMilestonesFireOnce() throws {
    let (connection, membership, repository) = try PostgresSchemaTests.upgradedWithANode(from: 14)
    defer { _ = membership }
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.milestones.isEmpty)

    let now = Date(timeIntervalSinceReferenceDate: 60)
    let spans = try MilestoneSchedule([.seconds(600), .seconds(1_200), .seconds(7_200)])
    let (kept, paused) = try repository.write { txn in
      (
        try TrialBook.startTrial(
          in: txn, attributes: TrialAttributes(subject: "new-1"), endDate: now + 3_600, reminders: .none,
          milestones: spans, now: now, ids: SequenceTrialIDGenerator([0x10])
        ).trial,
        try TrialBook.startTrial(
          in: txn, attributes: TrialAttributes(subject: "new-2"), endDate: now + 3_600, reminders: .none,
          milestones: spans, now: now, ids: SequenceTrialIDGenerator([0x11])
        ).trial
      )
    }
    #expect(try repository.trial(kept.id)?.milestones == spans)
    var planner = Planner()
    try repository.restore(shards: Set(0..<4), into: &planner)
    func take(at date: Date) throws -> [String] {
      let due = planner.takeDue(at: date)
      return try repository.write { try TrialBook.commit(in: $0, due, now: date) }.map(\.entry)
        .filter { $0.event.kind.milestoneSpan != nil }
        .map {
          switch $0.outcome {
          case .fired: "\($0.id) fired"
          case .skipped(let reason): "\($0.id) \(reason.code)"
          }
        }
    }
    #expect(
      Set(try take(at: now + 900)) == [
        "0000000000000010-r1-milestone-600000ms fired", "0000000000000011-r1-milestone-600000ms fired",
      ])
    let pause = try repository.write {
      try TrialBook.pauseTrial(in: $0, paused.id, maxPause: nil, now: now + 950)
    }
    planner.add(pause.trial, now: now + 950)
    #expect(
      pause.logged.dropFirst().map(\.entry.outcome) == [.skipped(.paused), .skipped(.paused)])
    // A restart: the one not taken is planned again, the fired one not.
    var restarted = Planner()
    try repository.restore(shards: Set(0..<4), into: &restarted)
    planner = restarted
    #expect(planner.pendingEvents(of: kept.id).compactMap(\.kind.milestoneSpan) == [.seconds(1_200)])
    #expect(
      try take(at: now + 10_000) == [
        "0000000000000010-r1-milestone-1200000ms fired",
        "0000000000000010-r1-milestone-7200000ms trial-ended",
      ])
    var again = Planner()
    try repository.restore(shards: Set(0..<4), into: &again)
    #expect(again.pendingEvents(of: kept.id).isEmpty)

    let row = try connection.execute(
      """
      SELECT t.milestones_ms::text, l.kind, l.offset_ms FROM trialwatch.trial t
      JOIN trialwatch.ledger l USING (trial_id) WHERE t.trial_id = 16 AND l.kind = 'milestone'
      ORDER BY l.offset_ms
      """)
    // Ended: cut to those that came.
    #expect(row.string(0, 0) == "{600000,1200000}")
    #expect(row.string(0, 1) == "milestone" && row.int64(0, 2) == (1 << 62) + (1 << 60) + 600_000)
  }
}
