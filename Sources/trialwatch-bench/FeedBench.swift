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
///     consume_due_to_command_p50 / _p99
///                               from an event's due time to the start of the command that
///                               `trialwatchctl consume` runs for it (500 expiries, 20 ms apart)
///     consume_probe_start_p50   the start-up of that command alone (`trialwatch-consume-probe`,
///                               which reads the clock first thing), included in the above
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

  try runConsumeFigures(in: scratch.url.appendingPathComponent("consume"))
}

/// Due time to command start through a real daemon and a real `trialwatchctl consume`: the
/// probe command sends its start time back on a datagram socket.
private func runConsumeFigures(in directory: URL) throws {
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  let probes = try UnixDatagramSocket(path: directory.appendingPathComponent("probe.sock").path)
  let probe = BuiltProducts.path("trialwatch-consume-probe")
  let environment = ChildProcess.environment(adding: ["TRIALWATCH_PROBE_SOCKET": probes.path])
  let clock = SystemWallClock()

  // The probe's own start-up, for reference.
  var starts = Latencies()
  for _ in 0..<50 {
    var variables = environment
    let launched = clock.now()
    variables["EVENT_DUE"] = String(launched.timeIntervalSince1970)
    let child = try ChildProcess(.path(probe), environment: variables)
    guard let (_, started) = try probeReading(probes) else { throw BenchError("the probe sent nothing") }
    starts.record(seconds: started - launched.timeIntervalSince1970)
    _ = child.wait()
  }
  starts.reportFigures(p50: "consume_probe_start_p50")

  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: directory, configuration: "")
  let client = try RawVarlinkConnection(path: daemon.socketPath)
  _ = try client.call(
    Array(#"{"method":"io.trialwatch.Trials.CreateConsumer","parameters":{"name":"bench"}}"#.utf8) + [0])
  let consumer = try ChildProcess(
    .product("trialwatchctl"), ["consume", "bench", "--socket", daemon.socketPath, "--", probe],
    environment: environment)
  let count = 500
  let first = clock.now().addingTimeInterval(2)
  var calls: [UInt8] = []
  for index in 0..<count {
    let end = RFC3339.format(first.addingTimeInterval(Double(index) * 0.020))
    calls +=
      Array(
        (#"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"consume-\#(index)","#
          + #""endsAt":"\#(end)","reminders":[]}}"#).utf8) + [0]
  }
  try client.send(calls)
  for _ in 0..<count { try client.receiveReply() }
  var latencies = Latencies()
  for _ in 0..<count {
    guard let (due, started) = try probeReading(probes, timeout: 30) else {
      throw BenchError("the consumer's commands stopped coming")
    }
    latencies.record(seconds: started - due)
  }
  latencies.reportFigures(p50: "consume_due_to_command_p50", p99: "consume_due_to_command_p99")
  consumer.signal(SIGTERM)
  _ = consumer.wait()
  try daemon.stop()
}

/// One datagram of the probe: the due time (RFC 3339, or seconds) and its start, in seconds
/// since 1970.
private func probeReading(_ socket: UnixDatagramSocket, timeout: TimeInterval = 10) throws -> (
  Double, Double
)? {
  guard let text = try socket.receiveText(timeout: timeout) else { return nil }
  let parts = text.split(separator: " ")
  guard parts.count == 2, let started = Double(parts[1]) else { throw BenchError("probe sent \"\(text)\"") }
  if let seconds = Double(parts[0]) { return (seconds, started) }
  return (try RFC3339.parse(String(parts[0])).timeIntervalSince1970, started)
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
