import FoundationEssentials
import Glibc
import Logging
import Systemd
import TrialCore

/// The daemon's settings, from `/etc/trialwatch/trialwatch.conf` and its drop-ins (see
/// `ConfigurationLoader`). Every value starts at its documented default.
public struct DaemonConfiguration: Hashable, Sendable {
  public static let defaultPath = "/etc/trialwatch/trialwatch.conf"
  public static let defaultStateDirectory = "/var/lib/trialwatch"
  public static let defaultSocketPath = "/run/trialwatch/io.trialwatch"
  public static let defaultSocketGroup = "trialwatch"
  public static let defaultControlGroup = "trialwatch-admin"
  // The connection limits of systemd's own Varlink servers, and a reserve for administrators.
  public static let defaultMaxConnections = 4096
  public static let defaultMaxConnectionsPerUser = 1024
  public static let defaultReservedConnections = 64
  public static let defaultIdleTimeout: Duration = .seconds(300)
  public static let defaultMessageTimeout: Duration = .seconds(10)
  // journald's default window, and its default burst (10000) less room for the daemon's own
  // log lines and the datagrams journald has yet to read.
  public static let defaultJournalRateLimitInterval: Duration = .seconds(30)
  public static let defaultJournalRateLimitBurst = 9000
  public static let maximumJournalRateLimitBurst = 1_000_000

  // [Trials]
  /// `DefaultLength=`: the length of a trial started without one.
  public var defaultLength: Duration = TrialDefaults.standard.length
  /// `DefaultReminders=`: the reminders of a trial started without its own.
  public var defaultReminders: ReminderSchedule = TrialDefaults.standard.reminders
  /// `ComplianceWarnings=`: whether a configuration whose trials miss the card networks' rule
  /// (`TrialPlan.meetsCardNetworkRule`) is warned about; a plan file's default.
  public var complianceWarnings = true
  /// The plans, by name, from the plan files (`PlanFiles`).
  public var plans: [String: TrialPlan] = [:]
  /// The webhook endpoints, by name, from their files (`WebhookFiles`). Read and kept, a reload
  /// replacing them; nothing is delivered to them yet.
  public var webhooks: [String: WebhookEndpoint] = [:]
  /// `[Trials] Retention=`: how long ended trials are kept; nil (`infinity`, the default): for ever.
  public var trialRetention: Duration?

  // [CatchUp]
  /// `LateReminders=`, `ReminderGrace=`, `LateThreshold=`.
  public var catchUp = CatchUpPolicy()
  /// `[Events] Retention=` and `MaxRetention=`.
  public var retention = EventRetention()

  // [Daemon]
  /// `StateDirectory=`: where the store lives. Default: the first path of
  /// `$STATE_DIRECTORY` (set by systemd from the unit's `StateDirectory=`), else
  /// `/var/lib/trialwatch`.
  public var stateDirectory: String
  /// `Socket=`: the control socket bound when the daemon is not socket-activated.
  public var socketPath: String = DaemonConfiguration.defaultSocketPath
  /// `MetricsSocket=`: the metrics-only socket bound when the daemon is not socket-activated.
  public var metricsSocketPath: String?
  /// `SocketGroup=`: the group (a name or a numeric id) of the control socket the daemon
  /// binds, mode 0660: its members may connect, and so read. (Socket-activated, the socket
  /// unit's `SocketGroup=` and `SocketMode=` apply instead.)
  public var socketGroup: String = DaemonConfiguration.defaultSocketGroup
  /// `ControlGroup=`: members of this group (a name or a numeric id), root and the daemon's
  /// own user may change trials through the control socket. Anyone who can reach the socket
  /// may read.
  public var controlGroup: String = DaemonConfiguration.defaultControlGroup
  /// `MaxConnections=`: control connections open at once, from everyone; more are refused.
  public var maxConnections: Int = DaemonConfiguration.defaultMaxConnections
  /// `MaxConnectionsPerUser=`: connections open at once from one user, unless root, the
  /// daemon's user or a member of the control group.
  public var maxConnectionsPerUser: Int = DaemonConfiguration.defaultMaxConnectionsPerUser
  /// `ReservedConnections=`: of `MaxConnections=`, how many only root, the daemon's user and
  /// the control group may use (at most a quarter of `MaxConnections=`; see
  /// `effectiveReservedConnections`).
  public var reservedConnections: Int = DaemonConfiguration.defaultReservedConnections

