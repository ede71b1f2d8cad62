import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The shared store's schema of follow-ups: a database of version 14 upgraded in place, its
/// trials read with none, and a trial's follow-ups kept, planned after its expiry by a node
/// taking its shards (a restart), fired once or called off by a conversion.
@Suite struct PostgresFollowUpSchemaTests {
  @Test func schemaBeforeFollowUps_IsUpgradedInPlace_AndFollowUpsFireOnce() throws {
    let (connection, membership, repository) = try PostgresSchemaTests.upgradedWithANode(from: 14)
    defer { _ = membership }
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.followUps.isEmpty)

    let now = Date(timeIntervalSinceReferenceDate: 60)
    let spans = try FollowUpSchedule([.seconds(3_600), .seconds(86_400)])
    let (expiring, converting) = try repository.write { txn in
      (
        try TrialBook.startTrial(
          in: txn, attributes: TrialAttributes(subject: "new-1"), endDate: now + 3_600, reminders: .none,
          followUps: spans, now: now, ids: SequenceTrialIDGenerator([0x10])
        ).trial,
        try TrialBook.startTrial(
          in: txn, attributes: TrialAttributes(subject: "new-2"), endDate: now + 3_600, reminders: .none,
          grace: .seconds(600), followUps: spans, now: now, ids: SequenceTrialIDGenerator([0x11])
        ).trial
      )
    }
    #expect(try repository.trial(expiring.id)?.followUps == spans)
    var planner = Planner()
    try repository.restore(shards: Set(0..<4), into: &planner)
    let end = now + 3_600
    func take(at date: Date) throws -> [String] {
      let due = planner.takeDue(at: date)
      return try repository.write { try TrialBook.commit(in: $0, due, now: date) }.map(\.entry)
        .filter { $0.event.kind.followUpSpan != nil }
        .map {
          switch $0.outcome {
          case .fired: "\($0.id) fired"
          case .skipped(let reason): "\($0.id) \(reason.code)"
          }
        }
    }
    #expect(try take(at: end).isEmpty)
    // Converted during its grace: its follow-ups are called off.
    let converted = try repository.write {
      try TrialBook.endTrial(in: $0, converting.id, outcome: .converted, now: end + 60)
    }
    planner.add(converted, now: end + 60)
    #expect(try take(at: end + 3_600) == ["0000000000000010-r1-follow-up-3600000ms fired"])
    // A restart: the expired and the converted trial's follow-ups not taken are planned again.
    var restarted = Planner()
    try repository.restore(shards: Set(0..<4), into: &restarted)
    planner = restarted
    #expect(
      Set(try take(at: end + 200_000)) == [
        "0000000000000010-r1-follow-up-86400000ms fired",
        "0000000000000011-r1-follow-up-3600000ms called-off-by-conversion",
        "0000000000000011-r1-follow-up-86400000ms called-off-by-conversion",
      ])
    var again = Planner()
    try repository.restore(shards: Set(0..<4), into: &again)
    #expect(again.pendingEvents(of: expiring.id).isEmpty && again.pendingEvents(of: converting.id).isEmpty)

    let row = try connection.execute(
      """
      SELECT t.follow_ups_ms::text, l.kind, l.offset_ms FROM trialwatch.trial t
      JOIN trialwatch.ledger l USING (trial_id) WHERE t.trial_id = 16 AND l.offset_ms > 0 ORDER BY l.offset_ms
      """)
    #expect(row.string(0, 0) == "{3600000,86400000}")
    #expect(row.string(0, 1) == "follow-up" && row.int64(0, 2) == (1 << 62) + 3_600_000)
    let unknown = #expect(throws: PGError.self) {
      try connection.execute(
        "UPDATE trialwatch.ledger SET kind = 'win-back' WHERE trial_id = 16 AND offset_ms > 0")
    }
    #expect(unknown?.sqlState == "23514")
  }
}
