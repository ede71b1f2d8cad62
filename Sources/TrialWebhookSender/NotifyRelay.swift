import Systemd
import TrialControl

/// The service manager's notifications, sent from a thread of their own: `sd_notify` blocks
/// while the manager's queue of datagrams is full, and the threads that post and report must
/// never wait for it. What comes while a message is on its way is sent in the next, the newest
/// status line only.
final class NotifyRelay: Sendable {
  private struct Pending {
    var ready = false
    var stopping = false
    var status: String?
    /// Messages asked for and not yet sent (one being sent included).
    var unsent = 0

    var isEmpty: Bool { !ready && !stopping && status == nil }
  }

  private let pending = Monitor(Pending())
  private let sink: any NotifySink

  init(sink: any NotifySink) {
    self.sink = sink
  }

  func start() {
    startThread { [self] in run() }
  }

  /// Sends `READY=1` (if `ready`), `STOPPING=1` (if `stopping`) and `STATUS=status`, in one
  /// message, unless a later call's replaces its status first.
  func send(ready: Bool = false, stopping: Bool = false, status: String? = nil) {
    pending.change { pending in
      pending.ready = pending.ready || ready
      pending.stopping = pending.stopping || stopping
      if let status { pending.status = status }
      pending.unsent += 1
    }
  }

  /// Waits until what was asked for so far has been sent, at most `timeout` (for a stop, before
  /// the exit: a manager that reads nothing does not hold it up for longer).
  func flush(timeout: Duration = .seconds(5)) {
    _ = pending.wait(for: timeout) { $0.unsent == 0 ? () : nil }
  }

  private func run() {
    while true {
      let (states, count) = pending.wait { pending -> ([NotifyState], Int)? in
        guard !pending.isEmpty else { return nil }
        var states: [NotifyState] = []
        if pending.ready { states.append(.ready) }
        if pending.stopping { states.append(.stopping) }
        if let status = pending.status { states.append(.status(status)) }
        let count = pending.unsent
        pending = Pending(unsent: pending.unsent)
        return (states, count)
      }
      _ = try? sink.send(states)
      pending.change { $0.unsent -= count }
    }
  }
}
