/// How trials are spread over the shards of a fleet: a fixed number of shards, set when the
/// shared store is created; a trial's shard follows from its id alone, so every node agrees.
public struct ShardMap: Hashable, Sendable {
  public let count: Int

  public init(count: Int) {
    precondition(count > 0, "a fleet has at least one shard")
    self.count = count
  }

  /// The trial's shard, in `0..<count`. Trial ids carry their start time in the high bits,
  /// so the id is mixed first (the finalizer of SplitMix64): neighbouring ids land on
  /// unrelated shards.
  public func shard(of id: TrialID) -> Int {
    var x = id.rawValue
    x = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
    x = (x ^ (x >> 27)) &* 0x94d0_49bb_1331_11eb
    x ^= x >> 31
    return Int(x % UInt64(count))
  }
}

/// Which shards a node should take or hand over, from what it read of the fleet: the live
/// nodes and each shard's owner. Every node computes the same targets (the shards divided
/// as evenly as possible, the first nodes by id taking one more), so the fleet settles
/// without a leader: a node over its target hands its surplus straight to nodes under
/// theirs, and a node under its target claims shards whose owner is gone. Pure: the store
/// applies the moves under its fencing, which makes a stale or concurrent move harmless.
public enum ShardBalance {
  /// A shard to pass to another node.
  public struct Handoff: Hashable, Sendable {
    public var shard: Int
    public var to: Int64

    public init(shard: Int, to: Int64) {
      self.shard = shard
      self.to = to
    }
  }

  /// What one node should do now.
  public struct Moves: Hashable, Sendable {
    /// Shards without a live owner to take.
    public var claims: [Int] = []
    /// Shards of this node to hand to another.
    public var handoffs: [Handoff] = []

    public init(claims: [Int] = [], handoffs: [Handoff] = []) {
      self.claims = claims
      self.handoffs = handoffs
    }

    public var isEmpty: Bool { claims.isEmpty && handoffs.isEmpty }
  }

  /// How many of `shards` shards the node should own among `alive` (which contains it).
  public static func target(of node: Int64, among alive: Set<Int64>, shards: Int) -> Int {
    let sorted = alive.sorted()
    guard let position = sorted.firstIndex(of: node) else { return 0 }
    let (base, extra) = shards.quotientAndRemainder(dividingBy: sorted.count)
    return base + (position < extra ? 1 : 0)
  }

  /// The moves for `me`, given the live nodes (which include `me`) and each shard's owner
  /// (nil: none), indexed by shard.
  public static func moves(for me: Int64, alive: Set<Int64>, owners: [Int64?]) -> Moves {
    var moves = Moves()
    guard alive.contains(me) else { return moves }
    var owned: [Int64: [Int]] = [:]
    var orphans: [Int] = []
    for (shard, owner) in owners.enumerated() {
      if let owner, alive.contains(owner) {
        owned[owner, default: []].append(shard)
      } else {
        orphans.append(shard)
      }
    }
    let mine = owned[me] ?? []
    let target = target(of: me, among: alive, shards: owners.count)
    if mine.count > target {
      // The surplus goes to the nodes furthest under their targets, lowest id first.
      var surplus = mine.suffix(mine.count - target)[...]
      for node in alive.sorted() where node != me {
        var deficit = self.target(of: node, among: alive, shards: owners.count) - (owned[node]?.count ?? 0)
        while deficit > 0, let shard = surplus.popFirst() {
          moves.handoffs.append(Handoff(shard: shard, to: node))
          deficit -= 1
        }
      }
    } else if mine.count < target {
      // Nodes start at different places among the orphans, so that two claiming at once
      // mostly take different shards.
      let position = alive.sorted().firstIndex(of: me)!
      let start = orphans.isEmpty ? 0 : position * orphans.count / alive.count
      let rotated = orphans[start...] + orphans[..<start]
      moves.claims = Array(rotated.prefix(target - mine.count))
    }
    // Orphans no other node is short of taking: take them too rather than leave them.
    let othersShort = alive.contains { node in
      node != me && self.target(of: node, among: alive, shards: owners.count) > (owned[node]?.count ?? 0)
    }
    if !othersShort { moves.claims = orphans }
    return moves
  }

  /// Where `me`'s shards go when it leaves: spread over the other live nodes towards their
  /// targets without it. Empty when no other node is alive.
  public static func departure(of me: Int64, alive: Set<Int64>, owners: [Int64?]) -> [Handoff] {
    var others = alive
    others.remove(me)
    guard !others.isEmpty else { return [] }
    var counts: [Int64: Int] = [:]
    for owner in owners { if let owner, others.contains(owner) { counts[owner, default: 0] += 1 } }
    let sorted = others.sorted()
    var handoffs: [Handoff] = []
    for (shard, owner) in owners.enumerated() where owner == me {
      // The node furthest under its target (ties: lowest id).
      let to = sorted.max { a, b in
        let da = target(of: a, among: others, shards: owners.count) - counts[a, default: 0]
        let db = target(of: b, among: others, shards: owners.count) - counts[b, default: 0]
        return da != db ? da < db : a > b
      }!
      counts[to, default: 0] += 1
      handoffs.append(Handoff(shard: shard, to: to))
    }
    return handoffs
  }
}
