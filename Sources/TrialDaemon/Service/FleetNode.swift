import Dispatch
import FoundationEssentials
import Logging
import TrialControl
import TrialCore
import TrialEngine

/// The daemon as one node of a fleet: the fleet's services (`FleetServices`: the shared
/// store, ownership, liveness), and the engine told of what changes. Membership events arrive
/// on the membership's queue and are carried to the engine's.
public final class FleetNode: FleetMembershipDelegate, @unchecked Sendable {
  // @unchecked: `engine` is set once before the membership starts, then read on `queue`.
  public let fleet: any FleetServices
  let queue: DispatchQueue
  let logger: Logger
  private var engine: Engine?
  private var follower: FleetLogFollower?
  private var countsTimer: (any DispatchSourceTimer)?
  /// How often the engine's trial counts are read from the shared store.
  static let countsInterval: DispatchTimeInterval = .seconds(5)

  /// `fleet` has joined (claimed a first share of the shards); nothing fires yet: `attach`
  /// the engine, start it, then `start`.
  public init(fleet: any FleetServices, queue: DispatchQueue, logger: Logger) {
    self.fleet = fleet
    self.queue = queue
    self.logger = logger
  }

  /// Lets the engine fire only the shards this node owns.
  public func attach(_ engine: Engine) {
    self.engine = engine
    let fleet = self.fleet
    // Deliveries ride in the next wake's transaction when one comes within a second: one of
    // their own would cost three statements on the shared database.
    queue.sync { engine.fleet = FleetRole(owns: { fleet.owns($0) }) }
    fleet.delegate = self
    // Its lag, reported with each lease: how overdue its next event is.
    let snapshots = queue.sync { engine.snapshots() }
    let clock = engine.clock
    fleet.lag = {
      guard let due = snapshots.current.nextEvent?.due else { return .zero }
      return max(.zero, clock.now().duration(since: due))
    }
  }

  /// Starts the rounds, the wake-ups and the reading of the shared log. After the engine
  /// started.
  public func start() {
    if let engine, let demand = queue.sync(execute: { engine.fleet?.demand }) {
      let follower = FleetLogFollower(engine: engine, demand: demand, engineQueue: queue, logger: logger)
      self.follower = follower
      queue.sync { engine.fleet?.followLog = { follower.wake() } }
      follower.wake()
      let fleet = self.fleet
      let engineQueue = queue
      let repository = engine.repository
      let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "trialwatch.fleet.counts"))
      timer.setEventHandler { [weak self] in
        guard let counts = try? fleet.counts() else { return }
        // The cohorts count every node's trials by plan (the engine counts only its own changes).
        let byPlan = try? repository.read { try $0.cohorts(from: .min, through: .max) }
        engineQueue.async { [weak self] in
          self?.engine?.setCounts(counts, byPlan: byPlan.map(OpenTrialsByPlan.init(cohorts:)))
        }
      }
      timer.schedule(
        deadline: .now() + Self.countsInterval, repeating: Self.countsInterval, leeway: .seconds(1))
      timer.resume()
      countsTimer = timer
    }
    fleet.start()
  }

  /// What this node knows of the fleet, from its last round, with the fleet's trial counts
  /// read now; any thread.
  public func status() -> FleetStatus {
    FleetStatus(
      fleet: FleetObject(
        node: fleet.nodeName, shards: fleet.ownedShards, shardCount: fleet.shards.count,
        nodes: fleet.members.map {
          FleetNodeObject(
            name: $0.name, alive: $0.alive, shards: $0.shards, leaseAge: $0.leaseAge, lag: $0.lag,
            version: $0.version)
        }), counts: try? fleet.counts())
  }

  /// Hands this node's shards to the others (on `systemctl stop`).
  public func leave() {
    fleet.leave()
  }

  // MARK: FleetMembershipDelegate

  public func fleetShardsChanged(gained: Set<Int>, lost: Set<Int>) {
    logger.notice(
      "shards changed hands", metadata: ["gained": "\(gained.sorted())", "lost": "\(lost.sorted())"])
    let fleet = self.fleet
    let others = othersAlive()
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { lost.contains(fleet.shards.shard(of: $0)) },
        load: { planner in try fleet.restore(shards: gained, into: &planner) },
        // What the shards' previous owners took and did not deliver, unless they are alive
        // and deliver it themselves; and what this node took there and did not deliver (the
        // engine leaves out what its delivery queue holds).
        outbox: { try fleet.undelivered(shards: gained, takenByOtherThan: others) })
    }
  }

  public func fleetNodesDied(_ names: Set<String>) {
    logger.notice("nodes stopped renewing their leases", metadata: ["nodes": "\(names.sorted())"])
    let fleet = self.fleet
    let owned = Set(fleet.ownedShards)
    let alive = Set(fleet.members.filter(\.alive).map(\.name))
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { _ in false }, load: { _ in },
        outbox: { try fleet.undelivered(shards: owned, takenByOtherThan: alive) })
    }
  }

  public func fleetTrialsChanged(_ ids: [TrialID]) {
    queue.async { [weak self] in self?.engine?.refresh(ids) }
  }

  public func fleetLogAdvanced() {
    follower?.wake()
  }

  public func fleetRoundFailed(_ error: (any Error)?) {
    if let error {
      logger.error(
        "cannot renew this node's lease; it stops firing when the lease runs out",
        metadata: ["error": "\(error)"])
    } else {
      logger.notice("renewing this node's lease again")
    }
  }

  public func fleetReconnected() {
    logger.notice("reconnected to PostgreSQL: reloading the shards this node owns")
    let fleet = self.fleet
    let owned = Set(fleet.ownedShards)
    let others = othersAlive()
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { _ in true },
        load: { planner in try fleet.restore(shards: owned, into: &planner) },
        // A commit whose connection was lost may have gone through (a failover, a restart
        // of the server): its events are in the ledger, undelivered, and this node took
        // them for failed. They are delivered now, with their ids.
        outbox: { try fleet.undelivered(shards: owned, takenByOtherThan: others) })
    }
    follower?.wake()
  }

  /// The live nodes but this one, as the last round read them: they deliver what they took.
  private func othersAlive() -> Set<String> {
    Set(fleet.members.filter { $0.alive && $0.name != fleet.nodeName }.map(\.name))
  }
}
