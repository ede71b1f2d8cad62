import Logging
import Synchronization
import TrialControl

/// Sends the outcomes to the daemon with `ReportWebhooks`, from a thread of its own, on a
/// connection of its own (the first is taken by the `ServeWebhooks` stream): whatever
/// accumulated while the previous call was in flight goes in the next, up to `batchLimit`.
///
/// Outcomes belong to a session, one attachment of the stream; only the current session's are
/// sent, on a connection made during it. When a session ends the daemon takes back every
/// attempt out and makes it again, and a restarted daemon counts its tokens from 1 again: an
/// outcome of an ended session is dropped, never sent, so that it cannot settle another attempt.
final class OutcomeReporter: Sendable {
  /// The most outcomes in one call (well within the daemon's 1 MiB message).
  static let batchLimit = 500
  /// The longest wait for connecting and for the reply of one call.
  static let callTimeout = 60.0

  private struct State {
    /// The session attached now; 0 while none is.
    var session: UInt64 = 0
    var pending: [WebhookOutcomeObject] = []
    /// Outcomes in the call being made.
    var sending = 0
    /// Set by `drain` when it gives up, and by a stop: what fails is dropped, not retried.
    var stopping = false
  }

  private let state = Monitor(State())
  private let path: String
  private let logger: Logger
  private let afterCall = Mutex<(@Sendable () -> Void)?>(nil)

  init(socketPath: String, logger: Logger) {
    path = socketPath
    self.logger = logger
  }

  /// `body` runs after each call, on the reporter's thread (for the status line).
  func onReport(_ body: @escaping @Sendable () -> Void) {
    afterCall.withLock { $0 = body }
  }

  private func reported() {
    afterCall.withLock { $0 }?()
  }

  func start() {
    startThread { [self] in run() }
  }

  /// A session began: outcomes of it are sent from now on.
  func begin(session: UInt64) {
    state.change { state in
      state.session = session
      state.pending = []
    }
  }

  /// `session` ended: its outcomes not yet sent are dropped.
  func end(session: UInt64) {
    state.change { state in
      guard state.session == session else { return }
      state.session = 0
      state.pending = []
    }
  }

  func add(_ outcome: WebhookOutcomeObject, session: UInt64) {
    state.change { state in
      guard state.session == session, session != 0 else { return }
      state.pending.append(outcome)
    }
  }

  /// Outcomes not yet sent, and in the call being made.
  var count: Int { state.read { $0.pending.count + $0.sending } }

  /// Waits until every outcome of the session has been sent (or the session ended, or a call
  /// failed: then they are dropped). For a stop, after the last attempt was made.
  func drain() {
    state.change { $0.stopping = true }
    state.wait { state in state.session == 0 || (state.pending.isEmpty && state.sending == 0) ? () : nil }
  }

  private func run() {
    var client: VarlinkClient?
    var clientSession: UInt64 = 0
    var retry = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
    var failing = false
    while true {
      let (session, batch) = state.wait { state -> (UInt64, [WebhookOutcomeObject])? in
        guard state.session != 0, !state.pending.isEmpty else { return nil }
        let batch = Array(state.pending.prefix(Self.batchLimit))
        state.pending.removeFirst(batch.count)
        state.sending = batch.count
        return (state.session, batch)
      }
      if clientSession != session {
        client?.close()
        client = nil
      }
      let failure: VarlinkClientError?
      do throws(VarlinkClientError) {
        try send(batch, on: &client)
        clientSession = session
        failure = nil
      } catch {
        failure = error
      }
      guard let failure else {
        state.change { $0.sending = 0 }
        if failing {
          failing = false
          logger.notice("outcomes reported again")
        }
        retry.reset()
        reported()
        continue
      }
      // A refusal is not sent again: the daemon makes those attempts again in time.
      let again = failure.kind != .remote
      if !again || !failing {
        logger.error(
          "cannot report outcomes to the daemon",
          metadata: [
            "error": "\(failure)", "outcomes": "\(batch.count)",
            "next": "\(again ? "sent again" : "dropped: the daemon makes those attempts again")",
          ])
      }
      let stopping = state.change { state -> Bool in
        state.sending = 0
        if again && !state.stopping && state.session == session {
          state.pending.insert(contentsOf: batch, at: 0)
        }
        return state.stopping
      }
      reported()
      guard again, !stopping else { continue }
      failing = true
      // Until the next try, or the session's end, whichever first.
      _ = state.wait(for: retry.next()) { state in state.session != session ? () : nil }
    }
  }
}

extension OutcomeReporter {
  /// Sends `batch` on `client`, or on a new connection when there is none or the call on it
  /// failed (the daemon closes a connection idle for its IdleTimeout=): outcomes the daemon
  /// already had are ignored, so sending them again is harmless. A connection that fails is
  /// closed and left nil.
  fileprivate func send(_ batch: [WebhookOutcomeObject], on client: inout VarlinkClient?)
    throws(VarlinkClientError)
  {
    let parameters = ReportWebhooksParameters(outcomes: batch)
    if let reused = client {
      do {
        _ = try reused.call(Trials.reportWebhooks, parameters)
        return
      } catch {
        if error.kind == .remote { throw error }
        reused.close()
        client = nil
      }
    }
    let fresh = try VarlinkClient(path: path, timeout: Self.callTimeout)
    client = fresh
    do {
      _ = try fresh.call(Trials.reportWebhooks, parameters)
    } catch {
      if error.kind != .remote {
        fresh.close()
        client = nil
      }
      throw error
    }
  }
}

/// Delays that double from `initial` up to `maximum`.
struct Backoff: Hashable, Sendable {
  let initial: Duration
  let maximum: Duration
  private var current: Duration

  init(initial: Duration, maximum: Duration) {
    self.initial = initial
    self.maximum = max(maximum, initial)
    current = initial
  }

  mutating func next() -> Duration {
    let delay = current
    current = current >= maximum / 2 ? maximum : current * 2
    return delay
  }

  mutating func reset() {
    current = initial
  }
}