  /// The reserve in force: `ReservedConnections=`, but never more than a quarter of
  /// `MaxConnections=`, so that others always have room.
  public var effectiveReservedConnections: Int { min(reservedConnections, maxConnections / 4) }
  /// `IdleTimeout=`: a control connection that sends no request for this long, and watches
  /// nothing, is closed. Nil (`infinity`) keeps idle connections open.
  public var idleTimeout: Duration? = DaemonConfiguration.defaultIdleTimeout
  /// `MessageTimeout=`: a client that has begun a message must finish it within this time,
  /// or its connection is closed.
  public var messageTimeout: Duration = DaemonConfiguration.defaultMessageTimeout
  /// `LogLevel=`: the least severe level logged.
  public var logLevel: Logger.Level = .info
  /// `LogTarget=`: where logs go.
  public var logTarget: LogTarget = .auto

  // [Journal]
  /// `RateLimitIntervalSec=`: the window of the journal's pace; zero turns pacing off.
  public var journalRateLimitInterval: Duration = DaemonConfiguration.defaultJournalRateLimitInterval
  /// `RateLimitBurst=`: event entries sent to the journal in any window; nil (`0`,
  /// `infinity`) turns pacing off.
  public var journalRateLimitBurst: Int? = DaemonConfiguration.defaultJournalRateLimitBurst

  // [Store]
  /// `Backend=`: where trials are kept, LMDB on this host or PostgreSQL shared by a fleet.
  public var storeBackend: StoreBackend = .lmdb

  // [PostgreSQL]
  /// The fleet's database and this node in it: set exactly when `storeBackend` is
  /// `.postgresql` and the `[PostgreSQL]` section is valid (the loader makes it from the keys
  /// once every file is read).
  public var postgreSQL: PostgreSQLSettings?
  /// The `[PostgreSQL]` keys as read, whatever the backend (unused with LMDB).
  var postgreSQLKeys = PostgreSQLKeys()

  /// The pace of event entries, or nil when either key turns it off.
  public var journalRateLimit: JournalRateLimit? {
    guard let burst = journalRateLimitBurst, journalRateLimitInterval > .zero else { return nil }
    return JournalRateLimit(interval: journalRateLimitInterval, burst: burst)
  }

  /// The defaults. `environment` supplies `STATE_DIRECTORY`.
  public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    stateDirectory = Self.defaultStateDirectory(environment: environment)
  }

  /// The `[PostgreSQL]` keys before they are checked together: `Connection=` has no default.
  struct PostgreSQLKeys: Hashable, Sendable {
    var connection: String?
    /// Nil: the host name (`PostgreSQLSettings.defaultNodeName`).
    var nodeName: String?
    var shards = PostgreSQLSettings.defaultShards
  }

  /// The first path of `$STATE_DIRECTORY` when set, else `/var/lib/trialwatch`.
  public static func defaultStateDirectory(environment: [String: String]) -> String {
    let first = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
    if let first, first.utf8.first == UInt8(ascii: "/") { return first }
    return defaultStateDirectory
  }
}

/// The pace of the journal's event entries (`[Journal]`): at most `burst` entries in any window
/// of `interval`; the daemon's `JournalPace` keeps to it.
public struct JournalRateLimit: Hashable, Sendable, CustomStringConvertible {
  public var interval: Duration
  public var burst: Int

  public init(interval: Duration, burst: Int) {
    precondition(interval > .zero && burst > 0, "a limit needs a positive interval and burst")
    self.interval = interval
    self.burst = burst
  }

