import FoundationEssentials
import Logging
import TrialCore

/// An attempt handed to the sender: the message for an endpoint, under its `webhook-id`, the
/// attempt's number (1 for the first), and a token its outcome comes back with.
public struct WebhookDispatch: Sendable {
  public enum Message: Sendable {
    case event(LoggedEvent)
    /// `webhooks test`: a `trialwatch.test` message made at this time.
    case test(at: Date)
  }

  public var token: UInt64
  public var endpoint: WebhookEndpoint
  public var messageID: String
  public var number: Int
  public var message: Message
}

/// What an attempt came to, as the sender reports it.
public struct WebhookReport: Sendable {
  public var token: UInt64
  public var attempt: WebhookAttempt
  /// When it was made.
  public var at: Date
  public var duration: Duration

  public init(token: UInt64, attempt: WebhookAttempt, at: Date, duration: Duration) {
    self.token = token
    self.attempt = attempt
    self.at = at
    self.duration = duration
  }
}

/// The webhook endpoints' deliveries: each endpoint reads the log after its position
/// (`WebhookQueue`), hands the sender what is due while one is attached, writes every outcome
/// through the commit lane (`WebhookBook`), and keeps one wake, at the earliest retry, only
/// while a sender is attached and something waits.
public final class WebhookDuty: EngineDuty, EventLogObserver {
  /// The `MESSAGE_ID` of the journal entry of an endpoint disabled (`systemd/trialwatch.catalog`).
  public static let disabledMessageID = "f75962a2895d4649bb6ea076b97e58b1"

  /// The fields of that entry beside its message: in the journal, `MESSAGE_ID`,
  /// `WEBHOOK_ENDPOINT`, `WEBHOOK_DISABLED_REASON` (`gone` or `failing`) and
  /// `WEBHOOK_LAST_ATTEMPT`.
  public static func disabledMetadata(
    endpoint: String, disabled: WebhookEndpointHealth.Disabled, last: WebhookAttempt
  ) -> Logger.Metadata {
    let reason =
      switch disabled {
      case .gone: "gone"
      case .failing: "failing"
      }
    return [
      "message-id": "\(disabledMessageID)", "webhook-endpoint": "\(endpoint)",
      "webhook-disabled-reason": "\(reason)", "webhook-last-attempt": "\(last.summary)",
    ]
  }

  /// The most attempts of one endpoint out at once.
  public static let inFlightLimit = 32
  /// The most events read from the log at once for an endpoint.
  static let readBatch = 1_000

  /// An endpoint's run. Changed out of `runs` (`removeValue`, changed, put back): a queue of
  /// 10,000 events changed where the dictionary still holds it would be copied whole each time.
  struct Run {
    var endpoint: WebhookEndpoint
    var queue: WebhookQueue
    var state: WebhookEndpointState
    /// The events the queue holds, by sequence.
    var events: [UInt64: LoggedEvent] = [:]
  }

  unowned let engine: Engine
  var runs: [String: Run] = [:]
  /// Endpoints being opened (their state read on the lane).
  private var opening: Set<String> = []
  var send: (([WebhookDispatch]) -> Void)?
  private var out: [UInt64: (endpoint: String, cursor: EventCursor, messageID: String)] = [:]
  /// Test messages out (`test`), with who waits for each.
  var tests:
    [UInt64: (
      endpoint: String, messageID: String, done: (Result<WebhookAttemptRecord, WebhookDutyError>) -> Void
    )] = [:]
  var nextToken: UInt64 = 1
  /// Attempts reported, by endpoint and outcome (`WebhookAttempt.outcomeClass`), since the start.
  public private(set) var outcomes: [String: [String: Int]] = [:]
  private var wake = DutyWake()
  private var observing = false

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {
    if !observing {
      observing = true
      engine.addLogObserver(self)
      // Tokens start at the start's microsecond: an outcome of an attempt handed out by an
      // earlier run of the daemon never names one of this run's.
      let micros = engine.clock.now().timeIntervalSince1970 * 1_000_000
      nextToken = max(nextToken, UInt64(max(micros, 1).rounded(.down)))
    }
    let gone = Set(runs.keys).union(old?.webhooks.keys ?? [:].keys).subtracting(settings.webhooks.keys)
    for name in gone.sorted() {
      returnAll(of: name)
      runs[name] = nil
    }
    if old == nil || !gone.isEmpty { forget(except: Set(settings.webhooks.keys)) }
    for (name, endpoint) in settings.webhooks {
      if let run = runs[name], run.endpoint.ordering == endpoint.ordering {
        runs[name]!.endpoint = endpoint
      } else {
        returnAll(of: name)
        runs[name] = nil
        open(name)
      }
    }
  }

