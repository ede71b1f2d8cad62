import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TrialCore

/// One node of the fleet: its row and life lock, its lease, and its share of the shards.
///
/// Every round (`tick`, 250 ms) is one statement when nothing changed: it renews the node's
/// lease on the database's clock, reads which nodes are alive (lease not run out, and the
/// node's session advisory lock held: a killed node's lock goes with its connection) and the
/// shard table's version (the sum of the epochs, which only grow). Only when that version
/// moved, a node died or came, or a move of this node's is still to make, does the round read
/// who owns each shard and make this node's moves (`ShardBalance`) in a transaction: claiming
/// shards without a live owner, handing surplus to nodes under their share. Each move bumps
/// the shard's epoch, the fencing token every fire is checked against. The same connection
/// `LISTEN`s for the wake-ups.
public final class FleetMembership: @unchecked Sendable {
  // @unchecked: mutable state is touched only on `queue`.
  public struct Settings: Sendable {
    /// How long a renewed lease lasts, on the database's clock.
    public var lease: Duration = .milliseconds(1500)
    /// How often the lease is renewed and the fleet read: one statement each time when
    /// nothing changed. A killed node is noticed within one round (its life lock is gone), a
    /// paused one within one round after its lease ran out.
    public var tick: Duration = .milliseconds(250)
    /// This node trusts its ownership until this long before its lease could have run out,
    /// by its own monotonic clock since the last renewal.
    public var margin: Duration = .milliseconds(300)

    public init() {}
  }

  public let name: String
  public let version: String
  public let ownership: ShardOwnership
  public let shards: ShardMap
  let conninfo: String
  let settings: Settings
  let queue = DispatchQueue(label: "trialwatch.fleet")
  public weak var delegate: (any FleetMembershipDelegate)?
  /// How overdue this node's next event is, reported with each renewal. Set before `start`.
  public var lag: (@Sendable () -> Duration)?
  var connection: PGConnection?
  private var listenSource: (any DispatchSourceRead)?
  private var timer: (any DispatchSourceTimer)?
  private(set) var nodeID: Int64?
  var epochs: [Int: Int64] = [:]
  private var renewedAt: UInt64 = 0
  private var leaving = false
  private var failing = false
  let view = Mutex<[FleetMember]>([])
  private let renewalCount = Atomic<Int>(0)
  private let lossCount = Atomic<Int>(0)

  /// Leases renewed since start, from any thread.
  public var renewals: Int { renewalCount.load(ordering: .relaxed) }
  /// Times since start this node let go of every shard because its lease ran out unrenewed.
  public var leaseLosses: Int { lossCount.load(ordering: .relaxed) }

  public init(
    conninfo: String, name: String, version: String, shards: ShardMap, ownership: ShardOwnership,
    settings: Settings = Settings()
  ) {
    self.conninfo = conninfo
    self.name = name
    self.version = version
    self.shards = shards
    self.ownership = ownership
    self.settings = settings
  }

  /// The nodes as the last tick read them.
  public var members: [FleetMember] { view.withLock { $0 } }
  /// This node's id in the database, once joined.
  public var id: Int64? { queue.sync { nodeID } }

  // MARK: Joining and leaving

  /// Registers the node, takes its life lock, and makes a first tick (claiming the shards
  /// without a live owner up to its share). Call before the engine starts; then `start`.
  /// - Throws: `PostgresStoreError.nodeNameInUse` when a running node has the name.
  public func join() throws {
    try queue.sync { try connectAndRegister() }
    try queue.sync { try tick() }
  }

  /// Starts the ticks and the wake-ups.
  public func start() {
    queue.async { [self] in
      let timer = DispatchSource.makeTimerSource(queue: queue)
      timer.setEventHandler { [weak self] in self?.safeTick() }
      let interval = Int(settings.tick / .microseconds(1))
      timer.schedule(
        deadline: .now() + .microseconds(interval), repeating: .microseconds(interval),
        leeway: .milliseconds(5))
      timer.resume()
      self.timer = timer
      listen()
    }
  }

