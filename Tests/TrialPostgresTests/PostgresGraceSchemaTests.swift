import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The shared store's schema of grace: a database of version 9 upgraded in place, its
/// trials read with no grace, and a trial with a grace entering `grace` in it.
@Suite struct PostgresGraceSchemaTests {
  @Test func schemaBeforeGrace_IsUpgradedInPlace_AndItsTrialsEnterGrace() throws {
    let (connection, membership, repository) = try PostgresSchemaTests.upgradedWithANode(from: 9)
    defer { _ = membership }
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.state == .active && old.grace == .zero && old.events.count == 2)

    let now = Date(timeIntervalSinceReferenceDate: 60)
    let started = try repository.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: TrialAttributes(subject: "new-1"), endDate: now + 3_600, reminders: .none,
        grace: .seconds(7_200), now: now, ids: SequenceTrialIDGenerator([0x10])
      ).trial
    }
    let end = now + 3_600
    let graceStarted = DueEvent(event: started.events[0], takenAt: end, disposition: .fire, isLate: false)
    let taken = try repository.write { try TrialBook.take(in: $0, [graceStarted], now: end) }
    #expect(taken.map(\.trial.state) == [.grace])
    #expect(try repository.trial(started.id)?.state == .grace)
    // Still the subject's open trial: a second start is refused, by the database's index too.
    #expect(try repository.read { try $0.activeTrialID(subject: "new-1") } == started.id)
    var planner = Planner()
    #expect(try repository.restore(shards: Set(0..<4), into: &planner) == 4)
    #expect(planner.pendingEvents(of: started.id).map(\.id.description) == ["0000000000000010-r1-expiry"])
    #expect(planner.pendingEvents(of: started.id).map(\.due) == [end + 7_200])

    let row = try connection.execute(
      """
      SELECT t.state, t.grace_ms, l.kind, l.offset_ms,
        (SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes
          WHERE schemaname = 'trialwatch' AND tablename = 'trial' AND indexname LIKE 'trial_open_%'),
        (SELECT bool_and(indexdef LIKE '%grace%') FROM pg_indexes
          WHERE schemaname = 'trialwatch' AND tablename = 'trial' AND indexname LIKE 'trial_open_%')
      FROM trialwatch.trial t JOIN trialwatch.ledger l USING (trial_id) WHERE t.trial_id = 16
      """)
    #expect(row.string(0, 0) == "grace" && row.int64(0, 1) == 7_200_000)
    #expect(row.string(0, 2) == "grace-started" && row.int64(0, 3) == 1 << 62)
    #expect(row.string(0, 4) == "trial_open_shard,trial_open_subject" && row.bool(0, 5) == true)
    let second = #expect(throws: PGError.self) {
      try connection.execute(
        """
        INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, reminders_ms)
        VALUES (17, 1, 'new-1', 'active', 1, 0, 60, '{}')
        """)
    }
    #expect(second?.sqlState == "23505")
    let unknown = #expect(throws: PGError.self) {
      try connection.execute("UPDATE trialwatch.trial SET grace_ms = -1 WHERE trial_id = 16")
    }
    #expect(unknown?.sqlState == "23514")
  }
}
