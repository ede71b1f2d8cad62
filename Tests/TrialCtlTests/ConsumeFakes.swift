import Foundation
import TrialControl
import TrialCore
import TrialCtl

// A fake daemon, a fake command and virtual time for the consume loop.

/// Virtual time: waiting advances it at once; a stop can be set for a moment of it.
final class VirtualTime: StopAwareWaiting {
  private(set) var now: Duration = .zero
  private(set) var waits: [Duration] = []
  /// A stop request arrives at this moment.
  var stopAt: Duration?
  private var stopped = false

  var isStopping: Bool { stopped }

  func stop() { stopped = true }

  func wait(_ delay: Duration) -> Bool {
    guard !stopped else { return false }
    waits.append(delay)
    if let stopAt, now + delay >= stopAt {
      now = max(now, stopAt)
      stopped = true
      return false
    }
    now += delay
    return true
  }
}

/// An event of the fake log.
func loggedEvent(_ sequence: UInt64) -> EventObject {
  let trial = TrialID(0x100 + sequence)
  let end = Date(timeIntervalSince1970: 1_750_000_000 + Double(sequence) * 60)
  var event = EventObject(
    id: EventID(trialID: trial, revision: 1, kind: .expiry), subject: "subject-\(sequence)",
    state: .delivered,
    due: end, takenAt: end)
  event.cursor = EventCursor(sequence)
  return event
}

/// The daemon as the loop sees it: an event log, consumers, and failures on cue.
final class FakeDaemon: ConsumerLink {
  var events: [EventObject]
  var consumers: [String: ConsumerRecord] = [:]
  /// Events up to this cursor are pruned.
  var prunedThrough = EventCursor.origin
  /// When the stream is about to hand over the event with this cursor, it breaks instead
  /// (once per entry).
  var breakBefore: [EventCursor] = []
  /// The acknowledgement of these cursors fails (once per entry) before it reaches the daemon.
  var failAcknowledgement: [EventCursor] = []
  /// The acknowledgement of these cursors reaches the daemon, its reply does not (once per
  /// entry).
  var loseReply: [EventCursor] = []
  /// The acknowledgement of these cursors is refused (once per entry) with CursorNotFound.
  var refuseAcknowledgement: [EventCursor] = []
  /// The next calls fail this many times as if nothing listened.
  var unreachable = 0
  /// Called when an acknowledgement of `failAcknowledgement` fails: the daemon went away.
  var whenAcknowledgementFails: () -> Void = {}
  /// Called when the stream has handed over every event: the test's stop request.
  var whenIdle: () -> Void = {}

  private(set) var watches: [EventCursor] = []
  private(set) var acknowledgements: [EventCursor] = []
  private(set) var created: [CreateConsumerParameters] = []
  private(set) var resets = 0
  private let clock: VirtualTime

  init(events: Int, clock: VirtualTime) {
    self.events = (1...UInt64(max(events, 1))).prefix(events).map(loggedEvent)
    self.clock = clock
  }

  var last: EventCursor { events.last?.cursor ?? .origin }

  func add(consumer name: String, at position: EventCursor = .origin) {
    consumers[name] = ConsumerRecord(
      name: name, acknowledged: position, createdAt: Date(timeIntervalSince1970: 0))
  }

  private func reach() throws(LinkFailure) {
    if unreachable > 0 {
      unreachable -= 1
      throw .unavailable("cannot connect to /fake: Connection refused")
    }
  }

  private func record(_ name: String) throws(LinkFailure) -> ConsumerRecord {
    guard let record = consumers[name] else {
      throw .refused(ControlError(name: ControlError.Name.consumerNotFound, parameters: .init(name: name)))
    }
    return record
  }

  func consumer(named name: String) throws(LinkFailure) -> ConsumerObject {
    try reach()
    return ConsumerObject(try record(name), last: last)
  }

  func createConsumer(_ parameters: CreateConsumerParameters) throws(LinkFailure) -> ConsumerObject {
    try reach()
    guard consumers[parameters.name] == nil else {
      throw .refused(
        ControlError(name: ControlError.Name.consumerExists, parameters: .init(name: parameters.name)))
    }
    created.append(parameters)
    add(consumer: parameters.name, at: parameters.after ?? last)
    return try consumer(named: parameters.name)
  }

  func eventLog() throws(LinkFailure) -> EventLogObject {
    try reach()
    let kept = events.filter { $0.cursor! > prunedThrough }.count
    return EventLogObject(
      EventLogBounds(last: last, prunedThrough: prunedThrough, count: kept), retention: EventRetention())
  }