  /// `9000 entries per 30s`.
  public var description: String { "\(burst) entries per \(TimeSpan.format(interval))" }
}

/// Where the daemon keeps trials (`[Store] Backend=`).
public enum StoreBackend: String, Hashable, Sendable, CaseIterable {
  /// An LMDB store in `StateDirectory=`, on this host only.
  case lmdb
  /// A PostgreSQL database shared by several trialwatchd (fleet mode).
  case postgresql
}

/// `[PostgreSQL]`: the database of a fleet, and this node's name in it.
public struct PostgreSQLSettings: Hashable, Sendable {
  public static let defaultShards = 256
  public static let shardRange = 1...4096
  public static let maximumNodeNameLength = 64

  /// `Connection=`: a libpq connection string (`host=db1 dbname=trialwatch ...`) or URI
  /// (`postgresql://...`), never with a password in it.
  public var connection: String
  /// `NodeName=`: this daemon's name among the fleet's.
  public var nodeName: String
  /// `Shards=`: how many shards the trials are spread over, fixed when the schema is created.
  public var shards: Int

  /// The host name (gethostname(2)), or "localhost" when there is none.
  public static func defaultNodeName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
    let name = String(
      decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.isEmpty ? "localhost" : name
  }

  /// Whether `name` may name a node: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, starting
  /// with a letter or digit.
  public static func isValidNodeName(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    let isAlphanumeric = { (b: UInt8) in (b >= 97 && b <= 122) || (b >= 65 && b <= 90) || (b >= 48 && b <= 57)
    }
    guard let first = bytes.first, isAlphanumeric(first), bytes.count <= maximumNodeNameLength else {
      return false
    }
    return bytes.allSatisfy {
      isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
    }
  }
}

extension DaemonConfiguration {
  /// The settings read only at start: a reload keeps their running values.
  public static let restartOnlyKeys: [(section: String, key: String)] = [
    ("Daemon", "StateDirectory"), ("Daemon", "Socket"), ("Daemon", "MetricsSocket"), ("Store", "Backend"),
    ("PostgreSQL", "Connection"),
    ("PostgreSQL", "NodeName"), ("PostgreSQL", "Shards"),
  ]

  /// What a reload (SIGHUP) applies of `next`, the configuration just read: all of it but
  /// `StateDirectory=`, `Socket=`, `MetricsSocket=`, `[Store] Backend=` and the `[PostgreSQL]` keys, which keep
  /// their running values until the next start. `pending` has a warning for each of those
  /// whose value in `next` differs from the running one.
  public func reloading(_ next: DaemonConfiguration) -> (
    configuration: DaemonConfiguration, pending: [String]
  ) {
    var applied = next
    applied.stateDirectory = stateDirectory
    applied.socketPath = socketPath
    applied.metricsSocketPath = metricsSocketPath
    applied.storeBackend = storeBackend
    applied.postgreSQL = postgreSQL
    applied.postgreSQLKeys = postgreSQLKeys
    var changed: [String] = []
    if next.stateDirectory != stateDirectory { changed.append("StateDirectory= in [Daemon]") }
    if next.socketPath != socketPath { changed.append("Socket= in [Daemon]") }
    if next.metricsSocketPath != metricsSocketPath { changed.append("MetricsSocket= in [Daemon]") }
    if next.storeBackend != storeBackend { changed.append("Backend= in [Store]") }
    // With LMDB the [PostgreSQL] keys are unused; a change of Backend= is warned about above.
    if next.storeBackend == .postgresql && storeBackend == .postgresql {
      let old = postgreSQL
      let new = next.postgreSQL
      if old?.connection != new?.connection { changed.append("Connection= in [PostgreSQL]") }
      if old?.nodeName != new?.nodeName { changed.append("NodeName= in [PostgreSQL]") }
      if old?.shards != new?.shards { changed.append("Shards= in [PostgreSQL]") }
    }
    return (
      applied,
      changed.map {
        "\($0) changed: the new value takes effect at the next start (systemctl restart trialwatch)"
      }
    )
  }
}
