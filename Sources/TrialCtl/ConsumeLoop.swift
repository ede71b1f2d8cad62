import FoundationEssentials
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

// The logic of `trialwatchctl consume`, apart from sockets, processes and signals: which
// position to resume from, events in log order, one command run per event until it succeeds,
// retries with exponential back-off, acknowledgement once per success, reconnection. Tested
// with a fake daemon, a fake command and virtual time.

/// Why a call to the daemon failed, as the consume loop tells cases apart.
public enum LinkFailure: Error, Hashable, Sendable, CustomStringConvertible {
  /// No connection, or the connection broke: try again later.
  case unavailable(String)
  /// The daemon replied with an error.
  case refused(ControlError)
  /// The socket may not be connected to: trying again will not help.
  case denied(String)

  public var description: String {
    switch self {
    case .unavailable(let reason), .denied(let reason): reason
    case .refused(let error): error.description
    }
  }
}

/// What the consume loop asks of the daemon. The real one keeps two connections: one that a
/// Watch takes over, one for the other calls.
public protocol ConsumerLink: AnyObject {
  func consumer(named name: String) throws(LinkFailure) -> ConsumerObject
  func createConsumer(_ parameters: CreateConsumerParameters) throws(LinkFailure) -> ConsumerObject
  func eventLog() throws(LinkFailure) -> EventLogObject
  /// Sends AcknowledgeEvent without waiting for its reply, so that the next event's command
  /// can run while the daemon records it.
  func sendAcknowledgement(_ cursor: EventCursor, consumer: String) throws(LinkFailure)
  /// The reply to the acknowledgement sent last.
  func acknowledgementReply() throws(LinkFailure) -> ConsumerObject
  /// Starts a Watch of every event logged after `cursor`, then live.
  func watch(after cursor: EventCursor) throws(LinkFailure) -> any EventStream
  /// Drops the connections after a failure; the next call connects again.
  func reset()
}

/// The events of a Watch, in log order.
public protocol EventStream: AnyObject {
  /// The next event; nil once a stop was asked for. `beforeWaiting` is called once, before
  /// the wait, when no event has arrived yet.
  func next(beforeWaiting: () throws(LinkFailure) -> Void) throws(LinkFailure) -> EventObject?
}

/// How one run of the command for an event ended.
public enum CommandOutcome: Hashable, Sendable, CustomStringConvertible {
  /// Exit status 0: the event is handled.
  case succeeded
  case exited(Int32)
  case killed(signal: Int32)
  /// It ran longer than the time-out and was stopped.
  case timedOut(Duration)
  /// It could not be started at all (no such file, not executable).
  case couldNotStart(String)

  public var description: String {
    switch self {
    case .succeeded: "exited with status 0"
    case .exited(let status): "exited with status \(status)"
    case .killed(let signal): "was killed by signal \(signal) (\(Self.signalName(signal)))"
    case .timedOut(let limit): "timed out after \(TimeSpan.format(limit, style: .brief)) and was stopped"
    case .couldNotStart(let reason): "could not be started: \(reason)"
    }
  }

  static func signalName(_ signal: Int32) -> String {
    let names: [Int32: String] = [
      SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL",
      SIGSEGV: "SIGSEGV", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGBUS: "SIGBUS",
    ]
    return names[signal] ?? "signal \(signal)"
  }
}

/// Runs the command for one event, to its end.
public protocol EventCommandRunner: AnyObject {
  /// `attempt` counts from 1 for each event.
  func run(_ event: EventObject, attempt: Int) -> CommandOutcome
}

/// Waiting between attempts, ended early by a stop request.
public protocol StopAwareWaiting: AnyObject {
  /// True once SIGTERM or SIGINT arrived.
  var isStopping: Bool { get }
  /// Waits `delay`; false when a stop request ended the wait.
  func wait(_ delay: Duration) -> Bool
}

/// Delays that double from `initial` up to `maximum`: 1s, 2s, 4s ... 10min, 10min.
public struct Backoff: Hashable, Sendable {
  public let initial: Duration
  public let maximum: Duration
  private var current: Duration

  public init(initial: Duration, maximum: Duration) {
    self.initial = initial
    self.maximum = max(maximum, initial)
    current = initial
  }

  /// The next delay.
  public mutating func next() -> Duration {
    let delay = current
    current = current >= maximum / 2 ? maximum : current * 2
    return delay
  }

  public mutating func reset() {
    current = initial
  }
}

/// Where a consumer created by `consume --create` starts.
public enum ConsumerStart: Hashable, Sendable {
  /// After the newest event: only events taken from now on.
  case newest
  /// From the oldest event the log keeps.
  case oldest
  /// After this cursor.
  case after(EventCursor)

