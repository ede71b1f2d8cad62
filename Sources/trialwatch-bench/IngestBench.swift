import Foundation
import TestSupport
import TrialCore
import TrialStore

/// One client's durable starts, one call at a time, against the store's own durable commit,
/// measured in turns in one run: rounds of starts through the daemon alternate with rounds of
/// commits to a store beside its own, on the same file system. A virtual disk's `fdatasync`
/// drifts from minute to minute on a shared machine, more than the daemon's path costs; taken in
/// turns, both see the same disk.
///
///     ingest_start_p50          a StartTrial sent, committed and answered: one client, one
///                               call at a time (the first row of make bench-peers, `ingest_10k`)
///     ingest_commit_p50         one small durable commit of the store (as `store_commit_p50`)
///     ingest_start_per_commit   the first over the second: the daemon's path (the socket, the
///                               hand-overs between threads, the answer) as a share of a commit
func runIngestBench() throws {
  let scratch = try TemporaryDirectory("bench-ingest")
  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: scratch.url, configuration: "[Daemon]\n")
  let connection = try RawVarlinkConnection(path: daemon.socketPath)
  let repository = try LMDBTrialRepository(directory: scratch.appending("store"))
  defer { repository.close() }
  // A fixed instant: the bench never reads the wall clock.
  let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
  let ids = RandomTrialIDGenerator()

  let rounds = 10
  let perRound = 500
  var starts = Latencies()
  var commits = Latencies()
  for round in 0..<rounds {
    // Each call encoded beforehand: the client's own work is not the daemon's.
    let calls = (0..<perRound).map { TrialsCalls.startTrial(subject: "ingest-\(round)-\($0)") }
    for call in calls {
      starts.record(seconds: try measure { _ = try connection.call(call) })
    }
    for index in 0..<perRound {
      commits.record(
        seconds: try measure {
          _ = try repository.startTrial(
            subject: "commit-\(round)-\(index)", endDate: origin.addingTimeInterval(30 * 86_400),
            reminders: .default, now: origin, ids: ids)
        })
    }
  }
  starts.reportFigures(p50: "ingest_start_p50")
  commits.reportFigures(p50: "ingest_commit_p50")
  report("ingest_start_per_commit", starts.p50 / commits.p50, "x", digits: 2)
  try daemon.stop()
}
