import Foundation
import Testing
import TrialCore
import TrialDaemonTesting
import TrialPostgres
import TrialPostgresTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A repository whose first write runs `race` after its body and before its commit: another
/// node committing in between, after the body read what it needed.
private final class RacedRepository: TrialRepository {
  let inner: any TrialRepository
  private var race: (() throws -> Void)?
  private(set) var bodyRuns = 0

  init(_ inner: any TrialRepository, race: @escaping () throws -> Void) {
    self.inner = inner
    self.race = race
  }

  func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R { try inner.read(body) }

  func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try inner.write { txn in
      bodyRuns += 1
      let result = try body(txn)
      if let race {
        self.race = nil
        try race()
      }
      return result
    }
  }

  func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try inner.restore(into: &planner, progressEvery: progressEvery, progress: progress)
  }
}

/// Two nodes starting one subject at the same instant: the node that commits second fails
/// that one command, not the others committed with it.
@Suite struct SubjectRaceTests {
  @Test func startInAGroupCommit_OfASubjectAnotherNodeStartsMeanwhile_FailsAloneTheOthersCommit() throws {
    let store = try PostgresTestStore(node: "node-a")
    let other = try PostgresTrialRepository(
      conninfo: store.conninfo, node: "node-b", shards: ShardMap(count: 8))
    var theirs: Trial?
    let repository = RacedRepository(store.repository) {
      theirs = try other.startTrial(
        subject: "subject-17", endDate: epoch.addingTimeInterval(9 * day), reminders: .none, now: epoch,
        ids: SequenceTrialIDGenerator([0xB17])
      ).trial
    }
    let scheduler = TestScheduler(now: epoch)
    // The fifty starts wait in the lane, as behind a commit in progress: one transaction.
    let lane = ManualCommitLane(repository: repository, monotonicNow: { scheduler.monotonicNow })
    let engine = makeEngine(repository: repository, scheduler: scheduler, commits: lane)
    _ = try engine.start()
    var results: [Int: Result<CommandResult, any Error>] = [:]
    for i in 0..<50 {
      engine.submit(try .start(subject: "subject-\(i)", end: .after(.days(5)))) {
        results[i] = $0
      }
    }
    lane.commitWaiting()
    #expect(repository.bodyRuns == 2)
    let existing = try #require(theirs).id
    #expect(results.count == 50)
    let failures = results.filter { (try? $0.value.get()) == nil }
    #expect(failures.keys.sorted() == [17])
    #expect(throws: TrialError(.subjectAlreadyActive(subject: "subject-17", existing: existing))) {
      try results[17]?.get()
    }
    #expect(results.values.compactMap { try? $0.get().trial.subject }.count == 49)
    let active = try store.repository.read { txn in
      try (0..<50).map { try txn.activeTrialID(subject: "subject-\($0)") }
    }
    #expect(active.allSatisfy { $0 != nil } && active[17] == existing)
    let held = try PGConnection(conninfo: store.conninfo).execute(
      "SELECT count(*) FROM trialwatch.trial WHERE subject = 'subject-17'")
    #expect(held.int(0, 0) == 1)
    #expect(try store.repository.counts() == [.active: 50])
    #expect(engine.counts[.active] == 49)
    engine.stop()
  }
}
