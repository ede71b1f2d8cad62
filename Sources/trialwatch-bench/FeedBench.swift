import Foundation
import TestSupport
import TrialCore
import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

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
///     consume_probe_start_p50   the start-up of that command alone (bash, which reads
///                               `$EPOCHREALTIME` as it runs it), included in the above
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
  // The events were taken at a fixed instant months ago: a retention that keeps them.
  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: daemonDirectory,
    configuration: "[Events]\nRetention=3650d\n")
  let watcher = try RawVarlinkConnection(path: daemon.socketPath)
  var received = -1
  let elapsed = try measure {
    try watcher.send(
      Array(
        #"{"method":"io.trialwatch.Trials.Watch","parameters":{"after":"0000000000000000"},"more":true}"#.utf8
      )
        + [0])
    while received < watched {
      try watcher.receiveReply()
      received += 1
    }
  }
  report("feed_watch_replay_rate", Double(watched) / elapsed, "events/s", digits: 0)
  try daemon.stop()

  try runConsumeFigures(in: scratch.url.appendingPathComponent("consume"))
}

/// Due time to command start through a real daemon and a real `trialwatchctl consume`: the
/// command is bash, which writes the event's due time and its own start (`$EPOCHREALTIME`,
/// read by bash as it runs the command) to a FIFO the bench reads.
private func runConsumeFigures(in directory: URL) throws {
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  let probes = try ProbeFIFO(path: directory.appendingPathComponent("probe.fifo").path)
  let probe = ["/bin/bash", "-c", #"printf '%s %s\n' "$EVENT_DUE" "$EPOCHREALTIME" > "$TRIALWATCH_PROBE""#]
  let environment = ChildProcess.environment(adding: ["TRIALWATCH_PROBE": probes.path])
  let clock = SystemWallClock()

  // The command's own start-up, for reference.
  var starts = Latencies()
  for _ in 0..<50 {
    var variables = environment
    let launched = clock.now()
    variables["EVENT_DUE"] = String(launched.timeIntervalSince1970)
    let child = try ChildProcess(.path(probe[0]), Array(probe.dropFirst()), environment: variables)
    guard let (_, started) = try probes.reading() else { throw BenchError("the probe sent nothing") }
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
    .product("trialwatchctl"), ["consume", "bench", "--socket", daemon.socketPath, "--"] + probe,
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
    guard let (due, started) = try probes.reading(timeout: 30) else {
      throw BenchError("the consumer's commands stopped coming")
    }
    latencies.record(seconds: started - due)
  }
  latencies.reportFigures(p50: "consume_due_to_command_p50", p99: "consume_due_to_command_p99")
  consumer.signal(SIGTERM)
  _ = consumer.wait()
  try daemon.stop()
}

/// The FIFO the probe command writes one line to per run: `<due> <start>`, the due time in
/// RFC 3339 or seconds, the start in seconds since 1970. Opened read-write, so that it never
/// reads an end while no command has it open.
private final class ProbeFIFO {
  let path: String
  private let fd: Int32
  private var pending: [UInt8] = []

  init(path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw BenchError("mkfifo \(path): errno \(errno)") }
    self.path = path
    fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { throw BenchError("open \(path): errno \(errno)") }
  }

  deinit { close(fd) }

  /// The next line's two times; nil when none came within `timeout` seconds.
  func reading(timeout: TimeInterval = 10) throws -> (Double, Double)? {
    while true {
      if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let text = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        let parts = text.split(separator: " ")
        guard parts.count == 2, let started = Double(parts[1]) else {
          throw BenchError("the probe wrote \"\(text)\"")
        }
        if let seconds = Double(parts[0]) { return (seconds, started) }
        return (try RFC3339.parse(String(parts[0])).timeIntervalSince1970, started)
      }
      var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, Int32(timeout * 1000)) > 0 else { return nil }
      var buffer = [UInt8](repeating: 0, count: 4096)
      let count = read(fd, &buffer, buffer.count)
      guard count > 0 else { throw BenchError("reading \(path): errno \(errno)") }
      pending += buffer[..<count]
    }
  }
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
        _ = try txn.appendEvent(entry, attributes: trial.attributes)
      }
    }
    next = batch.upperBound
  }
}
