import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// watch --after, event-log, consumers, consumer and consume of the real binary against a
/// control server over a real engine in virtual time.
@Suite struct ConsumerCommandLineTests {
  /// A fixture whose log holds `count` expiries (cursors 1 to count), of trials a, b, c...
  func fixture(events count: Int) throws -> ControlFixture {
    let fixture = try ctlFixture()
    let client = try fixture.client()
    for index in 0..<count {
      let subject = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
      _ = try client.startTrial(
        StartTrialParameters(
          subject: subject, duration: .seconds((1 + Double(index) / 100) * 86_400),
          reminders: ReminderSchedule.none))
    }
    fixture.advance(by: 86_400 * 1.5)
    #expect(fixture.fireDue().count == count)
    return fixture
  }

  @Test func eventLogAndConsumers_OfTheDaemon_AreShownAndManaged() throws {
    let fixture = try fixture(events: 2)
    let socket = ["--socket", fixture.socketPath]
    let log = try Ctl.run(["event-log"] + socket)
    #expect(log.status == 0, "\(log.errors)")
    #expect(log.lines.first == "Event log: 2 events kept, newest 0000000000000002")
    #expect(log.lines.contains("  Oldest kept    0000000000000001"))
    #expect(
      try decode(GetEventLogReply.self, try Ctl.run(["event-log", "--json"] + socket).output).log.events == 2)
    #expect(try Ctl.run(["consumers"] + socket).lines == ["No consumers."])

    let created = try Ctl.run(["consumer", "create", "mailer", "--from-oldest"] + socket)
    #expect(created.status == 0, "\(created.errors)")
    #expect(created.lines.first == "mailer: 2 events behind")
    #expect(created.lines.contains("  Position           0000000000000000"))
    let again = try Ctl.run(["consumer", "create", "mailer"] + socket)
    #expect(again.status == 1)
    #expect(again.errors == "trialwatchctl: a consumer named \"mailer\" already exists\n")
    #expect(try Ctl.run(["consumer", "create", "hook", "--after", "0000000000000001"] + socket).status == 0)
    let newest = try Ctl.run(["consumer", "create", "late"] + socket)
    #expect(newest.lines.first == "late: up to date")

    let list = try Ctl.run(["consumers"] + socket)
    #expect(list.lines.count == 4, "\(list.output)")
    #expect(list.lines.first?.hasPrefix("NAME    POSITION          LAG  LOST  LAST ACKNOWLEDGED") == true)
    #expect(list.lines[1] == "hook    0000000000000001  1    0     never")
    #expect(list.lines[3] == "mailer  0000000000000000  2    0     never")

    let acknowledged = try Ctl.run(["consumer", "ack", "mailer", "0000000000000001"] + socket)
    #expect(acknowledged.status == 0, "\(acknowledged.errors)")
    #expect(acknowledged.lines.first == "mailer: 1 event behind")
    let shown = try decode(
      ConsumerReply.self, try Ctl.run(["consumer", "show", "mailer", "--json"] + socket).output)
    #expect(shown.consumer.acknowledged == EventCursor(1))
    #expect(shown.consumer.acknowledgedAt != nil)
    let beyond = try Ctl.run(["consumer", "ack", "mailer", "00000000000000ff"] + socket)
    #expect(beyond.status == 3, "\(beyond.errors)")
    #expect(beyond.errors.contains("cursor 00000000000000ff lies beyond the newest event logged"))

