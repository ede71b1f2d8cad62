import Foundation
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
  public var defaultLength: Days = .defaultTrialLength
  /// `DefaultReminders=`: the reminders of a trial started without its own.
  public var defaultReminders: ReminderSchedule = .default

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

  /// The pace of event entries, or nil when either key turns it off.
  public var journalRateLimit: JournalPace.Limit? {
    guard let burst = journalRateLimitBurst, journalRateLimitInterval > .zero else { return nil }
    return JournalPace.Limit(interval: journalRateLimitInterval, burst: burst)
  }

  /// The defaults. `environment` supplies `STATE_DIRECTORY`.
  public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    stateDirectory = Self.defaultStateDirectory(environment: environment)
  }

  /// The first path of `$STATE_DIRECTORY` when set, else `/var/lib/trialwatch`.
  public static func defaultStateDirectory(environment: [String: String]) -> String {
    let first = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
    if let first, first.hasPrefix("/") { return first }
    return defaultStateDirectory
  }
}
