import Foundation
import Glibc
import TestSupport
import TrialCore
import TrialStore

/// The file store's figures, on real files in a temporary directory:
///
///     store_bulk_insert_1m        1,000,000 trials started, 10,000 per transaction
///     store_file_size_1m          the store file afterwards
///     store_restore_1m            open + full scan + planner rebuild (a fresh open)
///     store_rss_after_restore_1m  resident memory once restored (mapped pages released)
///     store_commit_p50 / _p99     one small durable commit (one trial started)
///     store_commit_after_idle_p50 / _p99   the same, each after 10 ms of nothing
///     store_fire_100k             one transaction recording 100,000 due events
///     store_fire_100k_written     what that transaction wrote to the store file
///     store_fire_100k_ledger_1m   the same once the ledger holds as many entries as trials
///     store_fire_100k_labels      store_fire_100k in a store whose trials have four labels each
///                                 (and `_written`)
///     store_*_retention_1m        ended trials removed by their retention (`runRetentionBench`)
///
/// `TRIALWATCH_BENCH_TRIALS` runs it with another trial count (figure names stay the same).
func runStoreBench() throws {
  let count = ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_TRIALS"].flatMap(Int.init) ?? 1_000_000
  let scratch = try TemporaryDirectory("bench-store")
  let directory = scratch.appending("store")
  // A fixed instant: the bench never reads the wall clock.
  let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
  let hour: TimeInterval = 3_600

  // Bulk insert: random 64-bit ids (as in production), ends spread over 30 days.
  do {
    let repository = try LMDBTrialRepository(directory: directory)
    let elapsed = try measure { try insertTrials(count, labels: .none, origin: origin, into: repository) }
    report("store_bulk_insert_1m", elapsed, "s")
    let statistics = try repository.statistics()
    report("store_file_size_1m", Double(statistics.fileSize) / 1_048_576, "MB", digits: 1)
    repository.close()
  }

  // Restore, as the daemon starts: a fresh open, a full scan, a planner rebuilt. The heap
  // the insert left behind is returned to the system first, to measure as a new process.
  trimHeap()
  var planner = Planner(policy: CatchUpPolicy(reminders: .all))
  var restored: LMDBTrialRepository?
  let restoreTime = try measure {
    let repository = try LMDBTrialRepository(directory: directory)
    try repository.restore(into: &planner)
    restored = repository
  }
  let repository = restored!
  report("store_restore_1m", restoreTime, "s")
  report("store_rss_after_restore_1m", Double(residentBytes()) / 1_048_576, "MB", digits: 0)
  precondition(planner.trialCount == count, "restored \(planner.trialCount) of \(count) trials")

  // One small durable commit, 1,000 times back to back; then 300 times, each after 10 ms
  // with nothing to do: what a lone due event's commit costs once the machine has gone idle.
  let ids = RandomTrialIDGenerator()
  func commitLatencies(_ count: Int, pause: TimeInterval, subject: String) throws -> Latencies {
    var commits = Latencies()
    for index in 0..<count {
      if pause > 0 { Thread.sleep(forTimeInterval: pause) }
      commits.record(
        seconds: try measure {
          _ = try repository.startTrial(
            subject: "\(subject)-\(index)", endDate: origin.addingTimeInterval(30 * 24 * hour),
            reminders: .default, now: origin, ids: ids)
        })
    }
    return commits
  }
  try commitLatencies(1_000, pause: 0, subject: "single")
    .reportFigures(p50: "store_commit_p50", p99: "store_commit_p99")
  try commitLatencies(300, pause: 0.01, subject: "after-idle")
    .reportFigures(p50: "store_commit_after_idle_p50", p99: "store_commit_after_idle_p99")

  // A burst: the first 100,000 events due a day later, reminders and expiries, recorded in
  // one transaction (ledger, outbox, expired trials).
  let due = Array(planner.takeDue(at: origin.addingTimeInterval(24 * hour)).prefix(100_000))
  var fired: [LoggedEvent] = []
  let written = bytesWritten()
  let fireTime = try measure {
    fired = try repository.commit(due, now: origin.addingTimeInterval(24 * hour))
  }
  precondition(fired.count == due.count, "recorded \(fired.count) of \(due.count) events")
  report("store_fire_100k", fireTime, "s")
  report("store_fire_100k_written", Double(bytesWritten() - written) / 1_048_576, "MB", digits: 1)
  try repository.markDelivered(fired.map(\.id), at: origin.addingTimeInterval(24 * hour))

  // The same burst in a store with history: the events of the following days are taken a
  // day at a time (and delivered) until the ledger holds as many entries as there are
  // trials; then the next day's first 100,000 events fire in one transaction.
  var day = 2.0
  while try repository.statistics().ledgerEntries < count, day < 29 {
    let now = origin.addingTimeInterval(24 * hour * day)
    let taken = try repository.commit(planner.takeDue(at: now), now: now)
    try repository.markDelivered(taken.map(\.id), at: now)
    day += 1
  }
  let burstTime = origin.addingTimeInterval(24 * hour * day)
  let burst = Array(planner.takeDue(at: burstTime).prefix(100_000))
  let writtenBefore = bytesWritten()
  let historyTime = try measure { fired = try repository.commit(burst, now: burstTime) }
  precondition(fired.count == burst.count, "recorded \(fired.count) of \(burst.count) events")
  report("store_fire_100k_ledger_1m", historyTime, "s")
  report(
    "store_fire_100k_ledger_1m_written", Double(bytesWritten() - writtenBefore) / 1_048_576, "MB", digits: 1)
  repository.close()
  try fireLabelled(count: count, origin: origin, directory: scratch.appending("labelled"))
  try runRetentionBench(count: count, origin: origin, directory: scratch.appending("retention"))
}

