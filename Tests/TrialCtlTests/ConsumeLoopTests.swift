import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialCtl

/// The consume loop against a fake daemon and a fake command, in virtual time: order,
/// acknowledgement once per success, back-off, reconnection, never a skipped event.
@Suite struct ConsumeLoopTests {
  let clock = VirtualTime()
  let daemon: FakeDaemon
  let command: FakeCommand

  init() {
    daemon = FakeDaemon(events: 5, clock: clock)
    command = FakeCommand(clock: clock)
    daemon.add(consumer: "mailer")
    // Once every event was handed over, the test stops the loop, as SIGTERM would.
    daemon.whenIdle = { [clock] in clock.stop() }
  }

  static func settings(
    create: ConsumerStart? = nil, initial: Duration = .seconds(1), maximum: Duration = .seconds(600)
  ) -> ConsumeLoop.Settings {
    ConsumeLoop.Settings(name: "mailer", create: create, retryInitial: initial, retryMaximum: maximum)
  }

  func run(_ settings: ConsumeLoop.Settings = settings()) -> (ConsumeLoop.Ending, [String], [ConsumerObject])
  {
    let log = Log()
    var acknowledged: [ConsumerObject] = []
    let loop = ConsumeLoop(
      settings: settings, link: daemon, runner: command, waiting: clock, log: { log.lines.append($0) },
      acknowledged: { acknowledged.append($0) })
    let ending = loop.run()
    // Without the line each (re)connection logs (see consume_FromAPosition_StartsAfterIt).
    return (
      ending, log.lines.filter { !$0.hasPrefix("consumer mailer: handling the events after ") }, acknowledged
    )
  }

  final class Log {
    var lines: [String] = []
  }

  var cursors: [EventCursor] { (1...5).map { EventCursor(UInt64($0)) } }

  @Test func consume_OfEvents_RunsEachOnceInOrderAndAcknowledgesEach() {
    let (ending, _, acknowledged) = run()
    #expect(ending == .stopped)
    #expect(command.runs.map(\.cursor) == cursors)
    #expect(command.runs.allSatisfy { $0.attempt == 1 })
    #expect(daemon.acknowledgements == cursors)
    #expect(acknowledged.map(\.acknowledged) == cursors)
    #expect(daemon.consumers["mailer"]?.acknowledged == EventCursor(5))
    #expect(daemon.watches == [.origin])
    #expect(clock.now == .zero, "no waiting when nothing fails")
  }

  @Test func consume_FromAPosition_StartsAfterIt() {
    daemon.add(consumer: "mailer", at: EventCursor(3))
    let log = Log()
    let loop = ConsumeLoop(
      settings: Self.settings(), link: daemon, runner: command, waiting: clock, log: { log.lines.append($0) })
    #expect(loop.run() == .stopped)
    #expect(log.lines == ["consumer mailer: handling the events after 0000000000000003"])
    #expect(daemon.watches == [EventCursor(3)])
    #expect(command.runs.map(\.cursor) == [EventCursor(4), EventCursor(5)])
  }