  func stop() {
    wake.cancel()
    send = nil
  }

  /// Attaches the sender: what is due goes to `send` from now on (on the engine's context),
  /// until `detach`, which takes back every attempt out.
  public func attach(_ send: @escaping ([WebhookDispatch]) -> Void) {
    self.send = send
    dispatch()
  }

  public func detach() {
    send = nil
    wake.cancel()
    for name in Array(runs.keys) { returnAll(of: name) }
    out.removeAll()
    let waiting = tests.values.map(\.done)
    tests.removeAll()
    for done in waiting { done(.failure(.senderUnavailable)) }
  }

  /// Whether a sender is attached.
  public var attached: Bool { send != nil }

  /// The sender's outcomes: each settles its event or sets its next attempt, all written in one
  /// commit.
  public func report(_ reports: [WebhookReport]) {
    var changes: [String: WebhookQueue.Change] = [:]
    for report in reports {
      if let test = tests.removeValue(forKey: report.token) {
        tested(test, report)
        continue
      }
      // Taken out while it changes, so that its queue is changed in place, not copied.
      guard let (name, cursor, messageID) = out.removeValue(forKey: report.token),
        var run = runs.removeValue(forKey: name)
      else {
        continue
      }
      outcomes[name, default: [:]][report.attempt.outcomeClass, default: 0] += 1
      let number = (run.queue.attempts(of: cursor) ?? 0) + 1
      let change: WebhookQueue.Change
      if report.attempt.delivered {
        change = run.queue.delivered(cursor)
        run.events[cursor.sequence] = nil
      } else {
        let asked = report.attempt.askedWait
        change = run.queue.failed(
          cursor, retryAt: run.endpoint.retrySchedule.attempt(number + 1, after: report.at, asked: asked))
      }
      let disabled = run.state.health.record(
        report.attempt, at: report.at, disableAfter: run.endpoint.disableAfter)
      run.state.keep(
        WebhookAttemptRecord(
          at: report.at, cursor: cursor, messageID: messageID, number: number, outcome: report.attempt,
          duration: report.duration))
      runs[name] = run
      changes[name, default: WebhookQueue.Change()].merge(change)
      if disabled, let why = run.state.health.disabled {
        engine.logger.warning(
          "Webhook endpoint \(name) disabled: \(why.description)",
          metadata: Self.disabledMetadata(endpoint: name, disabled: why, last: report.attempt))
      }
    }
    record(changes)
    for name in changes.keys { readAhead(name) }
    dispatch()
  }

  // MARK: The log

  public func eventsLogged(_ events: [LoggedEvent]) {
    guard let first = events.first else { return }
    for name in Array(runs.keys) {
      let run = runs[name]!
      guard run.queue.readThrough.next.sequence == first.cursor.sequence, run.queue.wantsMore else {
        readAhead(name)
        continue
      }
      take(events, into: name)
    }
    dispatch()
  }

  public func logSkipped(to cursor: EventCursor) {
    for name in Array(runs.keys) { readAhead(name) }
  }

  /// Takes `events` (which follow what the endpoint read) into its queue, while it wants more.
  private func take(_ events: some Collection<LoggedEvent>, into name: String) {
    guard var run = runs.removeValue(forKey: name) else { return }
    var change = WebhookQueue.Change()
    let now = engine.clock.now()
    for event in events where event.cursor > run.queue.readThrough {
      guard run.queue.wantsMore else { break }
      let skipped = run.state.skip?.contains(event.cursor.sequence) ?? false
      let wanted = !skipped && run.endpoint.wants(event)
      if wanted { run.events[event.cursor.sequence] = event }
      change.merge(run.queue.read(cursor: event.cursor, subject: event.subject, wanted: wanted, now: now))
    }
    runs[name] = run
    if !change.isEmpty { record([name: change]) }
  }

  /// Reads the log after what the endpoint read, while it wants more: no more events at once
  /// than it has room for, so that a full queue's deliveries each read a few, not a batch.
  private func readAhead(_ name: String) {
    while let run = runs[name], run.queue.wantsMore {
      let room = min(Self.readBatch, run.queue.limit - run.queue.backlog)
      let events: [LoggedEvent]
      do {
        events = try engine.repository.loggedEvents(after: run.queue.readThrough, limit: room)
      } catch {
        engine.logger.error(
          "could not read the event log for a webhook endpoint",
          metadata: ["endpoint": "\(name)", "error": "\(error)"])
        return
      }
      guard !events.isEmpty else { return }
      take(events, into: name)
      if events.count < room { return }
    }
  }

