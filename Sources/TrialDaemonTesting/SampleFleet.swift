import TrialDaemon

extension FleetStatus {
  /// A fleet node as the tests show it: `node-a`, owning 9 of 16 shards, beside `node-b`,
  /// whose lease ran out.
  public static let sample = FleetStatus(
    node: "node-a", shards: [0, 1, 2, 3, 9, 12, 13, 14, 15], shardCount: 16,
    nodes: [
      FleetStatus.Node(
        name: "node-a", alive: true, shards: 9, leaseAge: .seconds(2), lag: .zero, version: "0.2.0"),
      FleetStatus.Node(name: "node-b", alive: false, shards: 7, leaseAge: .seconds(95)),
    ])
}