  /// The cursor the consumer is created after: none for the newest event; for the oldest,
  /// the log's start, which `logStart` reads.
  func cursor<E: Error>(logStart: () throws(E) -> EventCursor) throws(E) -> EventCursor? {
    switch self {
    case .newest: nil
    case .oldest: try logStart()
    case .after(let cursor): cursor
    }
  }
}

/// The consume loop: for the consumer `name`, runs the command once per event after the
/// consumer's position, in log order, until it succeeds, then acknowledges the event. Never
/// skips an event; stops on request, leaving unacknowledged whatever did not succeed.
public final class ConsumeLoop {
  public struct Settings: Hashable, Sendable {
    public var name: String
    /// Create the consumer when it does not exist, starting there.
    public var create: ConsumerStart?
    /// The delays between attempts of one event, and between reconnections.
    public var retryInitial: Duration
    public var retryMaximum: Duration

    public init(name: String, create: ConsumerStart?, retryInitial: Duration, retryMaximum: Duration) {
      self.name = name
      self.create = create
      self.retryInitial = retryInitial
      self.retryMaximum = retryMaximum
    }
  }

  /// How the loop ended.
  public enum Ending: Hashable, Sendable {
    /// On a stop request: exit 0.
    case stopped
    /// A failure that trying again will not cure.
    case failed(CtlFailure)
  }

  private let settings: Settings
  private let link: any ConsumerLink
  private let runner: any EventCommandRunner
  private let waiting: any StopAwareWaiting
  private let log: (String) -> Void
  private let acknowledged: (ConsumerObject) -> Void
  /// The `lost` count last read, to notice new losses.
  private var lost: Int?
  /// The last event whose command succeeded, until the daemon's reply to its
  /// acknowledgement arrives: acknowledged again after a failure, if the daemon's position
  /// is still before it.
  private var unacknowledged: EventCursor?
  /// The acknowledgement sent whose reply is still to be read.
  private var inFlight: EventCursor?
  /// Set once the consumer was read or created.
  private var known = false

  /// - Parameters:
  ///   - log: a line for the operator (standard error, the journal).
  ///   - acknowledged: the consumer as each acknowledgement left it.
  public init(
    settings: Settings, link: any ConsumerLink, runner: any EventCommandRunner, waiting: any StopAwareWaiting,
    log: @escaping (String) -> Void, acknowledged: @escaping (ConsumerObject) -> Void = { _ in }
  ) {
    self.settings = settings
    self.link = link
    self.runner = runner
    self.waiting = waiting
    self.log = log
    self.acknowledged = acknowledged
  }

  private var name: String { settings.name }

  /// The delays before trying again, as the settings say.
  private func makeBackoff() -> Backoff {
    Backoff(initial: settings.retryInitial, maximum: settings.retryMaximum)
  }

  public func run() -> Ending {
    var reconnect = makeBackoff()
    var prunedBefore = false
    while !waiting.isStopping {
      let failure: LinkFailure
      do {
        try follow(onStreaming: {
          reconnect.reset()
          prunedBefore = false
        })
        return .stopped
      } catch {
        failure = error
      }
      link.reset()
      inFlight = nil
      // A refused acknowledgement is not sent again: the event runs again instead.
      if case .refused = failure { unacknowledged = nil }
      if let ending = fatal(failure) { return ending }
      if case .refused(let error) = failure, error.name == ControlError.Name.eventsPruned {
        log(
          "WARNING: \(error.description). Events were lost to the event log's retention cap before consumer "
            + "\(name) handled them; continuing from the position the daemon moved it to")
        // Once at once, as the daemon has moved the position; again only after a delay.
        if !prunedBefore {
          prunedBefore = true
          continue
        }
      } else {
        prunedBefore = false
      }
      let delay = reconnect.next()
      log("\(failure.description); trying again in \(TimeSpan.format(delay, style: .brief))")
      guard waiting.wait(delay) else { return .stopped }
    }
    return .stopped
  }

  /// Failures that end the loop.
  private func fatal(_ failure: LinkFailure) -> Ending? {
    switch failure {
    case .unavailable: return nil
    case .denied(let reason): return .failed(CtlFailure(reason, exitCode: .permissionDenied))
    case .refused(let error):
      switch error.name {
      case ControlError.Name.consumerNotFound:
        let message =
          known
          ? "consumer \"\(name)\" was removed while consume ran"
          : "no consumer named \"\(name)\": create it with `trialwatchctl consumer create \(name)`, "
            + "or give consume --create"
        return .failed(CtlFailure(message, exitCode: .notFound))
      case ControlError.Name.permissionDenied, ControlError.Name.invalidParameter:
        return .failed(CtlFailure(error))
      default: return nil
      }
    }
  }

