import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Turns SIGHUP, SIGTERM and SIGINT into calls, made one at a time on the main thread.
///
/// The signals are blocked in every thread and taken with `sigwaitinfo(2)` by the main thread,
/// which has nothing else to do once the daemon runs. Dispatch's own signal sources are not
/// used: `dispatchMain()` parks the main thread in `sigsuspend` with every signal unblocked,
/// so a signal can land on the main thread instead of Dispatch's `signalfd`, and be lost.
public struct SignalWatcher: Sendable {
  public typealias Handler = @Sendable () -> Void

  private let handlers: [Int32: Handler]

  /// - Parameter handlers: run on the thread that calls `waitForever()`, in arrival order; a
  ///   handler that hands work to a queue does so itself.
  public init(handlers: [Int32: Handler]) {
    self.handlers = handlers
  }

  /// The watched signals, as a set.
  private var watched: sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for signo in handlers.keys { sigaddset(&set, signo) }
    return set
  }

  /// Sets the calling thread's mask to exactly the watched signals: they are blocked, and
  /// nothing else a parent may have blocked stays blocked (a mask survives `exec`). Call it on
  /// the main thread before any other thread exists, so every thread inherits it (and
  /// Dispatch's threads block every signal of their own accord). Blocked, a signal waits for
  /// `waitForever()` even when it arrives before that runs.
  public func blockWatchedSignals() {
    var mask = watched
    pthread_sigmask(SIG_SETMASK, &mask, nil)
  }

  /// Takes each watched signal as it arrives and runs its handler, in arrival order. Never
  /// returns; a handler ends the process when it should.
  public func waitForever() -> Never {
    var watched = self.watched
    while true {
      let signo = sigwaitinfo(&watched, nil)
      guard signo > 0, let handler = handlers[signo] else { continue }  // EINTR
      handler()
    }
  }
}
