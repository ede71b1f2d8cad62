#if canImport(Glibc)
  import Glibc
#endif

/// State shared by threads (the webhooks' sender's, the HTTP gateway's), behind a pthread mutex, with a condition variable to
/// wait on until the state allows something: a thread waiting here sleeps in the kernel (no
/// polling), and wakes only when another thread changes the state and signals. Timed waits
/// count on `CLOCK_MONOTONIC`, never the wall clock.
public final class Monitor<State>: @unchecked Sendable {
  // @unchecked: `state` is only touched with `mutex` held.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var state: State

  public init(_ state: State) {
    self.state = state
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Runs `body` on the state; every waiter looks at the state again afterwards.
  @discardableResult
  public func change<R>(_ body: (inout State) throws -> R) rethrows -> R {
    pthread_mutex_lock(mutex)
    defer {
      pthread_cond_broadcast(condition)
      pthread_mutex_unlock(mutex)
    }
    return try body(&state)
  }

  /// Reads the state without waking anyone.
  public func read<R>(_ body: (State) throws -> R) rethrows -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(state)
  }

  /// Waits until `body` returns a value (it runs with the state locked, first at once, then
  /// after each change), and returns it. Waits for ever if need be.
  public func wait<R>(_ body: (inout State) -> R?) -> R {
    wait(for: nil, body)!
  }

  /// As `wait`, but for at most `timeout`: nil if `body` returned none by then.
  public func wait<R>(for timeout: Duration?, _ body: (inout State) -> R?) -> R? {
    let deadline = timeout.map(Self.deadline)
    pthread_mutex_lock(mutex)
    defer {
      pthread_cond_broadcast(condition)
      pthread_mutex_unlock(mutex)
    }
    while true {
      if let value = body(&state) { return value }
      if var deadline {
        if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return body(&state) }
      } else {
        pthread_cond_wait(condition, mutex)
      }
    }
  }

  /// `CLOCK_MONOTONIC` plus `timeout`, as `pthread_cond_timedwait` reads a deadline.
  private static func deadline(after timeout: Duration) -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let (seconds, attoseconds) = max(timeout, .zero).components
    var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
    var whole = Int(now.tv_sec) + Int(seconds)
    if nanoseconds >= 1_000_000_000 {
      nanoseconds -= 1_000_000_000
      whole += 1
    }
    return timespec(tv_sec: whole, tv_nsec: nanoseconds)
  }
}
