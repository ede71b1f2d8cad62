import TrialControl
import TrialDaemon

extension FleetStatus {
  /// A fleet of two nodes, the second dead, as the tests of GetStatus, GetFleet and
  /// `trialwatchctl fleet` show it.
  public static let twoNodes = FleetStatus(
    fleet: FleetObject(
      node: "node-a", shards: [0, 1, 2, 3, 9, 12, 13, 14, 15], shardCount: 16,
      nodes: [
        FleetNodeObject(
          name: "node-a", alive: true, shards: 9, leaseAge: .seconds(2), lag: .zero, version: "0.2.0"),
        FleetNodeObject(name: "node-b", alive: false, shards: 7, leaseAge: .seconds(95)),
      ]))
}
