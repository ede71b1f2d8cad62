import Foundation
import TrialCore
import TrialStore

/// The workload of the store's crash test (`trialwatch-crashtest`): numbered batches, each
/// one write transaction that delivers what earlier batches took, fires every event due
/// (resumes of pauses run out among them), extends one earlier trial, ends another, pauses two
/// (one until a limit runs out, one until a later batch resumes it), and starts new trials
/// (the first id offered for each is already taken, so every start goes through the id retry).
///
/// Batch `k` is a pure function of the state batches `1..<k` left, and runs at virtual time
/// `now(batch: k)`. So the state after batch `K` is the same in any repository that ran
/// batches 1 through `K`, however often the process running them was killed in between:
/// the test replays the batches on an in-memory repository and compares.
public enum StoreCrashWorkload {
  public static let trialsPerBatch = 6
  /// Virtual time between two batches.
  public static let step: TimeInterval = 3_600
  public static let reminders = try! ReminderSchedule([
    .seconds(3 * step), .seconds(step),
  ])
  private static let origin = Date(timeIntervalSinceReferenceDate: 790_000_000)

  public static func now(batch: Int) -> Date {
    origin.addingTimeInterval(Double(batch) * step)
  }

  /// The id of trial `index` of batch `batch` (both from 1 and 0 on).
  public static func trialID(batch: Int, index: Int) -> TrialID {
    TrialID(UInt64(batch) << 8 | UInt64(index))
  }

  /// The batch that created a trial.
  public static func batch(of id: TrialID) -> Int {
    Int(id.rawValue >> 8)
  }

  /// The highest batch whose trials are in the repository; 0 for an empty one.
  public static func lastBatch(in repository: any TrialRepository) throws -> Int {
    try repository.read { txn in
      var last = 0
      try txn.scanTrials(after: nil) { trial in
        last = max(last, batch(of: trial.id))
        return true
      }
      return last
    }
  }

  /// Runs batch `k` in one write transaction, then updates `planner` to match.
  public static func runBatch(_ k: Int, repository: any TrialRepository, planner: inout Planner) throws {
    let now = now(batch: k)
    let due = planner.takeDue(at: now)
    let changes = try repository.write {
      txn -> (
        started: [Trial], extended: [Trial], ended: [TrialID], paused: [Trial], resumed: [Trial],
        ranOut: [(trial: Trial, at: Date)]
      ) in
      // What earlier batches took is delivered now.
      for var entry in try collected({ try txn.scanOutbox($0) }) {
        entry.deliveredAt = now
        try txn.putLedgerEntry(entry)
      }
      // A pause run out resumes its trial, planned again from the resume on.
      let ranOut = try TrialBook.take(in: txn, due, now: now).filter {
        $0.logged.entry.event.kind.isPauseOrResume
      }
      .map { (trial: $0.trial, at: $0.logged.entry.event.due) }
      var paused: [Trial] = []
      if k > 2, let trial = try txn.trial(trialID(batch: k - 2, index: 2)), trial.isActive,
        trial.period.endDate > now
      {
        paused.append(
          try TrialBook.pauseTrial(in: txn, trial.id, maxPause: .seconds(2 * step), now: now).trial)
      }
      if k > 2, let trial = try txn.trial(trialID(batch: k - 2, index: 3)), trial.isActive,
        trial.period.endDate > now
      {
        paused.append(try TrialBook.pauseTrial(in: txn, trial.id, maxPause: nil, now: now).trial)
      }
      var resumedNow: [Trial] = []
      if k > 4, let trial = try txn.trial(trialID(batch: k - 4, index: 3)), trial.state == .paused {
        resumedNow.append(try TrialBook.resumeTrial(in: txn, trial.id, now: now).trial)
      }
      var extended: [Trial] = []
      var ended: [TrialID] = []
      if k > 2, let trial = try txn.trial(trialID(batch: k - 2, index: 0)), trial.isActive {
        let newEnd = trial.period.endDate.addingTimeInterval(2 * step)
        extended.append(try TrialBook.extendTrial(in: txn, trial.id, to: newEnd, now: now).trial)
      }
      if k > 1, let trial = try txn.trial(trialID(batch: k - 1, index: 1)), trial.isActive {
        _ = try TrialBook.endTrial(in: txn, trial.id, outcome: k % 2 == 0 ? .converted : .cancelled, now: now)
        ended.append(trial.id)
      }
      var started: [Trial] = []
      for index in 0..<trialsPerBatch {
        var offered = [trialID(batch: k, index: index)]
        if k > 1 { offered.insert(trialID(batch: k - 1, index: index), at: 0) }
        let end = now.addingTimeInterval(Double(4 + (k + index) % 5) * step + (index % 2 == 0 ? 0 : 1_800))
        let result = try TrialBook.startTrial(
          in: txn, subject: "crash-\(k)-\(index)", endDate: end, reminders: reminders, now: now,
          ids: OfferedIDs(offered))
        started.append(result.trial)
      }
      return (started, extended, ended, paused, resumedNow, ranOut)
    }
    for (trial, at) in changes.ranOut { planner.add(trial, now: at, reason: .alreadyDueAtResume) }
    for trial in changes.paused { planner.add(trial, now: now) }
    for trial in changes.resumed { planner.add(trial, now: now, reason: .alreadyDueAtResume) }
    for trial in changes.started { planner.add(trial, now: now) }
    for trial in changes.extended { planner.add(trial, now: now, reason: .alreadyDueAtExtension) }
    for id in changes.ended { planner.cancel(id) }
  }

  /// The child process: `trialwatch-crashtest <store directory> [batches]`. Opens (or
  /// creates) the store with a small map, so that the map grows while it runs, restores a
  /// planner, then runs batches after the last one found, printing `committed <k>` once batch
  /// `k` is durable. Runs until killed, or for `batches` batches. Returns the exit status.
  public static func runChild(arguments: [String]) -> Int32 {
    guard (1...2).contains(arguments.count), arguments.count == 1 || Int(arguments[1]) != nil else {
      FileHandle.standardError.write(Data("usage: trialwatch-crashtest <store directory> [batches]\n".utf8))
      return 2
    }
    let limit = arguments.count == 2 ? Int(arguments[1])! : Int.max
    do {
      let repository = try LMDBTrialRepository(
        directory: arguments[0], options: .init(initialMapSize: 256 << 10))
      var planner = Planner()
      try repository.restore(into: &planner)
      var k = try lastBatch(in: repository)
      for _ in 0..<limit {
        k += 1
        try runBatch(k, repository: repository, planner: &planner)
        FileHandle.standardOutput.write(Data("committed \(k)\n".utf8))
      }
      return 0
    } catch {
      FileHandle.standardError.write(Data("trialwatch-crashtest: \(error)\n".utf8))
      return 1
    }
  }
}

/// Offers the given ids in order, then the last one again.
final class OfferedIDs: TrialIDGenerator {
  private var ids: [TrialID]
  private var next = 0

  init(_ ids: [TrialID]) {
    self.ids = ids
  }

  func nextID() -> TrialID {
    defer { next = min(next + 1, ids.count - 1) }
    return ids[next]
  }
}