/// Starts `count` trials with `labels`, 10,000 a transaction: random 64-bit ids (as in
/// production), ends spread over 30 days from `origin`.
func insertTrials(
  _ count: Int, labels: TrialLabels, origin: Date, into repository: LMDBTrialRepository
)
  throws
{
  let ids = RandomTrialIDGenerator()
  var next = 0
  while next < count {
    let batch = next..<min(next + 10_000, count)
    try repository.write { txn in
      for index in batch {
        _ = try TrialBook.startTrial(
          in: txn, subject: "subject-\(index)", labels: labels,
          endDate: origin.addingTimeInterval(3_600 * Double(1 + index % 720)), reminders: .default,
          now: origin,
          ids: ids)
      }
    }
    next = batch.upperBound
  }
}

/// `store_fire_100k` again in a store of `count` trials with four labels each: each logged
/// event carries them.
private func fireLabelled(count: Int, origin: Date, directory: String) throws {
  let hour: TimeInterval = 3_600
  let repository = try LMDBTrialRepository(directory: directory)
  defer { repository.close() }
  let labels = try TrialLabels(benchLabels)
  try insertTrials(count, labels: labels, origin: origin, into: repository)
  var planner = Planner(policy: CatchUpPolicy(reminders: .all))
  try repository.restore(into: &planner)
  let due = Array(planner.takeDue(at: origin.addingTimeInterval(24 * hour)).prefix(100_000))
  var fired: [LoggedEvent] = []
  let fireTime = try measure { fired = try repository.commit(due, now: origin.addingTimeInterval(24 * hour)) }
  precondition(fired.count == due.count && fired.allSatisfy { $0.labels == labels }, "labelled burst")
  report("store_fire_100k_labels", fireTime, "s")
}

/// Bytes this process has handed to write system calls so far (`wchar` of /proc/self/io).
private func bytesWritten() -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
  for line in text.split(separator: "\n") where line.hasPrefix("wchar:") {
    return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
  }
  return 0
}

/// Returns free heap memory to the system (glibc's malloc_trim, looked up at run time as
/// the Glibc module does not export it).
private func trimHeap() {
  typealias Trim = @convention(c) (Int) -> Int32
  guard let symbol = dlsym(nil, "malloc_trim") else { return }
  _ = unsafeBitCast(symbol, to: Trim.self)(0)
}