  // MARK: Handing out

  /// Hands the sender what is due, and arms the wake at the next retry.
  func dispatch() {
    guard let send, !engine.stopped else { return }
    let now = engine.clock.now()
    var batch: [WebhookDispatch] = []
    var next: Date?
    for name in runs.keys.sorted() {
      guard runs[name]?.state.health.disabled == nil, var run = runs.removeValue(forKey: name) else {
        continue
      }
      let room = Self.inFlightLimit - run.queue.inFlight
      for item in run.queue.takeDue(now: now, limit: max(room, 0)) {
        guard let event = run.events[item.cursor.sequence] else { continue }
        let token = nextToken
        nextToken += 1
        out[token] = (name, item.cursor, event.id.description)
        batch.append(
          WebhookDispatch(
            token: token, endpoint: run.endpoint, messageID: event.id.description, number: item.attempts + 1,
            message: .event(event)))
      }
      if let due = run.queue.nextDue() { next = min(next ?? due, due) }
      runs[name] = run
    }
    if !batch.isEmpty { send(batch) }
    if let next {
      wake.arm(at: next, on: engine.scheduler, label: "webhooks", replacing: true) { [weak self] in
        self?.wake.fired()
        self?.dispatch()
      }
    } else {
      wake.cancel()
    }
  }

  func returnAll(of name: String) {
    guard var run = runs.removeValue(forKey: name) else { return }
    run.queue.returnAll(now: engine.clock.now())
    runs[name] = run
    out = out.filter { $0.value.endpoint != name }
  }

  // MARK: The store

  private func open(_ name: String) {
    guard !opening.contains(name) else { return }
    opening.insert(name)
    let now = engine.clock.now()
    engine.commits.submit({ txn in try WebhookBook.open(endpoint: name, now: now, in: txn) }) {
      [weak self] result in
      guard let self else { return }
      opening.remove(name)
      guard let endpoint = engine.settings.webhooks[name] else { return }
      switch result {
      case .success(let opened):
        install(opened, endpoint: endpoint)
      case .failure(let error):
        engine.logger.error(
          "could not open a webhook endpoint's state; will retry",
          metadata: ["endpoint": "\(name)", "error": "\(error)"])
        wake.arm(at: now.adding(engine.settings.retryDelay), on: engine.scheduler, label: "webhooks") {
          [weak self] in
          self?.wake.fired()
          self?.open(name)
        }
      }
    }
  }

  /// Runs `endpoint` from where the store has it.
  func install(_ opened: WebhookBook.Opened, endpoint: WebhookEndpoint) {
    let queue = WebhookQueue(
      endpoint: endpoint.name, position: opened.position, remembered: opened.pending,
      ordering: endpoint.ordering)
    runs[endpoint.name] = Run(endpoint: endpoint, queue: queue, state: opened.state)
    readAhead(endpoint.name)
    dispatch()
  }

  /// Forgets every endpoint the store knows but `kept`: their files are gone.
  private func forget(except kept: Set<String>) {
    // Read first: a start with nothing to forget writes nothing.
    guard let known = try? engine.repository.read({ try WebhookBook.known(in: $0) }),
      !known.subtracting(kept).isEmpty
    else { return }
    engine.commits.submit({ txn in try WebhookBook.removeAll(except: kept, in: txn) }) { [weak self] result in
      switch result {
      case .success(let removed):
        for name in removed {
          self?.engine.logger.notice(
            "forgot a webhook endpoint no longer configured: its position and pending events",
            metadata: ["endpoint": "\(name)"])
        }
      case .failure(let error):
        self?.engine.logger.error("could not forget webhook endpoints", metadata: ["error": "\(error)"])
      }
    }
  }

  /// Writes the queues' changes, with each endpoint's state as it is now. A write that fails is
  /// logged: its attempts are made again (never lost), as after a restart.
  func record(
    _ changes: [String: WebhookQueue.Change], completion: ((Result<Void, any Error>) -> Void)? = nil
  ) {
    let now = engine.clock.now()
    let states = changes.keys.compactMap { runs[$0]?.state }
    engine.commits.submit({ txn in
      for state in states {
        try WebhookBook.record(changes[state.name]!, endpoint: state.name, state: state, now: now, in: txn)
      }
    }) { [weak self] result in
      if case .failure(let error) = result, !error.isStoreFault {
        self?.engine.logger.error("could not record webhook deliveries", metadata: ["error": "\(error)"])
      }
      completion?(result)
    }
  }
}

extension Engine {
  /// The webhook endpoints' deliveries.
  public var webhooks: WebhookDuty { duties.webhooks }
}
