import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Who may use an open store at once, within the process: any number of read transactions
/// together with the one write transaction; the map's growth and closing alone.
///
/// - Reads hold `shared` (a readers-writer lock, writers preferred, so that a map that must
///   grow is not starved by a stream of reads), taken once per thread: a read inside a read
///   (or inside the write) on the same thread does not take it again. Each read also takes
///   one of `readers` places, so that no more reads run at once than LMDB has reader slots:
///   one more waits for a place instead of failing.
/// - The write holds `writer` (a mutex) for its whole length, and `shared` exclusively only
///   while the map grows (LMDB allows `mdb_env_set_mapsize` only with no transaction open in
///   the process). Closing holds both.
/// - What the current thread holds is kept in a thread-specific value (a POSIX key of this
///   gate's own), so that a write inside a read, or inside a write, is refused instead of
///   waiting for itself.
final class StoreGate: @unchecked Sendable {
  // @unchecked: the pthread objects are thread-safe; they are allocated once and never move.
  private let shared: UnsafeMutablePointer<pthread_rwlock_t>
  private let writer: UnsafeMutablePointer<pthread_mutex_t>
  private var key = pthread_key_t()
  private let readers: DispatchSemaphore

  /// What the current thread holds of this store: its reads in progress, and whether it is
  /// writing (kept as one integer in the thread-specific value).
  private struct Held {
    var reads: Int
    var writing: Bool
  }

  /// `readerPlaces`: the most reads at once (LMDB's reader slots, less a margin).
  init(readerPlaces: Int) {
    shared = .allocate(capacity: 1)
    var attributes = pthread_rwlockattr_t()
    pthread_rwlockattr_init(&attributes)
    pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
    pthread_rwlock_init(shared, &attributes)
    pthread_rwlockattr_destroy(&attributes)
    writer = .allocate(capacity: 1)
    pthread_mutex_init(writer, nil)
    pthread_key_create(&key, nil)
    readers = DispatchSemaphore(value: max(1, readerPlaces))
  }

  deinit {
    pthread_key_delete(key)
    pthread_rwlock_destroy(shared)
    shared.deallocate()
    pthread_mutex_destroy(writer)
    writer.deallocate()
  }

  private var held: Held {
    get {
      let raw = Int(bitPattern: pthread_getspecific(key))
      return Held(reads: raw >> 1, writing: raw & 1 == 1)
    }
    set {
      let raw = newValue.reads << 1 | (newValue.writing ? 1 : 0)
      pthread_setspecific(key, UnsafeRawPointer(bitPattern: raw))
    }
  }

  /// Runs `body` as a read: alongside other reads and the write, never during growth or close.
  func read<R>(_ body: () throws -> R) rethrows -> R {
    var state = held
    if state.reads == 0 && !state.writing {
      readers.wait()
      pthread_rwlock_rdlock(shared)
    }
    state.reads += 1
    held = state
    defer {
      var state = held
      state.reads -= 1
      held = state
      if state.reads == 0 && !state.writing {
        pthread_rwlock_unlock(shared)
        readers.signal()
      }
    }
    return try body()
  }

  /// Runs `body` as the write: one at a time. `misuse` is thrown for a write that the current
  /// thread starts inside a read or a write of this store.
  func write<R>(misuse: (String) -> any Error, _ body: () throws -> R) throws -> R {
    let state = held
    if state.writing { throw misuse("a write transaction was started inside another") }
    if state.reads > 0 { throw misuse("a write transaction was started inside a read transaction") }
    pthread_mutex_lock(writer)
    held = Held(reads: 0, writing: true)
    defer {
      held = Held(reads: 0, writing: false)
      pthread_mutex_unlock(writer)
    }
    return try body()
  }

  /// Runs `body` with no transaction open in the process: from within `write` only (the map's
  /// growth, between two attempts at a transaction).
  func exclusively<R>(_ body: () throws -> R) rethrows -> R {
    pthread_rwlock_wrlock(shared)
    defer { pthread_rwlock_unlock(shared) }
    return try body()
  }

  /// Runs `body` alone: no read, no write (closing the store).
  func alone<R>(_ body: () throws -> R) rethrows -> R {
    pthread_mutex_lock(writer)
    defer { pthread_mutex_unlock(writer) }
    return try exclusively(body)
  }
}
