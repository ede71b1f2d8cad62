import Logging
import Systemd
import TrialCore

/// Why a value cannot be used; the loader adds file, line, key and section.
struct InvalidValue: Error {
  var reason: String
}

/// One key of the configuration: where it lives, its default as written in the sample
/// configuration, what it means (trialwatch.conf(5) is generated from it), how a value is
/// applied, and how an empty assignment resets it.
struct ConfigurationKey: Sendable {
  var section: String
  var name: String
  /// The default as the sample configuration writes it (`#Key=default`).
  var defaultText: String
  /// What a value is, in a word or two (`span`, `path`, `latest|all|skip`): the manual's
  /// `Key=value`.
  var valueName: String
  /// What the key does, in sentences, as the manual prints it.
  var meaning: String
  var apply: @Sendable (inout DaemonConfiguration, String) throws(InvalidValue) -> Void
  var reset: @Sendable (inout DaemonConfiguration, DaemonConfiguration) -> Void
  /// How the manual states a default the sample cannot write (`#NodeName=` stands for the
  /// host name); nil when `defaultText` says it ("none" when that is empty).
  var defaultDescription: String? = nil
  /// False for a value that may hold a secret: an error about it does not repeat it.
  var echoesValue = true
}

/// Every key trialwatchd reads.
enum ConfigurationSchema {
  static let keys: [ConfigurationKey] = [
    ConfigurationKey(
      section: "Trials", name: "DefaultLength", defaultText: "5d", valueName: "span",
      meaning:
        "The length of a trial started without one (neither a duration nor an end time given).",
      apply: { config, value throws(InvalidValue) in
        let length = try span(value)
        guard length > .zero else { throw InvalidValue(reason: "must be longer than 0") }
        config.defaultLength = length
      },
      reset: { $0.defaultLength = $1.defaultLength }),
    ConfigurationKey(
      section: "Trials", name: "DefaultReminders", defaultText: "3d, 1d", valueName: "span[, span...]",
      meaning:
        "The reminders of a trial started without its own: time spans before the trial's end, "
        + "separated by commas, or \"none\" for no reminders.",
      apply: { config, value throws(InvalidValue) in config.defaultReminders = try reminders(value) },
      reset: { $0.defaultReminders = $1.defaultReminders }),
    ConfigurationKey(
      section: "Trials", name: "ComplianceWarnings", defaultText: "yes", valueName: "boolean",
      meaning:
        "Whether a warning says so when trials longer than 7 days get no reminder 7 days or more before "
        + "their end: the rule Visa (since April 2020) and Mastercard apply to free trials that convert "
        + "to paid. It covers DefaultLength= and DefaultReminders= here, and is the default of each plan "
        + "file's own ComplianceWarnings=. Set it to no where trials do not convert to paid.",
      apply: { config, value throws(InvalidValue) in config.complianceWarnings = try boolean(value) },
      reset: { $0.complianceWarnings = $1.complianceWarnings }),
    spanOrInfinityKey(
      section: "Trials", name: "Retention", \.trialRetention, defaultText: "infinity",
      meaning:
        "How long an ended trial (expired, converted or cancelled) is kept, counted from its end. Past "
        + "it, the trial is removed with its ledger, in small steps that never hold up firing; "
        + "\"infinity\" keeps ended trials for ever. The records of subjects granted a trial once "
        + "(Once= in plan files) and the event log's events are kept apart, and outlive the trial."),
    ConfigurationKey(
      section: "CatchUp", name: "LateReminders", defaultText: "latest", valueName: "latest|all|skip",
      meaning:
        "Which late reminders fire. \"latest\" fires only the most recent late reminder of each trial"
        + " (none when its expiry fires at the same time) and skips the others; \"all\" fires every "
        + "late reminder; \"skip\" skips the reminders later than ReminderGrace=. An expiry always "
        + "fires. Skipped reminders are logged to the journal, never silently dropped.",
      apply: { config, value throws(InvalidValue) in
        guard let policy = CatchUpPolicy.LateReminders(rawValue: value) else {
          throw InvalidValue(reason: "expected latest, all or skip")
        }
        config.catchUp.reminders = policy
      },
      reset: { $0.catchUp.reminders = $1.catchUp.reminders }),
    ConfigurationKey(
      section: "CatchUp", name: "ReminderGrace", defaultText: "1h", valueName: "span",
      meaning:
        "How late a reminder may be and still fire under LateReminders=skip.",
      apply: { config, value throws(InvalidValue) in config.catchUp.grace = try span(value) },
      reset: { $0.catchUp.grace = $1.catchUp.grace }),
    ConfigurationKey(
      section: "CatchUp", name: "LateThreshold", defaultText: "1s", valueName: "span",
      meaning:
        "An event fired more than this after its due time counts as late: its journal entry says so, "
        + "with its lateness.",
      apply: { config, value throws(InvalidValue) in
        config.catchUp.lateThreshold = try span(value)
      },
      reset: { $0.catchUp.lateThreshold = $1.catchUp.lateThreshold }),
    ConfigurationKey(
      section: "Events", name: "Retention", defaultText: "90d", valueName: "span",
      meaning:
        "How long the event log keeps an event (counted from when it was taken) once every consumer "
        + "has acknowledged it. Pruning runs in small steps and never holds up firing.",
      apply: { config, value throws(InvalidValue) in
        config.retention.age = try positiveSpan(value, infinity: false)
      },
      reset: { $0.retention.age = $1.retention.age }),
    spanOrInfinityKey(
      section: "Events", name: "MaxRetention", \.retention.cap, defaultText: "365d",
      meaning:
        "How long the event log keeps an event that a consumer has not acknowledged. Past it, the "
        + "event is pruned anyway: the consumer's position moves past it, and the events it lost are "
        + "logged and counted in its status. \"infinity\" keeps them until every consumer has "
        + "acknowledged them. Never shorter than Retention=."),
    ConfigurationKey(
      section: "Daemon", name: "StateDirectory", defaultText: DaemonConfiguration.defaultStateDirectory,
      valueName: "path",
      meaning:
        "Where the trial store lives, an absolute path. Without it, the directory systemd creates for"
        + " the unit's StateDirectory= and passes as $STATE_DIRECTORY, else the default.",
      apply: { config, value throws(InvalidValue) in config.stateDirectory = try absolutePath(value) },
      reset: { $0.stateDirectory = $1.stateDirectory }),
    ConfigurationKey(
      section: "Daemon", name: "Socket", defaultText: DaemonConfiguration.defaultSocketPath,
      valueName: "path",
      meaning:
        "The control socket the daemon binds when it is not socket-activated: an absolute path of at "
        + "most \(maximumSocketPathLength) bytes. With trialwatch.socket, the socket unit's ListenStream= applies instead.",
      apply: { config, value throws(InvalidValue) in config.socketPath = try socketPath(value) },
      reset: { $0.socketPath = $1.socketPath }),
    ConfigurationKey(
      section: "Daemon", name: "MetricsSocket", defaultText: "", valueName: "path",
      meaning:
        "A second socket the daemon binds when it is not socket-activated, serving only the metrics "
        + "(io.systemd.Metrics), with the control socket's group and mode: an absolute path, or empty for none. "
        + "With trialwatch-report.socket (/run/systemd/report/io.trialwatch, for systemd-report) its "
        + "ListenStream= applies instead. The control socket serves the metrics too.",
      apply: { config, value throws(InvalidValue) in
        config.metricsSocketPath = value.isEmpty ? nil : try socketPath(value)
      },
      reset: { $0.metricsSocketPath = $1.metricsSocketPath }),
    ConfigurationKey(
      section: "Daemon", name: "SocketGroup", defaultText: DaemonConfiguration.defaultSocketGroup,
      valueName: "group",
      meaning:
        "The group (a name or a numeric id) of the control socket when the daemon binds it itself, "
        + "with mode 0660: its members may connect, and so read. Under socket activation, "
        + "trialwatch.socket's SocketGroup= and SocketMode= apply instead.",
      apply: { config, value throws(InvalidValue) in config.socketGroup = try groupName(value) },
      reset: { $0.socketGroup = $1.socketGroup }),
    ConfigurationKey(
      section: "Daemon", name: "ControlGroup", defaultText: DaemonConfiguration.defaultControlGroup,
      valueName: "group",
      meaning:
        "Members of this group (a name or a numeric id), root and the daemon's own user may start, "
        + "extend and end trials through the control socket. Anyone who can reach the socket may read. "
        + "An administrator who is not root joins both groups.",
      apply: { config, value throws(InvalidValue) in config.controlGroup = try groupName(value) },
      reset: { $0.controlGroup = $1.controlGroup }),
    countKey(
      "MaxConnections", \.maxConnections, DaemonConfiguration.defaultMaxConnections, minimum: 1,
      meaning: "Control connections open at the same time, from everyone (1 to 65536). A client beyond a "
        + "limit is answered io.trialwatch.TooManyConnections and disconnected."),
    countKey(
      "MaxConnectionsPerUser", \.maxConnectionsPerUser, DaemonConfiguration.defaultMaxConnectionsPerUser,
      minimum: 1,
      meaning: "Connections open at the same time from one user (by uid), so that one user cannot lock out "
        + "the others (1 to 65536). Root, the daemon's user and members of ControlGroup= are not held to it."),
    countKey(
      "ReservedConnections", \.reservedConnections, DaemonConfiguration.defaultReservedConnections,
      minimum: 0,
      meaning: "Of MaxConnections=, how many only root, the daemon's user and members of ControlGroup= may "
        + "use, so that they can always reach the daemon (0 to 65536). At most a quarter of "
        + "MaxConnections= is reserved, whatever this says."),
    spanOrInfinityKey(
      section: "Daemon", name: "IdleTimeout", \.idleTimeout, defaultText: "5min",
      meaning:
        "A control connection that sends no request for this long, and watches nothing, is closed. "
        + "\"infinity\" keeps idle connections open."),
    ConfigurationKey(
      section: "Daemon", name: "MessageTimeout", defaultText: "10s", valueName: "span",
      meaning:
        "A client that has begun sending a message must finish it within this time, or it is answered"
        + " io.trialwatch.InvalidMessage and disconnected.",
      apply: { config, value throws(InvalidValue) in config.messageTimeout = try positiveSpan(value) },
      reset: { $0.messageTimeout = $1.messageTimeout }),
    ConfigurationKey(
      section: "Daemon", name: "LogLevel", defaultText: "info", valueName: "level",
      meaning:
        "The least severe messages logged: emerg, alert, crit, err, warning, notice, info or debug.",
      apply: { config, value throws(InvalidValue) in
        guard let level = logLevels[value] else {
          throw InvalidValue(
            reason: "expected one of emerg, alert, crit, err, warning, notice, info, debug (or trace, "
              + "error, critical)")
        }
        config.logLevel = level
      },
      reset: { $0.logLevel = $1.logLevel }),
    ConfigurationKey(
      section: "Daemon", name: "LogTarget", defaultText: "auto", valueName: "journal|console|auto",
      meaning:
        "Where logs go: \"journal\" (structured entries), \"console\" (readable lines on standard "
        + "error) or \"auto\" (the journal when standard error is connected to it, as under systemd; "
        + "standard error otherwise).",
      apply: { config, value throws(InvalidValue) in
        guard let target = LogTarget(rawValue: value) else {
          throw InvalidValue(reason: "expected auto, journal or console")
        }
        config.logTarget = target
      },
      reset: { $0.logTarget = $1.logTarget }),
    ConfigurationKey(
      section: "Journal", name: "RateLimitIntervalSec", defaultText: "30s", valueName: "span",
      meaning:
        "The window of RateLimitBurst=: in any span of this length, wherever it begins, the daemon "
        + "sends at most RateLimitBurst= event entries to the journal. 0 turns pacing off.",
      apply: { config, value throws(InvalidValue) in config.journalRateLimitInterval = try span(value) },
      reset: { $0.journalRateLimitInterval = $1.journalRateLimitInterval }),
    ConfigurationKey(
      section: "Journal", name: "RateLimitBurst",
      defaultText: String(DaemonConfiguration.defaultJournalRateLimitBurst), valueName: "number|infinity",
      meaning:
        "Event entries sent to the journal within RateLimitIntervalSec=, at most; the others wait in "
        + "the store and follow, in order, as the window allows. Keep it under the limit journald "
        + "applies to the unit (trialwatch.service sets LogRateLimitBurst=10000 per 30s), with room for "
        + "the daemon's own log lines. 0 or \"infinity\" turns pacing off (up to "
        + "\(DaemonConfiguration.maximumJournalRateLimitBurst)).",
      apply: { config, value throws(InvalidValue) in
        if value == "infinity" || value == "0" {
          config.journalRateLimitBurst = nil
          return
        }
        let maximum = DaemonConfiguration.maximumJournalRateLimitBurst
        guard let burst = Int(value), (1...maximum).contains(burst) else {
          throw InvalidValue(reason: "expected a whole number from 0 to \(maximum), or infinity")
        }
        config.journalRateLimitBurst = burst
      },
      reset: { $0.journalRateLimitBurst = $1.journalRateLimitBurst }),
    ConfigurationKey(
      section: "Store", name: "Backend", defaultText: StoreBackend.lmdb.rawValue,
      valueName: "lmdb|postgresql",
      meaning:
        "Where trials are kept. \"lmdb\": an LMDB store in StateDirectory=, on this host only. "
        + "\"postgresql\": a PostgreSQL database shared by several trialwatchd (fleet mode), set in "
        + "[PostgreSQL]. Read at start only: a reload keeps the running value.",
      apply: { config, value throws(InvalidValue) in
        guard let backend = StoreBackend(rawValue: value) else {
          throw InvalidValue(reason: "expected lmdb or postgresql")
        }
        config.storeBackend = backend
      },
      reset: { $0.storeBackend = $1.storeBackend }),
    ConfigurationKey(
      section: "PostgreSQL", name: "Connection", defaultText: "", valueName: "connection string|URI",
      meaning:
        "The database, as libpq takes it: keyword=value pairs separated by spaces (\"host=db1,db2 "
        + "dbname=trialwatch user=trialwatch target_session_attrs=read-write\") or a URI "
        + "(\"postgresql://trialwatch@db1,db2/trialwatch\"). Required "
        + "with Backend=postgresql. It must not hold the password: libpq reads it from the .pgpass file "
        + "named by PGPASSFILE, which trialwatch-fleet.conf points at a credential passed with systemd's "
        + "LoadCredential=. Only the form is checked here; libpq checks the rest when it connects. "
        + "libpq (libpq.so.5, Debian package libpq5) is opened then, not before.",
      apply: { config, value throws(InvalidValue) in
        config.postgreSQLKeys.connection = try connection(value)
      },
      reset: { $0.postgreSQLKeys.connection = $1.postgreSQLKeys.connection },
      echoesValue: false),
    ConfigurationKey(
      section: "PostgreSQL", name: "NodeName", defaultText: "", valueName: "name",
      meaning:
        "This daemon's name in the fleet, unique among the nodes sharing the database: 1 to "
        + "\(PostgreSQLSettings.maximumNodeNameLength) ASCII letters, digits, \"-\", \"_\" or \".\", "
        + "starting with a letter or digit.",
      apply: { config, value throws(InvalidValue) in
        guard PostgreSQLSettings.isValidNodeName(value) else { throw InvalidValue(reason: nodeNameRule) }
        config.postgreSQLKeys.nodeName = value
      },
      reset: { $0.postgreSQLKeys.nodeName = $1.postgreSQLKeys.nodeName },
      defaultDescription: "the host name (\"localhost\" when there is none)"),
    ConfigurationKey(
      section: "PostgreSQL", name: "Shards", defaultText: String(PostgreSQLSettings.defaultShards),
      valueName: "number",
      meaning:
        "How many shards the fleet spreads its trials over (\(PostgreSQLSettings.shardRange.lowerBound) to "
        + "\(PostgreSQLSettings.shardRange.upperBound)). Fixed when the first node creates the schema: a "
        + "node configured with another number refuses to start against it.",
      apply: { config, value throws(InvalidValue) in
        let range = PostgreSQLSettings.shardRange
        guard let shards = Int(value), range.contains(shards) else {
          throw InvalidValue(
            reason: "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        config.postgreSQLKeys.shards = shards
      },
      reset: { $0.postgreSQLKeys.shards = $1.postgreSQLKeys.shards }),
  ]

  static let sections: [String] = {
    var seen: [String] = []
    for key in keys where !seen.contains(key.section) { seen.append(key.section) }
    return seen
  }()

  /// What each section is for, as the manual introduces it.
  static let sectionSummaries: [String: String] = [
    "Trials": "What a trial gets when the request that starts it leaves it out.",
    "CatchUp":
      "Events that fell due while the daemon was stopped, the machine was suspended or the clock was "
      + "stepped forward fire as soon as the daemon runs again, marked late. An expiry always fires; "
      + "late reminders follow LateReminders=.",
    "Events":
      "The event log keeps every event taken, fired or skipped, for Watch with a cursor and for "
      + "consumers (see trialwatchctl(1), consume). These keys say how long.",
    "Daemon":
      "Where the daemon keeps its store and its control socket, who may use the socket, the limits on "
      + "connections, and the logs.",
    "Journal":
      "The pace of event entries: journald drops what a unit writes beyond its rate limit, so the daemon "
      + "sends no more than this and keeps the rest in its store until the window allows. Every "
      + "event reaches the journal, once, in the order taken.",
    "Store":
      "Where trials are kept: on this host, or in a PostgreSQL database that several daemons share "
      + "(fleet mode), so that one host down stops no trial from expiring.",
    "PostgreSQL":
      "The database of fleet mode and this node's place in it, used only with Backend=postgresql: "
      + "with Backend=lmdb these keys are accepted and unused. Read at start only: a reload keeps "
      + "the running values, and a change takes effect at the next restart.",
  ]

  static func key(section: String, name: String) -> ConfigurationKey? {
    keys.first { $0.section == section && $0.name == name }
  }

  /// `sun_path` holds 108 bytes including the terminating NUL.
  static let maximumSocketPathLength = 107

  /// syslog's names as systemd uses them, and swift-log's.
  static let logLevels: [String: Logger.Level] = [
    "emerg": .critical, "alert": .critical, "crit": .critical, "critical": .critical,
    "err": .error, "error": .error, "warning": .warning, "notice": .notice, "info": .info,
    "debug": .debug, "trace": .trace,
  ]

  /// A `[Daemon]` key holding a whole number from `minimum` to 65536.
  private static func countKey(
    _ name: String, _ field: WritableKeyPath<DaemonConfiguration, Int> & Sendable, _ defaultValue: Int,
    minimum: Int, meaning: String
  ) -> ConfigurationKey {
    ConfigurationKey(
      section: "Daemon", name: name, defaultText: String(defaultValue), valueName: "number", meaning: meaning,
      apply: { config, value throws(InvalidValue) in
        guard let count = Int(value), (minimum...65_536).contains(count) else {
          throw InvalidValue(reason: "expected a whole number from \(minimum) to 65536")
        }
        config[keyPath: field] = count
      },
      reset: { $0[keyPath: field] = $1[keyPath: field] })
  }

  /// A key holding a span longer than 0, or "infinity" for none.
  private static func spanOrInfinityKey(
    section: String, name: String, _ field: WritableKeyPath<DaemonConfiguration, Duration?> & Sendable,
    defaultText: String, meaning: String
  ) -> ConfigurationKey {
    ConfigurationKey(
      section: section, name: name, defaultText: defaultText, valueName: "span|infinity", meaning: meaning,
      apply: { config, value throws(InvalidValue) in
        config[keyPath: field] = value == "infinity" ? nil : try positiveSpan(value, infinity: true)
      },
      reset: { $0[keyPath: field] = $1[keyPath: field] })
  }
}