  /// Reads the consumer's position, watches from there and handles each event; returns
  /// only on a stop request, throws when the daemon fails or refuses.
  private func follow(onStreaming: () -> Void) throws(LinkFailure) {
    var position = try position().acknowledged
    if let cursor = unacknowledged, cursor.generation != position.generation {
      // The store was restored or imported into while the command ran: its cursor may name
      // another event now, so it is not acknowledged.
      log(
        "WARNING: the event log is in generation \(position.generation) now, the event handled last (cursor "
          + "\(cursor)) was of generation \(cursor.generation): the store was restored or imported into; "
          + "not acknowledging it, continuing after the consumer's position \(position) as the store keeps it "
          + "(events may repeat: tell them by EVENT_ID)")
      unacknowledged = nil
    }
    if let cursor = unacknowledged, cursor > position {
      try acknowledge(cursor)
      try settle()
      position = cursor
    }
    unacknowledged = nil
    let stream = try link.watch(after: position)
    log("consumer \(name): handling the events after \(position)")
    while true {
      // The last acknowledgement's reply is read before waiting for another event, or once
      // the next event's command has run.
      guard let event = try stream.next(beforeWaiting: settle) else {
        try settle()
        return
      }
      onStreaming()
      guard let cursor = event.cursor else {
        log("event \(event.id) came without a cursor; ignored")
        continue
      }
      // Replays never go back; an event at or before the position was handled.
      guard cursor > position else { continue }
      guard !waiting.isStopping, handle(event, cursor: cursor) else {
        try settle()
        return
      }
      // Handled: from now on it is acknowledged again after a failure, if need be.
      unacknowledged = cursor
      try settle()
      try acknowledge(cursor)
      // Not the daemon's position, which may have passed events pruned meanwhile that the
      // stream still brings: they are handled too.
      position = cursor
      if waiting.isStopping {
        try settle()
        return
      }
    }
  }

  /// Sends the acknowledgement of `cursor`; `settle()` reads its reply.
  private func acknowledge(_ cursor: EventCursor) throws(LinkFailure) {
    try link.sendAcknowledgement(cursor, consumer: name)
    inFlight = cursor
  }

  /// Reads the reply to the acknowledgement in flight, if there is one.
  private func settle() throws(LinkFailure) {
    guard let cursor = inFlight else { return }
    let after = try link.acknowledgementReply()
    inFlight = nil
    if unacknowledged == cursor { unacknowledged = nil }
    acknowledged(after)
    noteLost(after)
  }

  /// The consumer as the daemon keeps it (created first with `--create`).
  private func position() throws(LinkFailure) -> ConsumerObject {
    let consumer: ConsumerObject
    do {
      consumer = try link.consumer(named: name)
    } catch .refused(let error) where error.name == ControlError.Name.consumerNotFound && !known {
      guard let start = settings.create else { throw .refused(error) }
      consumer = try create(start)
    }
    known = true
    noteLost(consumer)
    return consumer
  }

  private func create(_ start: ConsumerStart) throws(LinkFailure) -> ConsumerObject {
    let after = try start.cursor { () throws(LinkFailure) in try link.eventLog().start }
    do {
      let created = try link.createConsumer(CreateConsumerParameters(name: name, after: after))
      log("created consumer \(name) at \(created.acknowledged)")
      return created
    } catch .refused(let error) where error.name == ControlError.Name.consumerExists {
      // Created meanwhile by another process: use it as it is.
      return try link.consumer(named: name)
    }
  }

  private func noteLost(_ consumer: ConsumerObject) {
    defer { lost = consumer.lost }
    guard consumer.lost > (lost ?? 0) else { return }
    let count = consumer.lost - (lost ?? 0)
    let events = count == 1 ? "1 event was" : "\(count) events were"
    log(
      "WARNING: \(events) pruned from the event log before consumer \(name) acknowledged "
        + (count == 1 ? "it" : "them") + " (the retention cap, MaxRetention=); "
        + "\(consumer.lost) lost in all; its position is now \(consumer.acknowledged)")
  }

  /// Runs the command for `event` until it succeeds; false when a stop request came first.
  private func handle(_ event: EventObject, cursor: EventCursor) -> Bool {
    var backoff = makeBackoff()
    var attempt = 1
    while true {
      let outcome = runner.run(event, attempt: attempt)
      if outcome == .succeeded {
        if attempt > 1 { log("event \(event.id) (cursor \(cursor)) handled at attempt \(attempt)") }
        return true
      }
      if waiting.isStopping {
        log("event \(event.id) (cursor \(cursor)): the command \(outcome); stopping without acknowledging it")
        return false
      }
      let delay = backoff.next()
      log(
        "event \(event.id) (cursor \(cursor)): attempt \(attempt) failed: the command \(outcome); "
          + "next attempt in \(TimeSpan.format(delay, style: .brief))")
      guard waiting.wait(delay) else {
        log("event \(event.id) (cursor \(cursor)): stopping without acknowledging it")
        return false
      }
      attempt += 1
    }
  }
}
