import FoundationEssentials
import TrialCore

/// Why an operator's call on an endpoint could not be carried out.
public enum WebhookDutyError: Error, Hashable, Sendable {
  /// No endpoint of this name is configured.
  case notFound(String)
  /// No sender is attached to make the attempt.
  case senderUnavailable
}

extension WebhookAttempt {
  /// The attempt's class, as deliveries are counted: `delivered` (2xx), `rejected` (any other
  /// status) or `unanswered` (no answer: no connection, a timeout, TLS refused).
  public var outcomeClass: String {
    switch self {
    case .answered where delivered: "delivered"
    case .answered: "rejected"
    case .failed: "unanswered"
    }
  }

  /// Every class `outcomeClass` gives, in the order metrics list them.
  public static let outcomeClasses = ["delivered", "rejected", "unanswered"]
}

/// The webhook endpoints' figures for the metrics, as of `now`.
public struct WebhookFigures: Sendable {
  public var statuses: [WebhookEndpointStatus] = []
  /// Attempts reported since the start, by endpoint and outcome class.
  public var outcomes: [String: [String: Int]] = [:]
  public var attached = false
  public var now = Date(timeIntervalSince1970: 0)

  public init() {}
}

/// What operators ask of the endpoints (`trialwatchctl webhooks`): where each stands, enable,
/// replay and test. On the engine's context, as the rest of the duty.
extension WebhookDuty {
  /// Every endpoint configured, by name, as it stands now.
  public func statuses() -> [WebhookEndpointStatus] {
    engine.settings.webhooks.keys.sorted().compactMap(status(of:))
  }

  /// The figures of every endpoint, for the metrics.
  public func figures() -> WebhookFigures {
    var figures = WebhookFigures()
    figures.statuses = statuses()
    figures.outcomes = outcomes
    figures.attached = attached
    figures.now = engine.clock.now()
    return figures
  }

  /// Where `name` stands; nil when it is not configured.
  public func status(of name: String) -> WebhookEndpointStatus? {
    guard let endpoint = engine.settings.webhooks[name] else { return nil }
    var status = WebhookEndpointStatus(endpoint: endpoint)
    guard var run = runs.removeValue(forKey: name) else { return status }
    status.state = run.state
    status.position = run.queue.position
    status.backlog = run.queue.backlog
    status.inFlight = run.queue.inFlight
    status.oldest = run.queue.oldest
    status.oldestTakenAt = status.oldest.flatMap { run.events[$0.sequence]?.takenAt }
    status.nextAttemptAt = run.queue.nextDue()
    runs[name] = run
    return status
  }

  /// Enables `name` again: every event it holds is due at once, from where it stopped. Done
  /// once durable, with where it stands.
  public func enable(
    _ name: String, completion: @escaping (Result<WebhookEndpointStatus, any Error>) -> Void
  ) {
    guard engine.settings.webhooks[name] != nil else {
      return completion(.failure(WebhookDutyError.notFound(name)))
    }
    guard var run = runs.removeValue(forKey: name) else {
      // Not yet opened: the state is written as the store has it, enabled.
      return engine.commits.submit({ txn in
        guard var state = try txn.webhookEndpoint(named: name) else { return }
        state.health.enable()
        try txn.putWebhookEndpoint(state)
      }) { [weak self] result in
        completion(
          result.flatMap {
            self?.status(of: name).map { .success($0) } ?? .failure(WebhookDutyError.notFound(name))
          })
      }
    }
    let wasDisabled = run.state.health.disabled != nil
    run.state.health.enable()
    let change = run.queue.dueAll(now: engine.clock.now())
    runs[name] = run
    record([name: change]) { [weak self] result in
      guard let self else { return }
      if wasDisabled {
        engine.logger.notice("webhook endpoint enabled", metadata: ["endpoint": "\(name)"])
      }
      completion(
        result.flatMap {
          self.status(of: name).map { .success($0) } ?? .failure(WebhookDutyError.notFound(name))
        })
    }
    dispatch()
  }

  /// Sends `name` the events after `after` again, through `until` (`WebhookBook.replay`): done
  /// once durable, the endpoint then running from its new position.
  public func replay(
    _ name: String, after: EventCursor, until: EventCursor?,
    completion: @escaping (Result<WebhookEndpointStatus, any Error>) -> Void
  ) {
    guard let endpoint = engine.settings.webhooks[name] else {
      return completion(.failure(WebhookDutyError.notFound(name)))
    }
    let now = engine.clock.now()
    engine.commits.submit({ txn in
      _ = try WebhookBook.replay(endpoint: name, after: after, until: until, now: now, in: txn)
      return try WebhookBook.open(endpoint: name, now: now, in: txn)
    }) { [weak self] result in
      guard let self else { return }
      switch result {
      case .success(let opened):
        // Attempts out are not waited for: their outcomes are ignored, their events sent again.
        returnAll(of: name)
        runs[name] = nil
        install(opened, endpoint: engine.settings.webhooks[name] ?? endpoint)
        engine.logger.notice(
          "webhook endpoint replaying events",
          metadata: [
            "endpoint": "\(name)", "after": "\(after)", "until": "\(until.map { "\($0)" } ?? "the newest")",
          ])
        completion(status(of: name).map { .success($0) } ?? .failure(WebhookDutyError.notFound(name)))
      case .failure(let error):
        completion(.failure(error))
      }
    }
  }

  /// Sends `name` a `trialwatch.test` message, once; done with the attempt when the sender
  /// reports it (kept with the endpoint's attempts; its health does not change).
  public func test(
    _ name: String, completion: @escaping (Result<WebhookAttemptRecord, WebhookDutyError>) -> Void
  ) {
    guard let endpoint = engine.settings.webhooks[name] else { return completion(.failure(.notFound(name))) }
    guard let send else { return completion(.failure(.senderUnavailable)) }
    let now = engine.clock.now()
    let token = nextToken
    nextToken += 1
    let messageID = "msg_test_\(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))_\(token)"
    tests[token] = (name, messageID, completion)
    send([
      WebhookDispatch(
        token: token, endpoint: endpoint, messageID: messageID, number: 1, message: .test(at: now))
    ])
  }

  /// A test's outcome: kept with the endpoint's attempts, then told to who waits.
  func tested(
    _ test: (
      endpoint: String, messageID: String, done: (Result<WebhookAttemptRecord, WebhookDutyError>) -> Void
    ),
    _ report: WebhookReport
  ) {
    let attempt = WebhookAttemptRecord(
      at: report.at, cursor: nil, messageID: test.messageID, number: 1, outcome: report.attempt,
      duration: report.duration)
    guard var run = runs.removeValue(forKey: test.endpoint) else { return test.done(.success(attempt)) }
    run.state.keep(attempt)
    runs[test.endpoint] = run
    record([test.endpoint: WebhookQueue.Change()]) { _ in test.done(.success(attempt)) }
  }
}
