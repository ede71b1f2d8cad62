import Foundation
import TestSupport
import Testing
import TrialCore

@testable import TrialPostgres

/// The schema of cancels at the end: upgraded in place from version 9, its trials read
/// without a mark, then marked and unmarked; a mark as people query it.
@Suite struct PostgresCancelSchemaTests {
  @Test func schemaBeforeCancels_IsUpgradedInPlace_AndItsTrialsTakeTheMark() throws {
    let (conninfo, connection) = try PostgresSchemaTests.upgraded(from: 9)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.state == .active && old.cancelMark == nil && old.cancelsAt == nil)
    let asked = Date(timeIntervalSinceReferenceDate: 60)
    let marked = try repository.write { txn in
      try TrialBook.cancelAtEnd(in: txn, TrialID(1), remindAfterCancel: false, now: asked)
    }
    #expect(marked.cancelMark == TrialCancelMark(askedAt: asked))
    #expect(try repository.trial(TrialID(1)) == marked)
    // The mark as people query it; the engine's take of its events is in CancelContractTests.
    let row = try connection.execute(
      "SELECT state, cancel_asked_at = trialwatch.time(60), cancel_reminds FROM trialwatch.trial WHERE trial_id = 1"
    )
    #expect(row.string(0, 0) == "active" && row.bool(0, 1) == true && row.bool(0, 2) == false)
    let unmarked = try repository.write { try TrialBook.uncancel(in: $0, TrialID(1)) }
    #expect(unmarked.cancelMark == nil)
    #expect(try repository.trial(TrialID(1)) == unmarked)
    // A trial not marked has null columns.
    let other = try connection.execute(
      "SELECT cancel_s IS NULL, cancel_reminds IS NULL FROM trialwatch.trial WHERE trial_id = 2")
    #expect(other.bool(0, 0) == true && other.bool(0, 1) == true)
  }
}
