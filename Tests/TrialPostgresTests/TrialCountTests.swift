import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The trials by state that the writes keep (`trialwatch.trial_count`): always those of a
/// count over the trials, whoever writes them and however, and no writer waits on another's.
@Suite struct TrialCountTests {
  static let origin = FleetTests.origin
  static let map = ShardMap(count: FleetTests.shards)

  /// The trials by state, counted over the table.
  static func counted(_ conninfo: String) throws -> [TrialState: Int] {
    let result = try PGConnection(conninfo: conninfo).execute(
      "SELECT state, count(*) FROM trialwatch.trial GROUP BY state")
    var counts: [TrialState: Int] = [:]
    for row in 0..<result.rows {
      guard let state = result.string(row, 0).flatMap(TrialState.init), let count = result.int(row, 1) else {
        Issue.record("an unreadable count")
        continue
      }
      counts[state] = count
    }
    return counts
  }

  /// Fires the expiries due by `now` of the active trials among `trials` whose shard `node`
  /// owns; returns how many.
  static func expire(_ trials: [Trial], on node: FleetTests.Node, now: Date) throws -> Int {
    let current = try node.repository.read { txn in try trials.compactMap { try txn.trial($0.id) } }
    let due = current.filter {
      $0.isActive && $0.period.endDate <= now && node.owned.contains(map.shard(of: $0.id))
    }
    .compactMap { trial in trial.events.first { $0.kind == .expiry } }
    .map { DueEvent(event: $0, takenAt: now, disposition: .fire, isLate: false) }
    return try node.repository.commit(due, now: now).count
  }

  @Test func counts_AfterStartsExtendsEndsAndExpiriesOnTwoNodes_AreThoseOfTheTable() throws {
    let conninfo = try FleetTests.database()
    let a = try FleetTests.Node("a", on: conninfo)
    let b = try FleetTests.Node("b", on: conninfo)
    try a.membership.round()
    try b.membership.round()
    #expect(a.owned.count == 4 && b.owned.count == 4)
    let nodes = [a, b]
    let ids = SequenceTrialIDGenerator([], fallbackStart: 0x5000)
    var trials: [Trial] = []
    for i in 0..<40 {
      trials.append(
        try nodes[i % 2].repository.startTrial(
          subject: "subject-\(i)", endDate: Self.origin.addingTimeInterval(Double(i + 1) * 60),
          reminders: .none,
          now: Self.origin, ids: ids
        ).trial)
    }
    #expect(try a.repository.counts() == [.active: 40])
    // Each node extends and ends trials the other started.
    for i in stride(from: 0, to: 40, by: 5) {
      _ = try nodes[(i + 1) % 2].repository.extendTrial(
        trials[i].id, to: Self.origin.addingTimeInterval(7_200), now: Self.origin)
    }
    for (first, outcome) in [(1, TrialOutcome.converted), (2, .cancelled)] {
      for i in stride(from: first, to: 40, by: 5) {
        _ = try nodes[(i + 1) % 2].repository.endTrial(trials[i].id, outcome: outcome, now: Self.origin)
      }
    }
    // Each shard's owner fires the expiries of the trials that ended in the first 30 minutes.
    let now = Self.origin.addingTimeInterval(30 * 60)
    let expired = try Self.expire(trials, on: a, now: now) + Self.expire(trials, on: b, now: now)
    #expect(expired == 30 - 6 - 6 - 6)
    let expected: [TrialState: Int] = [.active: 12, .expired: 12, .converted: 8, .cancelled: 8]
    #expect(try Self.counted(conninfo) == expected)
    #expect(try a.repository.counts() == expected)
    #expect(try b.repository.counts() == expected)
  }

