import Dispatch
import Foundation
import Logging
import TrialCore
import TrialPostgres

/// The daemon as one node of a fleet on PostgreSQL: the shared store, the node's membership
/// (lease, shards), and the engine told of what changes. Membership events arrive on the
/// membership's queue and are carried to the engine's.
public final class FleetNode: FleetMembershipDelegate, @unchecked Sendable {
  // @unchecked: `engine` is set once before the membership starts, then read on `queue`.
  public let repository: PostgresTrialRepository
  public let membership: FleetMembership
  public let shards: ShardMap
  let queue: DispatchQueue
  let logger: Logger
  private var engine: Engine?
  private var follower: FleetLogFollower?
  private var countsTimer: (any DispatchSourceTimer)?
  /// How often the engine's trial counts are read from the shared store.
  static let countsInterval: DispatchTimeInterval = .seconds(5)

  /// Connects, creates or upgrades the schema, and joins the fleet (claiming a first share
  /// of the shards). Nothing fires yet: `attach` the engine, start it, then `start`.
  public init(settings: PostgreSQLSettings, version: String, queue: DispatchQueue, logger: Logger) throws {
    self.queue = queue
    self.logger = logger
    let schemaConnection = try PGConnection(conninfo: settings.connection)
    let outcome = try PostgresSchema.prepare(on: schemaConnection, shards: settings.shards)
    switch outcome {
    case .created: logger.notice("created the trialwatch schema", metadata: ["shards": "\(settings.shards)"])
    case .upgraded(let from):
      logger.notice(
        "upgraded the trialwatch schema", metadata: ["from": "\(from)", "to": "\(PostgresSchema.version)"])
    case .current: break
    }
    shards = ShardMap(count: settings.shards)
    let ownership = ShardOwnership()
    repository = try PostgresTrialRepository(
      conninfo: settings.connection, node: settings.nodeName, shards: shards, ownership: ownership)
    membership = FleetMembership(
      conninfo: settings.connection, name: settings.nodeName, version: version, shards: shards,
      ownership: ownership)
    try membership.join()
  }

  /// What `--check-config` says of the database: a line, and whether a node could start.
  public static func check(_ settings: PostgreSQLSettings) -> (text: String, ok: Bool) {
    do {
      let connection = try PGConnection(conninfo: settings.connection)
      let found = try PostgresSchema.check(on: connection, shards: settings.shards)
      return ("PostgreSQL: connected as node \(settings.nodeName); \(found)\n", true)
    } catch {
      return ("error: PostgreSQL ([PostgreSQL] Connection=): \(error)\n", false)
    }
  }

  /// The fleet's store, for `trialwatchd --import`: the schema created or upgraded first.
  /// Each trial written wakes its shard's owner, which plans it.
  public static func openForImport(_ settings: PostgreSQLSettings) throws -> any TrialRepository {
    try PostgresSchema.prepare(on: try PGConnection(conninfo: settings.connection), shards: settings.shards)
    return try PostgresTrialRepository(
      conninfo: settings.connection, node: settings.nodeName, shards: ShardMap(count: settings.shards))
  }

  /// Lets the engine fire only the shards this node owns.
  public func attach(_ engine: Engine) {
    self.engine = engine
    let ownership = repository.ownership
    let shards = self.shards
    engine.owns = { ownership.owned[shards.shard(of: $0)] != nil }
    engine.resolvesNextSubject = false
    // Deliveries ride in the next wake's transaction when one comes within a second: one of
    // their own would cost three statements on the shared database.
    queue.sync { engine.deliveryRecordWindow = Engine.deliveryRecordDelay }
    membership.delegate = self
    // Its lag, reported with each lease: how overdue its next event is.
    let snapshots = queue.sync { engine.snapshots() }
    let clock = engine.clock
    membership.lag = {
      guard let due = snapshots.current.nextEvent?.due else { return .zero }
      return max(.zero, clock.now().duration(since: due))
    }
  }

  /// Starts the rounds, the wake-ups and the reading of the shared log. After the engine
  /// started.
  public func start() {
    if let engine {
      let follower = FleetLogFollower(engine: engine, engineQueue: queue, logger: logger)
      self.follower = follower
      queue.sync { engine.logFollower = { follower.wake() } }
      follower.wake()
      let repository = self.repository
      let engineQueue = queue
      let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "trialwatch.fleet.counts"))
      timer.setEventHandler { [weak self] in
        guard let counts = try? repository.counts() else { return }
        engineQueue.async { [weak self] in self?.engine?.setCounts(counts) }
      }
      timer.schedule(
        deadline: .now() + Self.countsInterval, repeating: Self.countsInterval, leeway: .seconds(1))
      timer.resume()
      countsTimer = timer
    }
    membership.start()
  }

  /// What this node knows of the fleet, from its last round, with the fleet's trial counts
  /// read now; any thread.
  public func status() -> FleetStatus {
    FleetStatus(
      node: membership.name, shards: repository.ownership.owned.keys.sorted(), shardCount: shards.count,
      nodes: membership.members.map {
        FleetStatus.Node(
          name: $0.name, alive: $0.alive, shards: $0.shards, leaseAge: $0.leaseAge, lag: $0.lag,
          version: $0.version)
      }, counts: try? repository.counts())
  }

  /// Hands this node's shards to the others (on `systemctl stop`).
  public func leave() {
    membership.leave()
  }

  // MARK: FleetMembershipDelegate

  public func fleetShardsChanged(gained: Set<Int>, lost: Set<Int>) {
    logger.notice(
      "shards changed hands", metadata: ["gained": "\(gained.sorted())", "lost": "\(lost.sorted())"])
    let shards = self.shards
    let repository = self.repository
    let alive = Set(membership.members.filter(\.alive).map(\.name))
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { lost.contains(shards.shard(of: $0)) },
        load: { planner in try repository.restore(shards: gained, into: &planner) },
        // What the shards' previous owners took and did not deliver, unless they are alive
        // and deliver it themselves.
        outbox: { try repository.undelivered(shards: gained, takenByOtherThan: alive) })
    }
  }

  public func fleetNodesDied(_ names: Set<String>) {
    logger.notice("nodes stopped renewing their leases", metadata: ["nodes": "\(names.sorted())"])
    let owned = Set(repository.ownership.owned.keys)
    let alive = Set(membership.members.filter(\.alive).map(\.name))
    let repository = self.repository
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { _ in false }, load: { _ in },
        outbox: { try repository.undelivered(shards: owned, takenByOtherThan: alive) })
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
    let owned = Set(repository.ownership.owned.keys)
    let repository = self.repository
    queue.async { [weak self] in
      self?.engine?.shardsChanged(
        lost: { _ in true },
        load: { planner in try repository.restore(shards: owned, into: &planner) },
        outbox: { [] })
    }
    follower?.wake()
  }
}