  /// The reply to the acknowledgement sent last.
  private var reply: Result<ConsumerObject, LinkFailure>?

  func sendAcknowledgement(_ cursor: EventCursor, consumer name: String) throws(LinkFailure) {
    try reach()
    if let index = failAcknowledgement.firstIndex(of: cursor) {
      failAcknowledgement.remove(at: index)
      whenAcknowledgementFails()
      throw .unavailable("connection to /fake failed: write: Broken pipe")
    }
    if let index = refuseAcknowledgement.firstIndex(of: cursor) {
      refuseAcknowledgement.remove(at: index)
      reply = .failure(
        .refused(
          ControlError(
            name: ControlError.Name.cursorNotFound, parameters: .init(cursor: cursor.description, last: "?")))
      )
      return
    }
    do {
      var record = try record(name)
      acknowledgements.append(cursor)
      record.acknowledged = max(record.acknowledged, cursor)
      record.acknowledgedAt = Date(timeIntervalSince1970: 1_750_000_000 + clock.now.timeInterval)
      consumers[name] = record
      reply = .success(ConsumerObject(record, last: last))
    } catch {
      reply = .failure(error)
    }
    if let index = loseReply.firstIndex(of: cursor) {
      loseReply.remove(at: index)
      reply = .failure(.unavailable("connection to /fake failed: read: Connection reset by peer"))
    }
  }

  func acknowledgementReply() throws(LinkFailure) -> ConsumerObject {
    guard let reply else { throw .unavailable("no acknowledgement in flight") }
    self.reply = nil
    return try reply.get()
  }

  func watch(after cursor: EventCursor) throws(LinkFailure) -> any EventStream {
    try reach()
    watches.append(cursor)
    if cursor < prunedThrough {
      // The retention cap passed the consumers: the daemon moves them and counts the loss.
      for (name, var record) in consumers where record.acknowledged < prunedThrough {
        record.lost += prunedThrough.sequence - record.acknowledged.sequence
        record.acknowledged = prunedThrough
        consumers[name] = record
      }
      throw .refused(
        ControlError(
          name: ControlError.Name.eventsPruned,
          parameters: .init(
            cursor: cursor.description, resumeAfter: prunedThrough.description,
            oldest: prunedThrough.next.description)))
    }
    return FakeStream(daemon: self, pending: events.filter { $0.cursor! > cursor })
  }

  func reset() {
    resets += 1
    reply = nil
  }

  final class FakeStream: EventStream {
    let daemon: FakeDaemon
    var pending: [EventObject]
    var broken = false

    init(daemon: FakeDaemon, pending: [EventObject]) {
      self.daemon = daemon
      self.pending = pending
    }

    func next(beforeWaiting: () throws(LinkFailure) -> Void) throws(LinkFailure) -> EventObject? {
      guard !daemon.clock.isStopping else { return nil }
      guard let event = pending.first else {
        try beforeWaiting()
        daemon.whenIdle()
        return nil
      }
      if let index = daemon.breakBefore.firstIndex(of: event.cursor!) {
        daemon.breakBefore.remove(at: index)
        throw .unavailable("the service at /fake closed the connection before replying")
      }
      pending.removeFirst()
      return event
    }
  }
}

/// A command whose outcomes are scripted per event; records each run and when it happened.
final class FakeCommand: EventCommandRunner {
  struct Run: Equatable {
    var cursor: EventCursor
    var attempt: Int
    var at: Duration
  }

  /// Outcomes of the first attempts of an event, by cursor; then it succeeds.
  var outcomes: [EventCursor: [CommandOutcome]] = [:]
  /// While running the command for this cursor, a stop request arrives; the command then
  /// ends with this outcome.
  var stopDuring: (cursor: EventCursor, outcome: CommandOutcome)?
  private(set) var runs: [Run] = []
  private let clock: VirtualTime

  init(clock: VirtualTime) {
    self.clock = clock
  }

  func run(_ event: EventObject, attempt: Int) -> CommandOutcome {
    let cursor = event.cursor!
    runs.append(Run(cursor: cursor, attempt: attempt, at: clock.now))
    if let stop = stopDuring, stop.cursor == cursor {
      clock.stop()
      return stop.outcome
    }
    guard var scripted = outcomes[cursor], !scripted.isEmpty else { return .succeeded }
    let outcome = scripted.removeFirst()
    outcomes[cursor] = scripted
    return outcome
  }
}
