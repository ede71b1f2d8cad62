import Foundation
import TrialCore
import TrialStore

/// `[Trials] Retention=` on the file store: `count` trials started, fired to their end (their
/// reminders and expiries in the ledger), the event log pruned as its own retention would, then
/// every trial removed by the trials' retention, a step of 1,000 trials at a time, as the daemon
/// does it.
///
///     store_used_before_retention_1m   the store's used pages, in MB: the size of a compacted
///                                      copy, with 1,000,000 ended trials and their ledger
///     store_retention_1m               removing them all, in steps of 1,000 trials
///     store_disk_after_retention_1m    the used pages left, in % of those before
func runRetentionBench(count: Int, origin: Date, directory: String) throws {
  let repository = try LMDBTrialRepository(directory: directory)
  defer { repository.close() }
  try insertTrials(count, labels: .none, origin: origin, into: repository)
  var planner = Planner(policy: CatchUpPolicy(reminders: .all))
  try repository.restore(into: &planner)
  let end = origin.addingTimeInterval(31 * 86_400)
  let due = planner.takeDue(at: end)
  for start in stride(from: 0, to: due.count, by: 100_000) {
    let taken = try repository.commit(Array(due[start..<min(start + 100_000, due.count)]), now: end)
    try repository.markDelivered(taken.map(\.id), at: end)
  }
  while try repository.write({
    try EventFeed.prune(now: end, retention: EventRetention(age: .zero, cap: nil), limit: 100_000, in: $0)
  }).more {}
  let active = try repository.statistics().activeTrials
  precondition(active == 0, "\(active) trials still active")

  let scratch = directory + ".copy"
  let before = try repository.backup(to: scratch).bytes
  report("store_used_before_retention_1m", Double(before) / 1_048_576, "MB", digits: 1)
  let later = end.addingTimeInterval(2 * 86_400)
  var removed = 0
  let elapsed = try measure {
    var after: TrialID?
    repeat {
      let step = try repository.write {
        try TrialRetention.step(now: later, retention: .days(1), after: after, limit: 1_000, in: $0)
      }
      removed += step.removed
      after = step.next
    } while after != nil
  }
  precondition(removed == count, "removed \(removed) of \(count) trials")
  report("store_retention_1m", elapsed, "s")
  let left = try repository.backup(to: scratch).bytes
  unlink(scratch)
  report("store_disk_after_retention_1m", 100 * Double(left) / Double(before), "%", digits: 1)
}