  /// Hands every shard to the other live nodes, ends the lease and lets go of the life
  /// lock, so that the fleet takes over at once (`systemctl stop`).
  public func leave() {
    queue.sync {
      leaving = true
      timer?.cancel()
      timer = nil
      listenSource?.cancel()
      listenSource = nil
      guard let connection, let nodeID else { return }
      do {
        try connection.execute("BEGIN")
        let (alive, owners) = try readFleet(connection)
        let handoffs = ShardBalance.departure(of: nodeID, alive: alive, owners: owners)
        ownership.set([:])
        try apply(claims: [], handoffs: handoffs, on: connection, reason: "departure")
        // Shards nobody takes (no other node alive) are let go, to be claimed at once.
        try connection.execute(
          """
          WITH freed AS (
            UPDATE trialwatch.shard SET owner = NULL, epoch = epoch + 1, changed_at = clock_timestamp()
            WHERE owner = $1 RETURNING shard, epoch)
          INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason) SELECT shard, epoch, NULL, 'released'
          FROM freed
          """, [String(nodeID)])
        try connection.execute(
          "UPDATE trialwatch.node SET lease_until = clock_timestamp() - interval '1 second' WHERE node_id = $1",
          [String(nodeID)])
        try connection.execute("SELECT pg_notify('trialwatch_fleet', $1)", [name])
        try connection.execute("COMMIT")
        try connection.execute("SELECT pg_advisory_unlock_all()")
      } catch {
        _ = try? connection.execute("ROLLBACK")
      }
      self.connection = nil
    }
  }

  /// One round now, on the membership's queue (the timer makes them every `tick`).
  func round() throws {
    try queue.sync { try tick() }
  }

  /// Ends the node's session without handing anything over, as a killed process's ends:
  /// its server process is terminated, and gone when this returns.
  func abandon() throws {
    try queue.sync {
      leaving = true
      timer?.cancel()
      listenSource?.cancel()
      guard let pid = connection?.backendPID else { return }
      try PGConnection(conninfo: conninfo).execute("SELECT pg_terminate_backend($1, 10000)", [String(pid)])
      connection = nil
    }
  }

  private func connectAndRegister() throws {
    let connection = try PostgresTrialRepository.connect(conninfo)
    try connection.execute(
      "INSERT INTO trialwatch.node (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", [name])
    let row = try connection.execute("SELECT node_id FROM trialwatch.node WHERE name = $1", [name])
    guard let id = row.int64(0, 0) else { throw PostgresStoreError.damaged("node \(name) has no row") }
    let locked = try connection.execute(
      "SELECT pg_try_advisory_lock($1)", [String(PostgresSchema.nodeLockBase + id)])
    guard locked.bool(0, 0) == true else { throw PostgresStoreError.nodeNameInUse(name) }
    try connection.execute(
      """
      UPDATE trialwatch.node SET pid = $2, version = $3, started_at = clock_timestamp(),
        lease_until = clock_timestamp() + $4 * interval '1 microsecond', seen_at = clock_timestamp()
      WHERE node_id = $1
      """,
      [String(id), String(getpid()), version, String(settings.lease.roundedMicroseconds)])
    for channel in [
      PostgresTrialRepository.trialsChannel, PostgresTrialRepository.logChannel, "trialwatch_fleet",
    ] {
      try connection.execute("LISTEN \(channel)")
    }
    self.connection = connection
    self.nodeID = id
    // A new session: the next round reads the shards whatever their version.
    seen = nil
    renewedAt = DispatchTime.now().uptimeNanoseconds
    ownership.trust(until: renewedAt + UInt64((settings.lease - settings.margin) / .nanoseconds(1)))
  }

  // MARK: Ticks

