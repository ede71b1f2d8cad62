/// A daemon's part in a fleet, as the store the nodes share provides it: the store itself,
/// which shards this node owns, which nodes are alive, and the reads only a fleet makes. The
/// daemon works against this and the repository contract alone; the PostgreSQL store
/// (`PostgresFleet`) is the one implementation.
public protocol FleetServices: StoreServices {
  /// The shared store, under the contract every store keeps.
  var repository: any TrialRepository { get }
  /// This node's name among the fleet's.
  var nodeName: String { get }
  /// How the trials are spread over the shards.
  var shards: ShardMap { get }
  /// Ownership: whether this node owns `shard` now (nothing past its lease); any thread.
  func owns(shard: Int) -> Bool
  /// The shards this node owns now, ascending.
  var ownedShards: [Int] { get }
  /// Leases this node renewed since it started.
  var renewals: Int { get }
  /// Times since it started this node let go of its shards because its lease ran out.
  var leaseLosses: Int { get }
  /// Liveness: every node the fleet knows, this one included, as the last round read it.
  var members: [FleetMember] { get }
  /// Told of what changes, on the membership's own queue.
  var delegate: (any FleetMembershipDelegate)? { get set }
  /// How overdue this node's next event is, reported with each renewal. Set before `start`.
  var lag: (@Sendable () -> Duration)? { get set }
  /// Starts the rounds: renewing the lease, moving shards, hearing the other nodes.
  func start()
  /// Hands this node's shards to the others (on `systemctl stop`).
  func leave()
  /// Trials by state over the whole fleet (an engine counts only its own changes).
  func counts() throws -> [TrialState: Int]
  /// Plans the active trials of `shards` (another node's until now); returns how many.
  @discardableResult
  func restore(shards: Set<Int>, into planner: inout Planner) throws -> Int
  /// The entries of `shards` taken but not delivered by nodes other than `nodes` (those
  /// deliver their own), in id order: a shard's new owner delivers what a dead node took.
  func undelivered(shards: Set<Int>, takenByOtherThan nodes: Set<String>) throws -> [LedgerEntry]
}

extension FleetServices {
  /// Whether this node fires the trial's events: it owns the trial's shard.
  public func owns(_ id: TrialID) -> Bool { owns(shard: shards.shard(of: id)) }
}

/// One node of a fleet as the last round of the membership read it.
public struct FleetMember: Hashable, Sendable {
  public var id: Int64
  public var name: String
  /// Its lease is current and its session holds its life lock.
  public var alive: Bool
  /// Since the lease was last renewed.
  public var leaseAge: Duration?
  /// How many shards it owns.
  public var shards: Int
  /// The trialwatchd version it runs.
  public var version: String?
  /// How overdue the node's next event was at its last round (zero: none overdue).
  public var lag: Duration?

  public init(
    id: Int64, name: String, alive: Bool, leaseAge: Duration? = nil, shards: Int, version: String? = nil,
    lag: Duration? = nil
  ) {
    self.id = id
    self.name = name
    self.alive = alive
    self.leaseAge = leaseAge
    self.shards = shards
    self.version = version
    self.lag = lag
  }
}

/// What the membership tells the node, on the membership's queue.
public protocol FleetMembershipDelegate: AnyObject, Sendable {
  /// Ownership changed (`owns(shard:)` already answers for the new shards): plan the gained
  /// shards' trials, forget the lost ones'.
  func fleetShardsChanged(gained: Set<Int>, lost: Set<Int>)
  /// Another node changed these trials.
  func fleetTrialsChanged(_ ids: [TrialID])
  /// The event log grew (on any node).
  func fleetLogAdvanced()
  /// The connection to the database was lost and is back: notifications may have been
  /// missed; re-read what the node owns and the log.
  func fleetReconnected()
  /// A round failed (once per spell of failures, and when they end: `error` nil).
  func fleetRoundFailed(_ error: (any Error)?)
  /// These nodes were alive at the last round and are not now: what they took and did not
  /// deliver is for the owners of its shards to deliver.
  func fleetNodesDied(_ names: Set<String>)
}
