import Dispatch
import FoundationEssentials
import Synchronization
import TrialCore

/// The membership's reads of the fleet and its moves, each on the membership's connection and
/// queue.
extension FleetMembership {
  /// SQL true when node row `n` is alive: its lease has not run out and its session holds
  /// its life lock (`lockBase` + node id) in this database. Advisory locks are per database
  /// but `pg_locks` shows every database's, and another fleet on the same server numbers its
  /// nodes from 1 too.
  static func isAlive(lockBase: String) -> String {
    """
    (n.lease_until > clock_timestamp() AND EXISTS (
      SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND ((l.classid::bigint << 32) | l.objid::bigint) = \(lockBase) + n.node_id))
    """
  }

  /// The live nodes and each shard's owner; also refreshes `members`.
  func readFleet(_ connection: PGConnection) throws -> (alive: Set<Int64>, owners: [Int64?]) {
    let nodes = try connection.execute(
      """
      SELECT n.node_id, n.name, \(Self.isAlive(lockBase: "$1")),
        (extract(epoch FROM clock_timestamp() - n.seen_at) * 1000000)::bigint, n.version, n.lag_us
      FROM trialwatch.node n ORDER BY n.node_id
      """, [String(PostgresSchema.nodeLockBase)])
    let alive = members(from: nodes)
    return (alive, try readOwners(connection))
  }

  /// Each shard's owner, from the shard table; keeps their epochs in `lastEpochs`.
  func readOwners(_ connection: PGConnection) throws -> [Int64?] {
    let rows = try connection.execute("SELECT shard, owner, epoch FROM trialwatch.shard ORDER BY shard")
    var owners = [Int64?](repeating: nil, count: shards.count)
    var epochsRead: [Int: Int64] = [:]
    for row in 0..<rows.rows {
      guard let shard = rows.int(row, 0), shard < shards.count else { continue }
      owners[shard] = rows.int64(row, 1)
      epochsRead[shard] = rows.int64(row, 2)
    }
    lastEpochs = epochsRead
    let counted = owners
    view.withLock { view in
      for index in view.indices { view[index].shards = counted.count { $0 == view[index].id } }
    }
    return owners
  }

  /// The nodes of `result` (node_id, name, alive, lease age µs, version, lag µs, ...) as
  /// `members`, with the shard counts of the last read of the shard table; tells the delegate
  /// of the nodes that died since. Returns the live ones.
  func members(from result: PGResult) -> Set<Int64> {
    var alive = Set<Int64>()
    var members: [FleetMember] = []
    for row in 0..<result.rows {
      guard let id = result.int64(row, 0), let name = result.string(row, 1) else { continue }
      let isAlive = result.bool(row, 2) == true || id == nodeID
      if isAlive { alive.insert(id) }
      members.append(
        FleetMember(
          id: id, name: name, alive: isAlive, leaseAge: result.int64(row, 3).map { .microseconds($0) },
          shards: lastOwners.count { $0 == id }, version: result.string(row, 4),
          lag: result.int64(row, 5).map { .microseconds($0) }))
    }
    let before = view.withLock { view in
      defer { view = members }
      return Set(view.filter(\.alive).map(\.name))
    }
    let died = before.subtracting(members.filter(\.alive).map(\.name))
    if !died.isEmpty { delegate?.fleetNodesDied(died) }
    return alive
  }

  func apply(
    claims: [Int], handoffs: [ShardBalance.Handoff], on connection: PGConnection, reason: String
  )
    throws
  {
    guard let nodeID else { return }
    if !claims.isEmpty {
      // Only shards still without a live owner: two nodes claiming at once take each shard once.
      try connection.execute(
        """
        WITH free AS (
          SELECT s.shard FROM trialwatch.shard s
          WHERE s.shard = ANY($2::integer[]) AND (s.owner IS NULL OR NOT EXISTS (
            SELECT 1 FROM trialwatch.node n WHERE n.node_id = s.owner AND \(Self.isAlive(lockBase: "$3"))))
          FOR UPDATE SKIP LOCKED),
        claimed AS (
          UPDATE trialwatch.shard s SET owner = $1, epoch = s.epoch + 1, changed_at = clock_timestamp()
          FROM free WHERE s.shard = free.shard RETURNING s.shard, s.epoch)
        INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason)
        SELECT shard, epoch, $4, $5 FROM claimed
        """, [String(nodeID), PGArray.literal(claims), String(PostgresSchema.nodeLockBase), name, "claimed"])
    }
    if !handoffs.isEmpty {
      try connection.execute(
        """
        WITH mine AS (
          SELECT shard FROM trialwatch.shard WHERE owner = $1 AND shard = ANY($2::integer[])
          FOR UPDATE SKIP LOCKED),
        moved AS (
          UPDATE trialwatch.shard s SET owner = u.node, epoch = s.epoch + 1, changed_at = clock_timestamp()
          FROM unnest($2::integer[], $3::bigint[]) AS u(shard, node) JOIN mine USING (shard)
          WHERE s.shard = u.shard RETURNING s.shard, s.epoch, s.owner)
        INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason)
        SELECT m.shard, m.epoch, n.name, $4 FROM moved m JOIN trialwatch.node n ON n.node_id = m.owner
        """,
        [
          String(nodeID), PGArray.literal(handoffs.map(\.shard)), PGArray.literal(handoffs.map(\.to)),
          "handed over (\(reason))",
        ])
      try connection.execute("SELECT pg_notify('trialwatch_fleet', $1)", [name])
    }
  }

  /// Makes `ownership` what the database says and tells the delegate what changed.
  func settle(owners: [Int64?]) throws {
    guard let nodeID else { return }
    var now: [Int: Int64] = [:]
    for (shard, owner) in owners.enumerated() where owner == nodeID { now[shard] = lastEpochs[shard] ?? 0 }
    let before = epochs
    epochs = now
    ownership.set(now)
    // A shard whose epoch moved while this node thought it owned it was lost and regained:
    // both.
    let lost = Set(before.keys).filter { now[$0] != before[$0] }
    let gained = Set(now.keys).filter { before[$0] != now[$0] }
    if !lost.isEmpty || !gained.isEmpty { delegate?.fleetShardsChanged(gained: gained, lost: lost) }
  }
}