  private func safeTick() {
    guard !leaving else { return }
    do {
      if connection == nil || connection?.isConnected == false {
        connection = nil
        try connectAndRegister()
        listen()
        try tick()
        delegate?.fleetReconnected()
        return
      }
      try tick()
      if failing {
        failing = false
        delegate?.fleetRoundFailed(nil)
      }
    } catch {
      if !failing {
        failing = true
        delegate?.fleetRoundFailed(error)
      }
      if let error = error as? PGError, error.needsNewSession { connection = nil }
      // Past the trust window, the node stops firing until it renews its lease.
      let age = Duration.nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - renewedAt))
      if age > settings.lease - settings.margin, !ownership.owned.isEmpty {
        let lost = Set(ownership.owned.keys)
        lossCount.add(1, ordering: .relaxed)
        ownership.set([:])
        epochs = [:]
        delegate?.fleetShardsChanged(gained: [], lost: lost)
      }
    }
  }

  /// How soon a round follows one whose moves were not all made.
  static let retry: DispatchTimeInterval = .milliseconds(20)
  /// At most this many such rounds in a row; then the moves wait for the regular rounds.
  static let retries = 10
  private var retries = 0
  private var retryScheduled = false

  private func scheduleRetry() {
    guard !retryScheduled else { return }
    retryScheduled = true
    queue.asyncAfter(deadline: .now() + Self.retry) { [weak self] in
      self?.retryScheduled = false
      self?.safeTick()
    }
  }

  /// What the last round read that decides whether the shards must be read again.
  private struct Seen: Equatable {
    var alive: Set<Int64>
    var shardVersion: Int64?
  }

  private var seen: Seen?
  /// The owners the last read of the shard table found.
  var lastOwners: [Int64?] = []
  /// The epochs the last read of the shard table found, by shard.
  var lastEpochs: [Int: Int64] = [:]
  /// Whether the last moves of this node were made in full (a claim or hand-off may skip a
  /// locked shard, to be tried again next round).
  private var settled = false

  /// Renews the lease and reads the fleet in one statement; then, when something moved, reads
  /// the shards and makes this node's moves in one transaction.
  private func tick() throws {
    guard let connection, let nodeID else { return }
    let sent = DispatchTime.now().uptimeNanoseconds
    let nodes = try connection.execute(
      """
      WITH renewed AS (
        UPDATE trialwatch.node SET lease_until = clock_timestamp() + $2 * interval '1 microsecond',
          seen_at = clock_timestamp(), lag_us = $3 WHERE node_id = $1 RETURNING node_id)
      SELECT n.node_id, n.name, \(Self.isAlive(lockBase: "$4")),
        (extract(epoch FROM clock_timestamp() - n.seen_at) * 1000000)::bigint, n.version, n.lag_us,
        (SELECT sum(epoch) FROM trialwatch.shard)::bigint, (SELECT count(*) FROM renewed)
      FROM trialwatch.node n ORDER BY n.node_id
      """,
      [
        String(nodeID), String(settings.lease.roundedMicroseconds),
        lag.map { String($0().roundedMicroseconds) }, String(PostgresSchema.nodeLockBase),
      ])
    // The statement reads the node rows as they were before its own renewal: this node is
    // alive once the renewal took.
    guard nodes.int(0, 7) == 1 else { throw PostgresStoreError.damaged("node \(name) has no row") }
    renewedAt = sent
    renewalCount.add(1, ordering: .relaxed)
    ownership.trust(until: sent + UInt64((settings.lease - settings.margin) / .nanoseconds(1)))
    var alive = members(from: nodes)
    alive.insert(nodeID)
    let now = Seen(alive: alive, shardVersion: nodes.int64(0, 6))
    if now != seen || !settled {
      try connection.execute("BEGIN")
      do {
        var owners = try readOwners(connection)
        let moves = ShardBalance.moves(for: nodeID, alive: alive, owners: owners)
        if !moves.isEmpty {
          try apply(claims: moves.claims, handoffs: moves.handoffs, on: connection, reason: "balance")
          owners = try readOwners(connection)
        }
        try connection.execute("COMMIT")
        settled = ShardBalance.moves(for: nodeID, alive: alive, owners: owners).isEmpty
        // A claim skips a shard whose row is locked (the fence of a commit in flight, which a
        // dead node's session ends at once): another round soon, not a whole round later.
        if settled {
          retries = 0
        } else if retries < Self.retries {
          retries += 1
          scheduleRetry()
        }
        lastOwners = owners
        // The version as this node's own moves left it: read again at the next round.
        seen = moves.isEmpty ? now : nil
        try settle(owners: owners)
      } catch {
        _ = try? connection.execute("ROLLBACK")
        throw error
      }
    }
    try drainNotifications()
  }

  // MARK: Wake-ups

  private func listen() {
    listenSource?.cancel()
    guard let connection else { return }
    let source = DispatchSource.makeReadSource(fileDescriptor: connection.socket, queue: queue)
    source.setEventHandler { [weak self] in
      do { try self?.drainNotifications() } catch { self?.listenSource?.cancel() }
    }
    source.resume()
    listenSource = source
  }

  private func drainNotifications() throws {
    guard let connection else { return }
    var trials: [TrialID] = []
    var log = false
    var fleet = false
    for note in try connection.notifications() {
      switch note.channel {
      case PostgresTrialRepository.trialsChannel:
        let parts = note.payload.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0] != name else { continue }
        trials += parts[1].split(separator: ",").compactMap { TrialID($0) }
      case PostgresTrialRepository.logChannel: log = true
      default: fleet = note.payload != name
      }
    }
    if !trials.isEmpty { delegate?.fleetTrialsChanged(trials) }
    if log { delegate?.fleetLogAdvanced() }
    if fleet { try tick() }
  }
}