    let missing = try Ctl.run(["consumer", "show", "nobody"] + socket)
    #expect(missing.status == 3)
    #expect(missing.errors == "trialwatchctl: no consumer named \"nobody\"\n")
    let removed = try Ctl.run(["consumer", "remove", "late"] + socket)
    #expect(removed.lines == ["Removed consumer late."])
    #expect(try Ctl.run(["consumer", "remove", "late"] + socket).status == 3)
  }

  @Test func watchAfter_ACursor_ReplaysTheLogThenGoesOnLive() throws {
    let fixture = try fixture(events: 3)
    let watch = try Ctl.start(
      ["watch", "--after", "0000000000000001", "--socket", fixture.socketPath], environment: [:])
    // SIGKILL: the child may inherit a mask that blocks SIGTERM from the test's thread.
    defer { watch.kill() }
    let deadline = ContinuousClock.now.advanced(by: .seconds(30))
    let replayed = [watch.readLine(until: deadline).line, watch.readLine(until: deadline).line]
    #expect(
      replayed[0]?.hasPrefix("0000000000000002  ") == true && replayed[0]?.contains("  b  expiry") == true)
    #expect(
      replayed[1]?.hasPrefix("0000000000000003  ") == true && replayed[1]?.contains("  c  expiry") == true)
    _ = try fixture.client().startTrial(
      StartTrialParameters(subject: "live", duration: .days(1), reminders: ReminderSchedule.none))
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 1)
    let live = watch.readLine(until: deadline).line
    #expect(
      live?.hasPrefix("0000000000000004  ") == true && live?.contains("  live  expiry") == true,
      "\(live ?? "")")

    let beyond = try Ctl.run(["watch", "--after", "0000000000000009", "--socket", fixture.socketPath])
    #expect(beyond.status == 3)
    #expect(
      beyond.errors.contains(
        "cursor 0000000000000009 lies beyond the newest event logged (0000000000000004)"), "\(beyond.errors)")
  }

  @Test func consume_OfTheDaemonsEvents_RunsTheCommandPerEventAndAcknowledgesEach() throws {
    let fixture = try fixture(events: 3)
    let scratch = try TemporaryDirectory("consume")
    let file = scratch.appending("handled")
    // The second event fails once: it runs again before the third runs.
    let script = """
      echo "$EVENT_CURSOR $EVENT_ID $EVENT_KIND $TRIAL_SUBJECT $EVENT_ATTEMPT" >> '\(file)'
      [ "$TRIAL_SUBJECT" != b ] || [ "$EVENT_ATTEMPT" -gt 1 ]
      """
    let missing = try Ctl.run([
      "consume", "mailer", "--socket", fixture.socketPath, "--", "/bin/sh", "-c", script,
    ])
    #expect(missing.status == 3)
    #expect(
      missing.errors.contains(
        "no consumer named \"mailer\": create it with `trialwatchctl consumer create mailer`"))
    let consume = try Ctl.start(
      [
        "consume", "mailer", "--create", "--from-oldest", "--retry-initial", "10ms", "--json", "--socket",
        fixture.socketPath, "--", "/bin/sh", "-c", script,
      ], environment: [:])
    defer { consume.kill() }
    let deadline = ContinuousClock.now.advanced(by: .seconds(30))
    var positions: [EventCursor] = []
    while positions.count < 3, let line = consume.readLine(until: deadline).line {
      positions.append(try decode(ConsumerReply.self, line).consumer.acknowledged)
    }
    #expect(positions == [1, 2, 3].map { EventCursor($0) })
    let handled = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map {
      $0.split(separator: " ").map(String.init)
    }
    #expect(handled.map { $0[0] } == ["1", "2", "2", "3"].map { "000000000000000" + $0 })
    #expect(handled.map { $0[3] } == ["a", "b", "b", "c"])
    #expect(handled.map { $0[4] } == ["1", "1", "2", "1"])
    #expect(handled.allSatisfy { $0[2] == "expiry" })
    let errors = [
      consume.readLine(.errors, until: deadline).line, consume.readLine(.errors, until: deadline).line,
    ]
    #expect(errors[0] == "created consumer mailer at 0000000000000000")
    #expect(errors[1] == "consumer mailer: handling the events after 0000000000000000")
    consume.signal(SIGTERM)
    #expect(consume.wait(timeout: 30) == .exited(0))
    #expect(consume.readRest(.errors).contains("attempt 1 failed: the command exited with status 1"))
    let consumer = try fixture.client().call(Trials.getConsumer, ConsumerNameParameters(name: "mailer"))
      .consumer
    #expect(consumer.acknowledged == EventCursor(3))
  }
}
