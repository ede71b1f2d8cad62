import Foundation
import TrialControl
import TrialCore

/// What a fleet node knows of its fleet, as its last lease round read it: for `GetStatus`,
/// `GetFleet`, `trialwatchctl daemon-status` and `trialwatchctl fleet`.
public struct FleetStatus: Hashable, Sendable {
  public struct Node: Hashable, Sendable {
    public var name: String
    /// Its lease is current and its session holds its life lock.
    public var alive: Bool
    /// How many shards it owns.
    public var shards: Int
    /// Since it last renewed its lease.
    public var leaseAge: Duration?
    /// How late the oldest event due in its shards is, as it last reported (zero: none overdue).
    public var lag: Duration?
    /// The trialwatchd version it runs.
    public var version: String?

    public init(
      name: String, alive: Bool, shards: Int, leaseAge: Duration? = nil, lag: Duration? = nil,
      version: String? = nil
    ) {
      self.name = name
      self.alive = alive
      self.shards = shards
      self.leaseAge = leaseAge
      self.lag = lag
      self.version = version
    }
  }

  /// This node's name.
  public var node: String
  /// The shards this node owns, ascending.
  public var shards: [Int]
  /// The fleet's shard count, fixed when its schema was created.
  public var shardCount: Int
  /// Every node the fleet knows, this one included, by name.
  public var nodes: [Node]
  /// Trials by state over the whole fleet, read from the database when asked (the engine of
  /// a node counts only what it saw); nil when they could not be read.
  public var counts: [TrialState: Int]?

  public init(node: String, shards: [Int], shardCount: Int, nodes: [Node], counts: [TrialState: Int]? = nil) {
    self.node = node
    self.shards = shards
    self.shardCount = shardCount
    self.nodes = nodes
    self.counts = counts
  }
}

extension FleetObject {
  /// The fleet as the wire carries it.
  init(_ status: FleetStatus) {
    self.init(
      node: status.node, shards: status.shards, shardCount: status.shardCount,
      nodes: status.nodes.map {
        FleetNodeObject(
          name: $0.name, alive: $0.alive, shards: $0.shards, leaseAge: $0.leaseAge, lag: $0.lag,
          version: $0.version)
      })
  }
}
