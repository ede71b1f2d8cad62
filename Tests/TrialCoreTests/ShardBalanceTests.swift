import PropertyBased
import Testing
import TrialCore

/// The fleet's shard arithmetic: a trial's shard, each node's share, and that nodes making
/// their own moves from what they read settle on every shard owned once, evenly.
struct ShardBalanceTests {
  @Test func shardOfATrial_IsStableAndSpreadsNeighbouringIDs() {
    let map = ShardMap(count: 16)
    #expect(map.shard(of: TrialID(42)) == map.shard(of: TrialID(42)))
    var counts = [Int](repeating: 0, count: 16)
    for raw in UInt64(1 << 22)..<UInt64(1 << 22) + 16_000 { counts[map.shard(of: TrialID(raw))] += 1 }
    // Consecutive ids (trials started in one millisecond) land on every shard, near evenly.
    #expect(counts.allSatisfy { (800...1_200).contains($0) })
  }

  @Test func targets_OfTheLiveNodes_AddUpToTheShardCount() {
    let alive: Set<Int64> = [3, 7, 9]
    #expect([3, 7, 9].map { ShardBalance.target(of: $0, among: alive, shards: 256) } == [86, 85, 85])
    #expect(ShardBalance.target(of: 4, among: alive, shards: 256) == 0)
  }

  @Test func orphans_OfADeadNode_AreClaimedByTheSurvivorsUpToTheirShares() {
    // Nodes 1, 2, 3 own 4 shards each; 3 died.
    let owners: [Int64?] = (0..<12).map { Int64($0 / 4 + 1) }
    let one = ShardBalance.moves(for: 1, alive: [1, 2], owners: owners)
    let two = ShardBalance.moves(for: 2, alive: [1, 2], owners: owners)
    #expect(one.claims.count == 2 && two.claims.count == 2)
    #expect(Set(one.claims + two.claims) == [8, 9, 10, 11])
    #expect(one.handoffs.isEmpty && two.handoffs.isEmpty)
  }

  @Test func surplus_OfANodeAboveItsShare_IsHandedToTheNewcomer() {
    let owners: [Int64?] = (0..<8).map { $0 < 4 ? 1 : 2 }
    let moves = ShardBalance.moves(for: 1, alive: [1, 2, 3], owners: owners)
    #expect(moves.claims.isEmpty)
    #expect(moves.handoffs == [ShardBalance.Handoff(shard: 3, to: 3)])
    #expect(ShardBalance.moves(for: 3, alive: [1, 2, 3], owners: owners).isEmpty)
  }

  @Test func departure_OfANode_SpreadsItsShardsOverTheOthers() {
    let owners: [Int64?] = [1, 1, 1, 1, 2, 3]
    let handoffs = ShardBalance.departure(of: 1, alive: [1, 2, 3], owners: owners)
    #expect(handoffs.map(\.shard) == [0, 1, 2, 3])
    #expect(handoffs.filter { $0.to == 2 }.count == 2 && handoffs.filter { $0.to == 3 }.count == 2)
    #expect(ShardBalance.departure(of: 1, alive: [1], owners: owners).isEmpty)
  }

  /// Nodes tick in a random order, each applying its moves as the store would (a claim only
  /// of a shard still without a live owner, a hand-off only of a shard it still owns).
  @Test func nodesTickingInAnyOrder_SettleOnEveryShardOwnedOnceAndEvenly() async {
    await propertyCheck(
      count: 200, input: Gen.int(in: 1...64), Gen.int(in: 1...5), Gen.int(in: 0...4), Gen.int(in: 0...1_000)
    ) { shards, nodes, dead, seed in
      var owners = [Int64?](repeating: nil, count: shards)
      // Start from a fleet where `dead` extra nodes owned shards and are gone.
      for shard in 0..<shards { owners[shard] = Int64((shard + seed) % (nodes + dead) + 1) }
      let alive = Set((1...nodes).map(Int64.init))
      var order = Array(alive).sorted()
      var state = UInt64(seed) | 1
      for _ in 0..<(3 * nodes + 3) {
        // A xorshift shuffle: the same order for the same seed.
        for index in order.indices.reversed() {
          state ^= state << 13
          state ^= state >> 7
          state ^= state << 17
          order.swapAt(index, Int(state % UInt64(index + 1)))
        }
        for node in order {
          let moves = ShardBalance.moves(for: node, alive: alive, owners: owners)
          for shard in moves.claims where owners[shard].map({ !alive.contains($0) }) ?? true {
            owners[shard] = node
          }
          for handoff in moves.handoffs where owners[handoff.shard] == node {
            owners[handoff.shard] = handoff.to
          }
        }
      }
      #expect(owners.allSatisfy { $0.map(alive.contains) ?? false })
      for node in alive {
        #expect(owners.count { $0 == node } == ShardBalance.target(of: node, among: alive, shards: shards))
      }
    }
  }
}
