import Dispatch
import FoundationEssentials
import Synchronization
import TrialControl
import TrialControlServer
import TrialCore
import TrialEngine

/// The webhook methods of `io.trialwatch.Trials`: the sender's feed and reports
/// (`trialwatch-webhooks`), and the operators' view and commands (`trialwatchctl webhooks`).
/// What the engine's webhook duty holds is asked on the engine's queue; the attempts kept are
/// read from the store on the caller's thread.
final class WebhookHandlers: @unchecked Sendable {
  // @unchecked: `engine` and `sender` are only touched on `queue`; the store's reads are
  // thread-safe.
  private let engine: Engine
  private let queue: DispatchQueue
  private let queries: StoreQueries
  /// The ServeWebhooks call attached now, by the number it was given.
  private var sender: UInt64?
  private let senders = Atomic<UInt64>(0)

  init(engine: Engine, queue: DispatchQueue, queries: StoreQueries) {
    self.engine = engine
    self.queue = queue
    self.queries = queries
  }

  var routes: [Route] {
    [
      Route(Trials.listWebhooks) { _, done in
        self.onQueue(done) { engine in
          let last = try self.queries.eventLogBounds().last
          return ListWebhooksReply(
            endpoints: engine.webhooks.statuses().map { WebhookEndpointObject($0, last: last) })
        }
      },
      Route(Trials.getWebhookAttempts) { p, done in
        // The engine's copy is ahead of the store's while its last outcomes are being written.
        self.onQueue(done) { engine in
          guard let status = engine.webhooks.status(of: p.name) else {
            throw ControlError.webhookNotFound(p.name)
          }
          return try self.attempts(p, kept: status.state)
        }
      },
      Route(Trials.enableWebhook) { p, done in
        self.onQueue(done) { engine, completion in engine.webhooks.enable(p.name, completion: completion) }
      },
      Route(Trials.replayWebhook) { p, done in
        self.onQueue(done) { engine, completion in
          engine.webhooks.replay(p.name, after: p.after, until: p.until, completion: completion)
        }
      },
      Route(Trials.testWebhook) { p, done in
        let bound = Bound(value: self.engine)
        self.queue.async {
          bound.value.webhooks.test(p.name) { result in
            done(
              result.map { TestWebhookReply(attempt: WebhookAttemptObject($0)) }.mapError { ControlError($0) }
            )
          }
        }
      },
      Route(stream: Trials.serveWebhooks) { _, sink in self.serve(sink) },
      Route(Trials.reportWebhooks) { p, done in
        let reports = p.outcomes.map {
          WebhookReport(token: $0.token, attempt: $0.attempt, at: $0.at, duration: $0.duration.duration)
        }
        let bound = Bound(value: self.engine)
        self.queue.async { bound.value.webhooks.report(reports) }
        done(.success(EmptyReply()))
      },
    ]
  }

  /// Attaches the caller as the sender: the first reply says so, each later one carries the
  /// attempts due; the sender is detached when the call ends.
  private func serve(_ sink: StreamSink<ServeWebhooksReply>) -> @Sendable () -> Void {
    let number = senders.add(1, ordering: .relaxed).newValue
    let bound = Bound(value: engine)
    queue.async { [self] in
      let duty = bound.value.webhooks
      guard !duty.attached else { return sink.fail(.webhookSenderActive()) }
      sender = number
      sink.send(ServeWebhooksReply(requests: []))
      // The bodies are made on the sender's connection, not on the engine's queue.
      duty.attach { dispatches in
        sink.perform {
          sink.sendHere([ServeWebhooksReply(requests: dispatches.map(WebhookRequestObject.init))])
        }
      }
    }
    return { [weak self] in
      guard let self else { return }
      queue.async {
        guard self.sender == number else { return }
        self.sender = nil
        bound.value.webhooks.detach()
      }
    }
  }

  /// The attempts `kept` in memory, else (the endpoint not yet read) those the store keeps.
  private func attempts(_ p: GetWebhookAttemptsParameters, kept: WebhookEndpointState?) throws
    -> GetWebhookAttemptsReply
  {
    let state = try kept ?? queries.repository.read { try $0.webhookEndpoint(named: p.name) }
    var records = state?.attempts ?? []
    if let event = p.event {
      let cursor = EventCursor(event)
      records = records.filter { $0.cursor != nil && ($0.messageID == event || $0.cursor == cursor) }
    }
    return GetWebhookAttemptsReply(attempts: records.map(WebhookAttemptObject.init))
  }

  /// Carries a non-Sendable value across to the engine queue.
  private struct Bound<T>: @unchecked Sendable { let value: T }

  /// A call answered on the engine's queue.
  private func onQueue<R>(_ done: @escaping Completion<R>, _ body: @escaping (Engine) throws -> R) {
    let bound = Bound(value: (engine, body))
    queue.async { done(Self.result { try bound.value.1(bound.value.0) }) }
  }

  /// A change to an endpoint, on the engine's queue, answered with where it stands once durable.
  private func onQueue(
    _ done: @escaping Completion<WebhookEndpointReply>,
    _ body: @escaping (Engine, @escaping (Result<WebhookEndpointStatus, any Error>) -> Void) -> Void
  ) {
    let bound = Bound(value: (engine, body, queries))
    queue.async {
      bound.value.1(bound.value.0) { result in
        done(
          Self.result {
            let last = try bound.value.2.eventLogBounds().last
            return WebhookEndpointReply(endpoint: WebhookEndpointObject(try result.get(), last: last))
          })
      }
    }
  }

  private static func result<T>(_ body: () throws -> T) -> Result<T, ControlError> {
    do {
      return .success(try body())
    } catch let error as WebhookDutyError {
      return .failure(ControlError(error))
    } catch {
      return .failure(ControlError(answering: error))
    }
  }
}

extension ControlError {
  init(_ error: WebhookDutyError) {
    switch error {
    case .notFound(let name): self = .webhookNotFound(name)
    case .senderUnavailable: self = .webhookSenderUnavailable()
    }
  }
}

extension WebhookRequestObject {
  /// The request of an attempt the engine hands out, its body made here.
  init(_ dispatch: WebhookDispatch) {
    let message =
      switch dispatch.message {
      case .event(let event): WebhookMessage(event: EventObject(event))
      case .test(let at): WebhookMessage.test(at: at)
      }
    // Encoding a message of plain values cannot fail; an empty body would be refused by the
    // receiver, never sent as a success.
    let body = (try? message.body()).map { String(decoding: $0, as: UTF8.self) } ?? ""
    self.init(
      token: dispatch.token, endpoint: dispatch.endpoint, messageId: dispatch.messageID,
      number: dispatch.number,
      body: body)
  }
}
