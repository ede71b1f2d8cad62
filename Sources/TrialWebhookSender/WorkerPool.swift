import TrialControl

/// The attempts waiting for a worker, and the workers: up to `limit` threads, each started when
/// a request finds no worker free (none before the first request), each making one attempt at a
/// time with its own `AttemptMaker`, handing each outcome to `report`. A worker without work
/// sleeps on the condition variable.
final class WorkerPool: Sendable {
  /// A request of one attachment (`session`) to the daemon.
  struct Item: Sendable {
    var session: UInt64
    var request: WebhookRequestObject
  }

  private struct State {
    var waiting: [Item] = []
    /// The first item of `waiting` not yet taken.
    var head = 0
    /// Attempts being made.
    var busy = 0
    /// Workers free to take a request (started and not yet waiting included).
    var idle = 0
    var threads = 0
    var accepting = true

    var queued: Int { waiting.count - head }

    mutating func take() -> Item? {
      guard head < waiting.count else { return nil }
      let item = waiting[head]
      head += 1
      if head == waiting.count {
        waiting.removeAll()
        head = 0
      } else if head >= 1024 && head * 2 >= waiting.count {
        waiting.removeFirst(head)
        head = 0
      }
      return item
    }
  }

  private let state = Monitor(State())
  private let limit: Int
  private let settings: AttemptSettings
  private let secrets: SecretCache
  private let report: @Sendable (UInt64, WebhookOutcomeObject) -> Void

  /// - Parameter report: called by the worker with each outcome and the session of its request.
  init(
    workers limit: Int, settings: AttemptSettings, secrets: SecretCache,
    report: @escaping @Sendable (UInt64, WebhookOutcomeObject) -> Void
  ) {
    self.limit = max(limit, 1)
    self.settings = settings
    self.secrets = secrets
    self.report = report
  }

  /// Queues `requests` of `session`; nothing once `stop` was called.
  func put(_ requests: [WebhookRequestObject], session: UInt64) {
    guard !requests.isEmpty else { return }
    let start = state.change { state -> Int in
      guard state.accepting else { return 0 }
      state.waiting += requests.map { Item(session: session, request: $0) }
      let wanted = min(state.queued - state.idle, limit - state.threads)
      guard wanted > 0 else { return 0 }
      state.threads += wanted
      state.idle += wanted
      return wanted
    }
    for _ in 0..<start { startThread { [self] in work() } }
  }

  /// Forgets the requests of `session` no worker has taken: the daemon took them back when the
  /// session ended.
  func drop(session: UInt64) {
    state.change { state in
      state.waiting = state.waiting[state.head...].filter { $0.session != session }
      state.head = 0
    }
  }

  /// Takes no more requests and forgets those waiting; the attempts being made go on.
  func stop() {
    state.change { state in
      state.accepting = false
      state.waiting.removeAll()
      state.head = 0
    }
  }

  /// Waits until no request waits and no attempt is being made: every request taken has been
  /// reported (after `stop`, which forgets those waiting: until the last attempt is reported).
  func waitIdle() {
    state.wait { $0.queued + $0.busy == 0 ? () : nil }
  }

  /// Requests waiting and attempts being made.
  var count: Int { state.read { $0.queued + $0.busy } }

  /// How many worker threads were started.
  var threads: Int { state.read { $0.threads } }

  private func work() {
    let maker = AttemptMaker(settings: settings, secrets: secrets)
    while let item = next() {
      let outcome = maker.outcome(of: item.request)
      report(item.session, outcome)
      state.change { state in
        state.busy -= 1
        state.idle += 1
      }
    }
  }

  /// The next request, waiting for one; nil once the pool stopped.
  private func next() -> Item? {
    state.wait { state -> Item?? in
      guard state.accepting else {
        state.idle -= 1
        state.threads -= 1
        return .some(nil)
      }
      guard let item = state.take() else { return nil }
      state.idle -= 1
      state.busy += 1
      return .some(item)
    }
  }
}
