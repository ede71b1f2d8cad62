import Dispatch
import Synchronization

/// The shards a fleet node owns and their epochs: set by the fleet membership, read by
/// every transaction (the fence and the outbox). The node trusts them until a moment on its
/// own monotonic clock (`trust(until:)`, set at each renewal of its lease): past it, it owns
/// nothing until the next renewal, whatever the database would say.
public final class ShardOwnership: Sendable {
  private struct State {
    var owned: [Int: Int64] = [:]
    var until: UInt64 = .max
  }

  private let state = Mutex(State())

  public init() {}

  public var owned: [Int: Int64] {
    let now = DispatchTime.now().uptimeNanoseconds
    return state.withLock { now < $0.until ? $0.owned : [:] }
  }

  /// Whether the node owns `shard` now: without copying the table, for a look-up per trial.
  public func owns(_ shard: Int) -> Bool {
    let now = DispatchTime.now().uptimeNanoseconds
    return state.withLock { now < $0.until && $0.owned[shard] != nil }
  }

  public func set(_ owned: [Int: Int64]) { state.withLock { $0.owned = owned } }

  /// Trusts the shards until `uptime` (`DispatchTime` nanoseconds).
  public func trust(until uptime: UInt64) { state.withLock { $0.until = uptime } }
}
