import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchctl consume against the real trialwatchd: a consumer killed with SIGKILL again
/// and again while it works through a stream of events, and the daemon killed meanwhile.
/// Every event is handled at least once, each acknowledged once, the position never moves
/// back, nothing is lost.
///
/// `TRIALWATCH_CONSUME_EVENTS` (default 10,000) and `TRIALWATCH_CONSUME_KILLS` (default 100)
/// scale it.
@Suite struct ConsumerEndToEndTests {
  static let environment = ProcessInfo.processInfo.environment
  static let events = environment["TRIALWATCH_CONSUME_EVENTS"].flatMap { Int($0) } ?? 10_000
  static let kills = environment["TRIALWATCH_CONSUME_KILLS"].flatMap { Int($0) } ?? 100

  /// Starts trials of 1 s with a reminder at half a second: two events each, due at once.
  /// Calls are sent in batches before their replies are read.
  static func startTrials(_ count: Int, socket: String) throws {
    let client = try VarlinkClient(path: socket, timeout: 60)
    let reminders = try ReminderSchedule([.milliseconds(500)])
    var started = 0
    while started < count {
      let batch = min(100, count - started)
      for index in started..<(started + batch) {
        let parameters = StartTrialParameters(
          subject: "subject-\(index)", duration: .seconds(1), reminders: reminders)
        try client.send(OutgoingCall(method: Trials.startTrial.qualifiedName, parameters: parameters))
      }
      for _ in 0..<batch { _ = try client.decode(try client.receive(), as: TrialReply.self) }
      started += batch
    }
  }

  /// The positions a consume printed with --json, one per acknowledgement.
  static func acknowledged(_ line: String) throws -> EventCursor {
    try decode(ConsumerReply.self, line).consumer.acknowledged
  }

  /// No line per event on the daemon's standard error, which the test does not read while
  /// the daemon runs.
  static let config = "[Daemon]\nLogLevel=warning\n"

  @Test func consumerKilledAgainAndAgain_AndTheDaemonKilled_HandlesEveryEventAndAcknowledgesEachOnce() throws
  {
    var daemon = try DaemonProcess(config: Self.config)
    // A status per delivery: read them as they come, so that the daemon never waits to send.
    daemon.notify.readInBackground()
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let socket = daemon.socketPath
    let scratch = try TemporaryDirectory("consume-e2e")
    let handled = scratch.appending("handled")
    let created = try Ctl.run(["consumer", "create", "e2e", "--socket", socket])
    #expect(created.status == 0, "\(created.errors)")
    try Self.startTrials(Self.events / 2, socket: socket)
    let total = EventCursor(UInt64(Self.events / 2 * 2))

    let arguments = [
      "consume", "e2e", "--json", "--retry-initial", "20ms", "--retry-max", "200ms", "--socket", socket, "--",
      "/bin/sh", "-c", "printf '%s %s\\n' \"$EVENT_ID\" \"$EVENT_CURSOR\" >> '\(handled)'",
    ]
    // A bound on each wait, not on the whole run (a slow machine is no failure): a minute
    // without an acknowledgement means consume is stuck, and the reads end and the test fails.
    var stalled = false
    var random = SeededGenerator(seed: 962_261)
    var positions: [EventCursor] = []
    var lives = 0
    var daemonKilled = false
    var finished = false
    while !finished {
      lives += 1
      let consume = try Ctl.start(arguments, environment: [:])
      let last = lives > Self.kills
      // A random number of acknowledgements (half the events in all, on average), then SIGKILL,
      // whatever consume is doing; the last one runs until every event is acknowledged.
      let quota =
        last ? Int.max : Int.random(in: 1...max(1, Self.events / max(Self.kills, 1)), using: &random)
      var read = 0
      while read < quota, positions.last != total {
        guard let line = consume.readLine(until: ContinuousClock.now.advanced(by: .seconds(60))).line else {
          stalled = true
          break
        }
        positions.append(try Self.acknowledged(line))
        read += 1
        if lives == Self.kills / 2 && read == quota / 2 + 1 {
          // The daemon dies under the running consume, which reconnects to the new one.
          daemonKilled = true
          daemon.signal(SIGKILL)
          #expect(daemon.waitForExit() == 128 + SIGKILL)
          daemon = try DaemonProcess(config: Self.config, directory: daemon.directory)
          daemon.notify.readInBackground()
          try daemon.start()
          #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
        }
      }
      finished = positions.last == total || stalled
      if last || finished {
        consume.signal(SIGTERM)
        #expect(consume.wait(timeout: 30) == .exited(0), "\(consume.readRest(.errors))")
        finished = true
      } else {
        consume.kill()
        #expect(consume.wait(timeout: 30) == .signalled(SIGKILL))
      }
    }
    #expect(lives > Self.kills, "killed \(lives - 1) times")
    #expect(daemonKilled || Self.kills < 2)

    // The position never moved back, and no event was acknowledged twice.
    #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 })
    #expect(positions.last == total)
    let client = try VarlinkClient(path: socket, timeout: 60)
    let log = try client.call(Trials.getEventLog, NoParameters()).log
    #expect(log.last == total, "every trial's two events were logged")
    let consumer = try client.call(Trials.getConsumer, ConsumerNameParameters(name: "e2e")).consumer
    #expect(consumer.acknowledged == total)
    #expect(consumer.lost == 0)

    // Every event was handled at least once: each cursor with one event id, each id once.
    var ids: [UInt64: String] = [:]
    var runs = 0
    for line in try String(contentsOfFile: handled, encoding: .utf8).split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count == 2, let cursor = EventCursor(fields[1]) else {
        Issue.record("a line that is not an event id and a cursor: \(line)")
        continue
      }
      runs += 1
      #expect(ids[cursor.sequence, default: String(fields[0])] == String(fields[0]), "one id per cursor")
      ids[cursor.sequence] = String(fields[0])
    }
    #expect(ids.count == Int(total.sequence))
    #expect(Set(ids.keys) == Set(1...total.sequence))
    #expect(Set(ids.values).count == ids.count, "one cursor per id")
    #expect(runs >= ids.count)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }
}