  @Test func failingCommand_IsRetriedWithDoublingDelaysUpToTheMaximum_BeforeTheNextEvent() {
    command.outcomes[EventCursor(2)] = Array(repeating: .exited(1), count: 12)
    let (_, logs, _) = run()
    let seconds: [Int64] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600]
    #expect(clock.waits == seconds.map { .seconds($0) })
    let second = command.runs.filter { $0.cursor == EventCursor(2) }
    #expect(second.map(\.attempt) == Array(1...13))
    // Each attempt after the delays so far, in virtual time.
    #expect(second.last?.at == .seconds(seconds.reduce(0, +)))
    // Nothing after event 2 ran before it succeeded; each event is acknowledged once.
    #expect(
      command.runs.map(\.cursor) == [EventCursor(1)] + Array(repeating: EventCursor(2), count: 13)
        + cursors[2...])
    #expect(daemon.acknowledgements == cursors)
    #expect(
      logs.first
        == "event \(loggedEvent(2).id) (cursor 0000000000000002): attempt 1 failed: the command exited with "
        + "status 1; next attempt in 1s")
    #expect(logs.contains { $0.contains("attempt 12 failed") && $0.hasSuffix("next attempt in 10min") })
    #expect(logs.last == "event \(loggedEvent(2).id) (cursor 0000000000000002) handled at attempt 13")
  }

  @Test func backoff_OfEachEvent_StartsAgainFromTheInitialDelay() {
    command.outcomes[EventCursor(1)] = [.exited(2), .exited(2), .exited(2)]
    command.outcomes[EventCursor(4)] = [.exited(2), .exited(2)]
    _ = run()
    #expect(clock.waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(1), .seconds(2)])
  }

  @Test func timedOutKilledOrUnstartableCommand_IsRetried_NeverSkipped() {
    command.outcomes[EventCursor(3)] = [
      .timedOut(.seconds(300)), .killed(signal: SIGKILL),
      .couldNotStart("/nonexistent: No such file or directory"),
      .exited(75),
    ]
    let (_, logs, _) = run(Self.settings(initial: .milliseconds(500), maximum: .seconds(1)))
    #expect(clock.waits == [.milliseconds(500), .seconds(1), .seconds(1), .seconds(1)])
    #expect(command.runs.filter { $0.cursor == EventCursor(3) }.count == 5)
    #expect(daemon.acknowledgements == cursors)
    let failures = logs.filter { $0.contains("failed") }
    #expect(failures.count == 4)
    #expect(
      failures[0].hasSuffix(
        "attempt 1 failed: the command timed out after 5min and was stopped; next attempt in 500ms"))
    #expect(failures[1].contains("attempt 2 failed: the command was killed by signal 9 (SIGKILL)"))
    #expect(
      failures[2].contains("attempt 3 failed: the command could not be started: /nonexistent: No such file"))
    #expect(failures[3].contains("attempt 4 failed: the command exited with status 75; next attempt in 1s"))
  }

  @Test func stopRequest_DuringACommand_LeavesItsEventUnacknowledged() {
    command.stopDuring = (EventCursor(3), .killed(signal: SIGTERM))
    let (ending, logs, _) = run()
    #expect(ending == .stopped)
    #expect(daemon.acknowledgements == [EventCursor(1), EventCursor(2)])
    #expect(daemon.consumers["mailer"]?.acknowledged == EventCursor(2))
    #expect(logs.last?.hasSuffix("stopping without acknowledging it") == true)
  }

  @Test func stopRequest_DuringABackoff_EndsTheWaitAndLeavesTheEventUnacknowledged() {
    command.outcomes[EventCursor(2)] = Array(repeating: .exited(1), count: 100)
    clock.stopAt = .seconds(100)
    let (ending, _, _) = run()
    #expect(ending == .stopped)
    #expect(clock.now == .seconds(100))
    #expect(daemon.acknowledgements == [EventCursor(1)])
  }

  @Test func stopRequest_AfterACommandSucceeded_StillAcknowledgesIt() {
    command.stopDuring = (EventCursor(2), .succeeded)
    _ = run()
    #expect(daemon.acknowledgements == [EventCursor(1), EventCursor(2)])
    #expect(command.runs.count == 2)
  }

  @Test func daemonGoingAway_IsReconnectedWithBackoff_ResumingAfterTheAcknowledgedCursor() {
    daemon.breakBefore = [EventCursor(3), EventCursor(3)]
    daemon.unreachable = 0
    let (_, logs, _) = run()
    #expect(daemon.watches == [.origin, EventCursor(2), EventCursor(2)])
    #expect(clock.waits == [.seconds(1), .seconds(2)])
    #expect(command.runs.map(\.cursor) == cursors, "each event ran once")
    #expect(daemon.acknowledgements == cursors)
    #expect(daemon.resets == 2)
    #expect(logs.first == "the service at /fake closed the connection before replying; trying again in 1s")
  }

  @Test func reconnection_AfterEventsFlowAgain_StartsFromTheInitialDelay() {
    daemon.breakBefore = [EventCursor(2), EventCursor(4)]
    _ = run()
    #expect(clock.waits == [.seconds(1), .seconds(1)])
  }

  @Test func unreachableDaemon_IsTriedAgainWithDelaysUpToTheMaximum() {
    daemon.unreachable = 6
    _ = run(Self.settings(maximum: .seconds(10)))
    #expect(clock.waits == [1, 2, 4, 8, 10, 10].map { .seconds($0) })
    #expect(daemon.acknowledgements == cursors)
  }

  @Test func lostAcknowledgement_IsSentAgainAfterReconnecting_WithoutRunningTheCommandAgain() {
    daemon.failAcknowledgement = [EventCursor(2)]
    _ = run()
    #expect(command.runs.map(\.cursor) == cursors)
    #expect(daemon.acknowledgements == cursors)
    #expect(daemon.watches == [.origin, EventCursor(2)])
  }

  /// The daemon went away with an event handled and not yet acknowledged, and came back on a
  /// restored store: the cursor is of the log before, and is not acknowledged.
  @Test func restoredStore_WhileAnEventWasUnacknowledged_IsReportedAndItsCursorNotAcknowledged() {
    daemon.failAcknowledgement = [EventCursor(2)]
    daemon.whenAcknowledgementFails = { [daemon] in
      daemon.events = daemon.events.map { event in
        var event = event
        event.cursor = event.cursor?.of(generation: 1)
        return event
      }
      daemon.add(consumer: "mailer", at: EventCursor(1, generation: 1))
    }
    let (_, logs, _) = run()
    #expect(daemon.acknowledgements == [EventCursor(1)] + (2...5).map { EventCursor($0, generation: 1) })
    #expect(
      command.runs.map(\.cursor) == [EventCursor(1), EventCursor(2)]
        + (2...5).map { EventCursor($0, generation: 1) })
    #expect(
      logs.contains {
        $0.hasPrefix(
          "WARNING: the event log is in generation 1 now, the event handled last (cursor 0000000000000002) ")
          && $0.contains("not acknowledging it")
      }, "\(logs)")
  }

  @Test func lostAcknowledgementReply_IsNotSentAgain_NorItsEventRunAgain() {
    daemon.loseReply = [EventCursor(2)]
    let (_, _, acknowledged) = run()
    // The reply is read once the next event's command has run.
    #expect(command.runs.map(\.cursor) == cursors)
    #expect(daemon.acknowledgements == cursors, "each acknowledged once")
    #expect(acknowledged.map(\.acknowledged) == [1, 3, 4, 5].map { EventCursor($0) })
    #expect(daemon.watches == [.origin, EventCursor(3)])
  }

  @Test func refusedAcknowledgement_IsNotSentAgain_TheEventRunsAgainInstead() {
    daemon.refuseAcknowledgement = [EventCursor(2)]
    let (_, logs, _) = run()
    // The refusal is read once the next event's command has run: both run again.
    #expect(command.runs.map(\.cursor) == [1, 2, 3, 2, 3, 4, 5].map { EventCursor($0) })
    #expect(daemon.acknowledgements == cursors)
    #expect(clock.waits == [.seconds(1)])
    #expect(
      logs.first?.hasPrefix("cursor 0000000000000002 lies beyond the newest event logged") == true, "\(logs)")
  }

  @Test func missingConsumer_WithoutCreate_FailsNamingTheWayToCreateIt() {
    daemon.consumers = [:]
    let (ending, _, _) = run()
    #expect(
      ending
        == .failed(
          CtlFailure(
            "no consumer named \"mailer\": create it with `trialwatchctl consumer create mailer`, or give "
              + "consume --create", exitCode: .notFound)))
    #expect(command.runs.isEmpty)
    #expect(daemon.watches.isEmpty)
  }

  @Test(arguments: [
    (ConsumerStart.newest, nil as UInt64?, [UInt64]()), (.oldest, 2, [3, 4, 5]),
    (.after(EventCursor(3)), 3, [4, 5]),
  ])
  func missingConsumer_WithCreate_IsCreatedWhereAsked(start: ConsumerStart, after: UInt64?, handled: [UInt64])
  {
    daemon.consumers = [:]
    daemon.prunedThrough = EventCursor(2)
    _ = run(Self.settings(create: start))
    #expect(
      daemon.created == [CreateConsumerParameters(name: "mailer", after: after.map { EventCursor($0) })])
    #expect(command.runs.map(\.cursor) == handled.map { EventCursor($0) })
    // Created once: a later read finds it.
    _ = run(Self.settings(create: start))
    #expect(daemon.created.count == 1)
  }

  @Test func removedConsumer_WhileConsuming_EndsWithNotFound() {
    // Removed by an operator once event 1 is acknowledged: event 2's acknowledgement is
    // refused, and the reconnection finds it gone.
    daemon.breakBefore = [EventCursor(3)]
    let daemon = daemon
    let loop = ConsumeLoop(
      settings: Self.settings(), link: daemon, runner: command, waiting: clock, log: { _ in },
      acknowledged: { consumer in
        if consumer.acknowledged == EventCursor(1) { daemon.consumers = [:] }
      })
    #expect(
      loop.run()
        == .failed(CtlFailure("consumer \"mailer\" was removed while consume ran", exitCode: .notFound)))
    #expect(command.runs.map(\.cursor) == [EventCursor(1), EventCursor(2)])
  }

  @Test func prunedEvents_AreReportedLoudly_AndConsumingGoesOnFromTheDaemonsPosition() {
    daemon.prunedThrough = EventCursor(3)
    let (_, logs, _) = run()
    #expect(daemon.watches == [.origin, EventCursor(3)])
    #expect(command.runs.map(\.cursor) == [EventCursor(4), EventCursor(5)])
    #expect(clock.waits.isEmpty, "the position is read again at once")
    #expect(logs.contains { $0.hasPrefix("WARNING: events after cursor 0000000000000000 were pruned") })
    #expect(
      logs.contains {
        $0.hasPrefix(
          "WARNING: 3 events were pruned from the event log before consumer mailer acknowledged them")
      })
  }

  @Test func replayedEvent_AtOrBeforeThePosition_IsNotRunAgain() {
    // A stream that hands over an event the consumer has passed (the daemon never should).
    daemon.events.insert(loggedEvent(1), at: 2)
    _ = run()
    #expect(command.runs.map(\.cursor) == cursors)
    #expect(daemon.acknowledgements == cursors)
  }

  /// Random failures of the command, the stream and the acknowledgements: every event is
  /// handled, in order, and acknowledged exactly once, the position never moving back.
  @Test(arguments: [1, 2, 3, 42, 1234] as [UInt64])
  func randomFailures_NeverSkipOrReorderEvents(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    daemon.events = (1...200).map(loggedEvent)
    let all = (1...200).map { EventCursor(UInt64($0)) }
    for cursor in all {
      if Int.random(in: 0..<10, using: &random) == 0 {
        command.outcomes[cursor] = (0..<Int.random(in: 1...4, using: &random)).map { _ in
          [CommandOutcome.exited(1), .killed(signal: SIGKILL), .timedOut(.seconds(1))].randomElement(
            using: &random)!
        }
      }
      if Int.random(in: 0..<15, using: &random) == 0 { daemon.breakBefore.append(cursor) }
      if Int.random(in: 0..<15, using: &random) == 0 { daemon.failAcknowledgement.append(cursor) }
    }
    let (ending, _, acknowledged) = run()
    #expect(ending == .stopped)
    #expect(daemon.acknowledgements == all)
    #expect(zip(acknowledged, acknowledged.dropFirst()).allSatisfy { $0.acknowledged < $1.acknowledged })
    // In order: an event's first run comes after the previous event's last.
    var seen: [EventCursor] = []
    for run in command.runs where seen.last != run.cursor { seen.append(run.cursor) }
    #expect(seen == all)
  }

  @Test func backoff_Sequence_DoublesAndStaysAtTheMaximum() {
    var backoff = Backoff(initial: .milliseconds(300), maximum: .seconds(2))
    let delays = (0..<6).map { _ in backoff.next() }
    #expect(
      delays == [
        .milliseconds(300), .milliseconds(600), .milliseconds(1200), .seconds(2), .seconds(2), .seconds(2),
      ])
    backoff.reset()
    #expect(backoff.next() == .milliseconds(300))
    var flat = Backoff(initial: .seconds(5), maximum: .seconds(1))
    #expect(
      flat.next() == .seconds(5) && flat.next() == .seconds(5),
      "a maximum below the initial delay is raised to it")
  }
}
