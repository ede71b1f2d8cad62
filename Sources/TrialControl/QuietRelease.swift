/// Runs a release of memory once a process has stayed quiet (nothing out: the webhooks' sender's
/// attempts, the HTTP gateway's requests) for `delay`: a spell of work ends with one wake-up,
/// and a trickle of work does not pay, on each piece, for the code it runs being faulted in again. A thread of its own, asleep on a condition variable while
/// nothing is armed: an idle sender never wakes.
public final class QuietRelease: Sendable {
  private struct State {
    /// Counts every attempt handed out: a quiet spell is one in which it stays the same.
    var activity: UInt64 = 0
    /// The count when the sender last went quiet, while a release waits.
    var armed: UInt64?
  }

  public static let delay = Duration.seconds(2)

  private let state = Monitor(State())
  private let delay: Duration
  private let release: @Sendable () -> Void

  public init(delay: Duration = QuietRelease.delay, release: @escaping @Sendable () -> Void) {
    self.delay = delay
    self.release = release
  }

  public func start() {
    startThread { [self] in run() }
  }

  /// Work came (an attempt handed out, a request): a quiet spell waiting for its release is over.
  public func activity() {
    state.change { state in
      state.activity &+= 1
      state.armed = nil
    }
  }

  /// Nothing is out: the release comes after `delay`, unless work comes first.
  public func quiet() {
    state.change { $0.armed = $0.activity }
  }

  private func run() {
    while true {
      let armed = state.wait { $0.armed }
      // Still quiet after the delay (the count unchanged, still armed): release, once.
      let stayed =
        state.wait(for: delay) { state -> Bool? in
          state.armed == armed && state.activity == armed ? nil : false
        } ?? true
      guard stayed else { continue }
      let due = state.change { state -> Bool in
        guard state.armed == armed else { return false }
        state.armed = nil
        return true
      }
      if due { release() }
    }
  }
}