  @Test func writers_WhileAnotherHoldsItsCountsUncommitted_NeverWaitOnIt() throws {
    let conninfo = try FleetTests.database()
    let a = try FleetTests.Node("a", on: conninfo)
    // A second writer under a's name (trialwatchd --import beside the running node), and b.
    let importer = try PostgresTrialRepository(conninfo: conninfo, node: "a", shards: Self.map)
    let b = try PostgresTrialRepository(conninfo: conninfo, node: "b", shards: Self.map)
    let end = Self.origin.addingTimeInterval(3_600)
    let ids = SequenceTrialIDGenerator([], fallbackStart: 0x6000)
    let clock = ContinuousClock()
    var waited: [Duration] = []
    try a.repository.write { txn in
      _ = try TrialBook.startTrial(
        in: txn, subject: "held", endDate: end, reminders: .none, now: Self.origin, ids: ids)
      // A scan sends the write: a's count rows are locked until this transaction ends.
      try txn.scanTrials(after: nil) { _ in false }
      for (writer, subject) in [(importer, "imported"), (b, "elsewhere")] {
        let started = clock.now
        _ = try writer.startTrial(
          subject: subject, endDate: end, reminders: .none, now: Self.origin, ids: ids)
        _ = try writer.endTrial(
          try #require(try writer.read { try $0.activeTrialID(subject: subject) }), outcome: .cancelled,
          now: Self.origin)
        waited.append(clock.now - started)
      }
    }
    // A wait would have lasted until the lock timeout (5 s), then failed.
    #expect(waited.allSatisfy { $0 < .seconds(2) }, "\(waited)")
    let expected: [TrialState: Int] = [.active: 1, .cancelled: 2]
    #expect(try Self.counted(conninfo) == expected)
    #expect(try a.repository.counts() == expected)
    let slots = try PGConnection(conninfo: conninfo).execute(
      "SELECT DISTINCT writer, slot FROM trialwatch.trial_count ORDER BY writer, slot")
    #expect(
      (0..<slots.rows).map { "\(slots.string($0, 0) ?? "") \(slots.int($0, 1) ?? -1)" } == [
        "a 0", "a 1", "b 0",
      ])
  }

  @Test func counts_AfterABulkWriteAndStatementsOfAnySession_AreThoseOfTheTable() throws {
    let conninfo = try FleetTests.database()
    let a = try FleetTests.Node("a", on: conninfo)
    let ids = SequenceTrialIDGenerator([], fallbackStart: 0x7000)
    // 500 trials in one transaction: one statement.
    try a.repository.write { txn in
      for i in 0..<500 {
        _ = try TrialBook.startTrial(
          in: txn, subject: "batch-\(i)", endDate: Self.origin.addingTimeInterval(60), reminders: .none,
          now: Self.origin, ids: ids)
      }
    }
    #expect(try a.repository.counts() == [.active: 500])
    // Statements of a session that names no node: a bulk insert, a change of state, a delete
    // (retention), an upsert like the store's that inserts some rows and updates others (ids
    // 601 to 899 of the deleted rows stay deleted: 75), and a truncation.
    let session = try PGConnection(conninfo: conninfo)
    try session.executeScript(
      """
      INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, reminders_ms)
      SELECT g, g % 8, 'bulk-' || g, (ARRAY['active', 'expired', 'converted', 'cancelled'])[1 + g % 4], 1, 0, 60,
        '{}'
      FROM generate_series(1, 1000) g;
      UPDATE trialwatch.trial SET state = 'expired' WHERE state = 'active' AND trial_id < 400;
      DELETE FROM trialwatch.trial WHERE state = 'converted' AND trial_id > 600;
      INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, reminders_ms)
      SELECT g, g % 8, 'upsert-' || g, 'cancelled', 1, 0, 60, '{}' FROM generate_series(900, 1100) g
      ON CONFLICT (trial_id) DO UPDATE SET state = excluded.state;
      """)
    let counted = try Self.counted(conninfo)
    let total: Int = counted.values.reduce(0, +)
    #expect(total == 1_525)
    #expect(try a.repository.counts() == counted)
    try session.execute("TRUNCATE trialwatch.trial")
    #expect(try a.repository.counts() == [:])
    _ = try a.repository.startTrial(
      subject: "after", endDate: Self.origin.addingTimeInterval(60), reminders: .none, now: Self.origin,
      ids: ids)
    #expect(try a.repository.counts() == [.active: 1])
  }
}
