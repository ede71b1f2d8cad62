import Foundation
import TestSupport
import TrialCore
import TrialStore

/// The event log's figures, on real files:
///
///     feed_replay_rate          events a second read back from the log of the file store,
///                               1,000,000 logged, 10,000 a read transaction (what Watch with a
///                               cursor and consumers read from)
///     feed_watch_replay_rate    events a second a client receives from Watch(after:) over the
///                               socket, from a daemon of its own with 200,000 logged
///
/// `TRIALWATCH_BENCH_FEED_EVENTS` changes the 1,000,000 (the figure names stay the same).
func runFeedBench() throws {
  let count =
    ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_FEED_EVENTS"].flatMap(Int.init) ?? 1_000_000
  let scratch = try TemporaryDirectory("bench-feed")
  let directory = scratch.url.appendingPathComponent("store").path
  do {
    let repository = try LMDBTrialRepository(directory: directory)
    try logEvents(count, in: repository)
    var read = 0
    let elapsed = try measure {
      var after = EventCursor.origin
      while true {
        let events = try repository.read { try EventFeed.events(after: after, limit: 10_000, in: $0) }
        guard let last = events.last else { break }
        read += events.count
        after = last.cursor
      }
    }
    precondition(read == count, "replayed \(read) of \(count) events")
    report("feed_replay_rate", Double(read) / elapsed, "events/s", digits: 0)
    repository.close()
  }

  // Over the socket, as a client sees it.
  let watched = min(count, 200_000)
  let daemonDirectory = scratch.url.appendingPathComponent("daemon")
  try FileManager.default.createDirectory(at: daemonDirectory, withIntermediateDirectories: true)
  do {
    let repository = try LMDBTrialRepository(
      directory: DaemonProcess.stateDirectory(in: daemonDirectory).path)
    try logEvents(watched, in: repository)
    repository.close()
  }
  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: daemonDirectory, configuration: "")
  let watcher = try RawVarlinkConnection(path: daemon.socketPath)
  var received = -1
  let elapsed = try measure {
    try watcher.send(
      Array(
        #"{"method":"io.trialwatch.Trials.Watch","parameters":{"after":"0000000000000000"},"more":true}"#.utf8
      )
        + [0])
    while received < watched {
      _ = try watcher.receive()
      received += 1
    }
  }
  report("feed_watch_replay_rate", Double(watched) / elapsed, "events/s", digits: 0)
  try daemon.stop()
}

/// Logs `count` fired expiries of as many expired trials, as firing would leave them
/// (delivered), in transactions of 10,000.
private func logEvents(_ count: Int, in repository: LMDBTrialRepository) throws {
  // A fixed instant: the bench never reads the wall clock for its data.
  let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
  var next = 0
  while next < count {
    let batch = next..<min(next + 10_000, count)
    try repository.write { txn in
      for index in batch {
        let end = origin.addingTimeInterval(Double(index) / 1_000)
        var trial = Trial(
          id: TrialID(UInt64(index + 1)), subject: "feed-\(index)",
          period: TrialPeriod(startDate: origin.addingTimeInterval(-86_400), endDate: end),
          reminders: ReminderSchedule.none)
        trial.state = .expired
        trial.endedAt = end
        try txn.putTrial(trial)
        let expiry = trial.events[0]
        let entry = LedgerEntry(
          DueEvent(event: expiry, takenAt: end, disposition: .fire, isLate: false), deliveredAt: end)
        try txn.putLedgerEntry(entry)
        _ = try txn.appendEvent(entry, subject: trial.subject)
      }
    }
    next = batch.upperBound
  }
}
