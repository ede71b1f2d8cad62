import FoundationEssentials
import TrialCore

// The fleet a daemon is a node of, as GetStatus and GetFleet carry it: several trialwatchd
// sharing their trials in one PostgreSQL store, each firing the events of the shards it owns.

/// One node of a fleet (`io.trialwatch.Trials.FleetNode`).
public struct FleetNodeObject: Codable, Hashable, Sendable {
  public var name: String
  /// Its lease is current and its session holds its life lock.
  public var alive: Bool
  /// How many shards it owns.
  public var shards: Int
  /// Since it last renewed its lease.
  public var leaseAge: Span?
  /// How late the oldest event due in its shards is, as it last reported (zero: none overdue).
  public var lag: Span?
  /// The trialwatchd version it runs.
  public var version: String?

  public init(
    name: String, alive: Bool, shards: Int, leaseAge: Duration? = nil, lag: Duration? = nil,
    version: String? = nil
  ) {
    self.name = name
    self.alive = alive
    self.shards = shards
    self.leaseAge = leaseAge.map(Span.init)
    self.lag = lag.map(Span.init)
    self.version = version
  }
}

/// A fleet as one of its nodes knows it (`io.trialwatch.Trials.Fleet`).
public struct FleetObject: Codable, Hashable, Sendable {
  /// The node that answered.
  public var node: String
  /// The shards it owns, ascending.
  public var shards: [Int]
  /// The fleet's shard count.
  public var shardCount: Int
  /// Every node, the one that answered included, by name.
  public var nodes: [FleetNodeObject]

  public init(node: String, shards: [Int], shardCount: Int, nodes: [FleetNodeObject]) {
    self.node = node
    self.shards = shards
    self.shardCount = shardCount
    self.nodes = nodes
  }

  /// Shards as compact ranges, ascending: `0-3,9,12-15`; `none` for none.
  public static func ranges(_ shards: [Int]) -> String {
    var parts: [String] = []
    var run: (first: Int, last: Int)?
    for shard in Set(shards).sorted() {
      if let current = run, shard == current.last + 1 {
        run = (current.first, shard)
        continue
      }
      if let current = run {
        parts.append(current.first == current.last ? "\(current.first)" : "\(current.first)-\(current.last)")
      }
      run = (shard, shard)
    }
    if let current = run {
      parts.append(current.first == current.last ? "\(current.first)" : "\(current.first)-\(current.last)")
    }
    return parts.isEmpty ? "none" : parts.joined(separator: ",")
  }
}

/// The reply of GetFleet: nil when the daemon stores its trials on its own host.
public struct GetFleetReply: Codable, Hashable, Sendable {
  public var fleet: FleetObject?

  public init(fleet: FleetObject?) {
    self.fleet = fleet
  }
}
