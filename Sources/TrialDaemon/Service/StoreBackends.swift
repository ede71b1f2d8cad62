import TrialConfiguration
import TrialCore

/// Where the daemon's store comes from, for both backends, chosen by the executable: the
/// daemon itself knows only the repository contract and the services `TrialCore` defines
/// (`StoreServices`, `FleetServices`).
public struct StoreBackends: Sendable {
  /// Opens the store of one host in its state directory (`[Store] Backend=lmdb`).
  public var local: @Sendable (_ directory: String) throws -> OpenedStore
  /// Joins a fleet as a node (`[Store] Backend=postgresql`): the schema created or upgraded,
  /// a first share of the shards claimed; `version` is this daemon's, recorded for the others.
  public var joinFleet:
    @Sendable (_ settings: PostgreSQLSettings, _ version: String) throws -> any FleetServices
  /// What `--check-config` finds in a fleet's database, in words.
  /// - Throws: when it cannot be reached, or a node could not start on it.
  public var checkFleet: @Sendable (_ settings: PostgreSQLSettings) throws -> String
  /// Opens a fleet's store, the schema created or upgraded, for `--import`.
  public var openFleet: @Sendable (_ settings: PostgreSQLSettings) throws -> OpenedStore

  public init(
    local: @escaping @Sendable (String) throws -> OpenedStore,
    joinFleet: @escaping @Sendable (PostgreSQLSettings, String) throws -> any FleetServices,
    checkFleet: @escaping @Sendable (PostgreSQLSettings) throws -> String,
    openFleet: @escaping @Sendable (PostgreSQLSettings) throws -> OpenedStore
  ) {
    self.local = local
    self.joinFleet = joinFleet
    self.checkFleet = checkFleet
    self.openFleet = openFleet
  }

  /// What `--check-config` says of a fleet's database: a line, and whether a node could start.
  func check(_ settings: PostgreSQLSettings) -> (text: String, ok: Bool) {
    do {
      return ("PostgreSQL: connected as node \(settings.nodeName); \(try checkFleet(settings))\n", true)
    } catch {
      return ("error: PostgreSQL ([PostgreSQL] Connection=): \(error)\n", false)
    }
  }

  /// The configured store, for `--import`: a fleet's database, or the store of one host.
  func open(_ configuration: DaemonConfiguration, directory: String) throws -> OpenedStore {
    if let settings = configuration.postgreSQL { return try openFleet(settings) }
    return try local(directory)
  }
}
