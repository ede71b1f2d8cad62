import TrialCore

/// A daemon's part in a fleet on PostgreSQL (`FleetServices`): the schema prepared, the
/// shared store (`PostgresTrialRepository`), and the node's membership (`FleetMembership`:
/// lease, liveness, shards), sharing one `ShardOwnership`.
public final class PostgresFleet: FleetServices, @unchecked Sendable {
  // @unchecked: the members are Sendable or guarded by their own locks and queues.
  public let store: PostgresTrialRepository
  public let membership: FleetMembership
  public let openingNotes: [StoreNote]

  /// Connects, creates or upgrades the schema, and joins the fleet (claiming a first share of
  /// the shards). Nothing fires until the node starts its engine, then `start`.
  public init(conninfo: String, node: String, shards: Int, version: String) throws {
    let outcome = try PostgresSchema.prepare(on: try PGConnection(conninfo: conninfo), shards: shards)
    openingNotes = Self.notes(outcome, shards: shards)
    let map = ShardMap(count: shards)
    let ownership = ShardOwnership()
    store = try PostgresTrialRepository(conninfo: conninfo, node: node, shards: map, ownership: ownership)
    membership = FleetMembership(
      conninfo: conninfo, name: node, version: version, shards: map, ownership: ownership)
    try membership.join()
  }

  /// What `--check-config` says of the database: what was found, in words.
  /// - Throws: when the database cannot be reached, or no node could start on it.
  public static func check(conninfo: String, shards: Int) throws -> String {
    try PostgresSchema.check(on: try PGConnection(conninfo: conninfo), shards: shards)
  }

  /// The fleet's store for `trialwatchd --import`, the schema created or upgraded first. Each
  /// trial written wakes its shard's owner, which plans it.
  public static func openForImport(conninfo: String, node: String, shards: Int) throws -> OpenedStore {
    let outcome = try PostgresSchema.prepare(on: try PGConnection(conninfo: conninfo), shards: shards)
    let store = try PostgresTrialRepository(conninfo: conninfo, node: node, shards: ShardMap(count: shards))
    store.notes = notes(outcome, shards: shards)
    return OpenedStore(store)
  }

  static func notes(_ outcome: PostgresSchema.Outcome, shards: Int) -> [StoreNote] {
    switch outcome {
    case .created: [StoreNote("created the trialwatch schema", fields: ["shards": "\(shards)"])]
    case .upgraded(let from):
      [
        StoreNote(
          "upgraded the trialwatch schema", fields: ["from": "\(from)", "to": "\(PostgresSchema.version)"])
      ]
    case .current: []
    }
  }

  // MARK: FleetServices

  public var repository: any TrialRepository { store }
  public var nodeName: String { membership.name }
  public var shards: ShardMap { store.shards }
  public func owns(shard: Int) -> Bool { store.ownership.owns(shard) }
  public var ownedShards: [Int] { store.ownership.owned.keys.sorted() }
  public var members: [FleetMember] { membership.members }
  public var renewals: Int { membership.renewals }
  public var leaseLosses: Int { membership.leaseLosses }

  public var delegate: (any FleetMembershipDelegate)? {
    get { membership.delegate }
    set { membership.delegate = newValue }
  }

  public var lag: (@Sendable () -> Duration)? {
    get { membership.lag }
    set { membership.lag = newValue }
  }

  public func start() { membership.start() }
  public func leave() { membership.leave() }
  public func counts() throws -> [TrialState: Int] { try store.counts() }

  @discardableResult
  public func restore(shards: Set<Int>, into planner: inout Planner) throws -> Int {
    try store.restore(shards: shards, into: &planner)
  }

  public func undelivered(shards: Set<Int>, takenByOtherThan nodes: Set<String>) throws -> [LedgerEntry] {
    try store.undelivered(shards: shards, takenByOtherThan: nodes)
  }

  // MARK: StoreServices

  public func fileSize() -> Int? { nil }
  public func space() -> StoreSpace? { nil }
  public func close() {}
  public func releaseMemory() {}
}

/// The store alone (`--import`): no file of its own; its connections close with it.
extension PostgresTrialRepository: StoreServices {
  public func fileSize() -> Int? { nil }
  public func space() -> StoreSpace? { nil }
  public var openingNotes: [StoreNote] { notes }
  public func close() {}
  public func releaseMemory() {}
}
