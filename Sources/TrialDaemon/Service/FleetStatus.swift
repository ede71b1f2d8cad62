import TrialControl
import TrialCore
import TrialEngine

/// What a fleet node knows of its fleet, as its last lease round read it: the fleet as the
/// wire carries it (`FleetObject`, for `GetFleet`, `trialwatchctl fleet`), and the fleet's
/// trial counts for `GetStatus` and `trialwatchctl daemon-status`.
public struct FleetStatus: Hashable, Sendable {
  public var fleet: FleetObject
  /// Trials by state over the whole fleet, read from the database when asked (the engine of
  /// a node counts only what it saw); nil when they could not be read.
  public var counts: [TrialState: Int]?

  public init(fleet: FleetObject, counts: [TrialState: Int]? = nil) {
    self.fleet = fleet
    self.counts = counts
  }
}
