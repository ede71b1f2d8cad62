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
    key(
      section: "Trials", name: "DefaultLength", \.defaultLength, defaultText: "5d", valueName: "span",
      meaning:
        "The length of a trial started without one (neither a duration nor an end time given)."
    ) { value throws(InvalidValue) in
      let length = try span(value)
      guard length > .zero else { throw InvalidValue(reason: "must be longer than 0") }
      return length
    },
    key(
      section: "Trials", name: "DefaultReminders", \.defaultReminders, defaultText: "3d, 1d",
      valueName: "span[, span...]",
      meaning:
        "The reminders of a trial started without its own: time spans before the trial's end, "
        + "separated by commas, or \"none\" for no reminders.",
      parse: reminders),
    key(
      section: "Trials", name: "ComplianceWarnings", \.complianceWarnings, defaultText: "yes",
      valueName: "boolean",
      meaning:
        "Whether a warning says so when trials longer than 7 days get no reminder 7 days or more before "
        + "their end: the rule Visa (since April 2020) and Mastercard apply to free trials that convert "
        + "to paid. It covers DefaultLength= and DefaultReminders= here, and is the default of each plan "
        + "file's own ComplianceWarnings=. Set it to no where trials do not convert to paid.",
      parse: boolean),
    spanOrInfinityKey(
      section: "Trials", name: "Retention", \.trialRetention, defaultText: "infinity",
      meaning:
        "How long an ended trial (expired, converted or cancelled) is kept, counted from its end. Past "
        + "it, the trial is removed with its ledger, in small steps that never hold up firing; "
        + "\"infinity\" keeps ended trials for ever. The records of subjects granted a trial once "
        + "(Once= in plan files) and the event log's events are kept apart, and outlive the trial."),
    choiceKey(
      section: "CatchUp", name: "LateReminders", \.catchUp.reminders, defaultText: "latest",
      valueName: "latest|all|skip", expected: "latest, all or skip",
      meaning:
        "Which late reminders fire. \"latest\" fires only the most recent late reminder of each trial"
        + " (none when its expiry fires at the same time) and skips the others; \"all\" fires every "
        + "late reminder; \"skip\" skips the reminders later than ReminderGrace=. An expiry always "
        + "fires. Skipped reminders are logged to the journal, never silently dropped."),
    key(
      section: "CatchUp", name: "ReminderGrace", \.catchUp.grace, defaultText: "1h", valueName: "span",
      meaning:
        "How late a reminder may be and still fire under LateReminders=skip.",
      parse: span),
    key(
      section: "CatchUp", name: "LateThreshold", \.catchUp.lateThreshold, defaultText: "1s",
      valueName: "span",
      meaning:
        "An event fired more than this after its due time counts as late: its journal entry says so, "
        + "with its lateness.",
      parse: span),
    key(
      section: "Events", name: "Retention", \.retention.age, defaultText: "90d", valueName: "span",
      meaning:
        "How long the event log keeps an event (counted from when it was taken) once every consumer "
        + "has acknowledged it. Pruning runs in small steps and never holds up firing."
    ) { value throws(InvalidValue) in try positiveSpan(value, infinity: false) },
    spanOrInfinityKey(
      section: "Events", name: "MaxRetention", \.retention.cap, defaultText: "365d",
      meaning:
        "How long the event log keeps an event that a consumer has not acknowledged. Past it, the "
        + "event is pruned anyway: the consumer's position moves past it, and the events it lost are "
        + "logged and counted in its status. \"infinity\" keeps them until every consumer has "
        + "acknowledged them. Never shorter than Retention=."),
    key(
      section: "Daemon", name: "StateDirectory", \.stateDirectory,
      defaultText: DaemonConfiguration.defaultStateDirectory, valueName: "path",
      meaning:
        "Where the trial store lives, an absolute path. Without it, the directory systemd creates for"
        + " the unit's StateDirectory= and passes as $STATE_DIRECTORY, else the default.",
      parse: absolutePath),
    key(
      section: "Daemon", name: "Socket", \.socketPath, defaultText: DaemonConfiguration.defaultSocketPath,
      valueName: "path",
      meaning:
        "The control socket the daemon binds when it is not socket-activated: an absolute path of at "
        + "most \(maximumSocketPathLength) bytes. With trialwatch.socket, the socket unit's ListenStream= applies instead.",
      parse: socketPath),
    key(
      section: "Daemon", name: "MetricsSocket", \.metricsSocketPath, defaultText: "", valueName: "path",
      meaning:
        "A second socket the daemon binds when it is not socket-activated, serving only the metrics "
        + "(io.systemd.Metrics), with the control socket's group and mode: an absolute path, or empty for none. "
        + "With trialwatch-report.socket (/run/systemd/report/io.trialwatch, for systemd-report) its "
        + "ListenStream= applies instead. The control socket serves the metrics too."
    ) { value throws(InvalidValue) in value.isEmpty ? nil : try socketPath(value) },
    key(
      section: "Daemon", name: "SocketGroup", \.socketGroup,
      defaultText: DaemonConfiguration.defaultSocketGroup,
      valueName: "group",
      meaning:
        "The group (a name or a numeric id) of the control socket when the daemon binds it itself, "
        + "with mode 0660: its members may connect, and so read. Under socket activation, "
        + "trialwatch.socket's SocketGroup= and SocketMode= apply instead.",
      parse: groupName),
    key(
      section: "Daemon", name: "ControlGroup", \.controlGroup,
      defaultText: DaemonConfiguration.defaultControlGroup, valueName: "group",
      meaning:
        "Members of this group (a name or a numeric id), root and the daemon's own user may start, "
        + "extend and end trials through the control socket. Anyone who can reach the socket may read. "
        + "An administrator who is not root joins both groups.",
      parse: groupName),
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
    key(
      section: "Daemon", name: "MessageTimeout", \.messageTimeout, defaultText: "10s", valueName: "span",
      meaning:
        "A client that has begun sending a message must finish it within this time, or it is answered"
        + " io.trialwatch.InvalidMessage and disconnected."
    ) { value throws(InvalidValue) in try positiveSpan(value) },
    key(
      section: "Daemon", name: "LogLevel", \.logLevel, defaultText: "info", valueName: "level",
      meaning:
        "The least severe messages logged: emerg, alert, crit, err, warning, notice, info or debug."
    ) { value throws(InvalidValue) in
      guard let level = logLevels[value] else {
        throw InvalidValue(
          reason: "expected one of emerg, alert, crit, err, warning, notice, info, debug (or trace, "
            + "error, critical)")
      }
      return level
    },
    choiceKey(
      section: "Daemon", name: "LogTarget", \.logTarget, defaultText: "auto",
      valueName: "journal|console|auto",
      expected: "auto, journal or console",
      meaning:
        "Where logs go: \"journal\" (structured entries), \"console\" (readable lines on standard "
        + "error) or \"auto\" (the journal when standard error is connected to it, as under systemd; "
        + "standard error otherwise)."),
    key(
      section: "Journal", name: "RateLimitIntervalSec", \.journalRateLimitInterval, defaultText: "30s",
      valueName: "span",
      meaning:
        "The window of RateLimitBurst=: in any span of this length, wherever it begins, the daemon "
        + "sends at most RateLimitBurst= event entries to the journal. 0 turns pacing off.",
      parse: span),
    key(
      section: "Journal", name: "RateLimitBurst", \.journalRateLimitBurst,
      defaultText: String(DaemonConfiguration.defaultJournalRateLimitBurst), valueName: "number|infinity",
      meaning:
        "Event entries sent to the journal within RateLimitIntervalSec=, at most; the others wait in "
        + "the store and follow, in order, as the window allows. Keep it under the limit journald "
        + "applies to the unit (trialwatch.service sets LogRateLimitBurst=10000 per 30s), with room for "
        + "the daemon's own log lines. 0 or \"infinity\" turns pacing off (up to "
        + "\(DaemonConfiguration.maximumJournalRateLimitBurst))."
    ) { value throws(InvalidValue) in
      if value == "infinity" || value == "0" { return nil }
      let maximum = DaemonConfiguration.maximumJournalRateLimitBurst
      guard let burst = Int(value), (1...maximum).contains(burst) else {
        throw InvalidValue(reason: "expected a whole number from 0 to \(maximum), or infinity")
      }
      return burst
    },
    choiceKey(
      section: "Store", name: "Backend", \.storeBackend, defaultText: StoreBackend.lmdb.rawValue,
      valueName: "lmdb|postgresql", expected: "lmdb or postgresql",
      meaning:
        "Where trials are kept. \"lmdb\": an LMDB store in StateDirectory=, on this host only. "
        + "\"postgresql\": a PostgreSQL database shared by several trialwatchd (fleet mode), set in "
        + "[PostgreSQL]. Read at start only: a reload keeps the running value."),
    key(
      section: "PostgreSQL", name: "Connection", \.postgreSQLKeys.connection, defaultText: "",
      valueName: "connection string|URI",
      meaning:
        "The database, as libpq takes it: keyword=value pairs separated by spaces (\"host=db1,db2 "
        + "dbname=trialwatch user=trialwatch target_session_attrs=read-write\") or a URI "
        + "(\"postgresql://trialwatch@db1,db2/trialwatch\"). Required "
        + "with Backend=postgresql. It must not hold the password: libpq reads it from the .pgpass file "
        + "named by PGPASSFILE, which trialwatch-fleet.conf points at a credential passed with systemd's "
        + "LoadCredential=. Only the form is checked here; libpq checks the rest when it connects. "
        + "libpq (libpq.so.5, Debian package libpq5) is opened then, not before.",
      echoesValue: false, parse: connection),
    key(
      section: "PostgreSQL", name: "NodeName", \.postgreSQLKeys.nodeName, defaultText: "", valueName: "name",
      meaning:
        "This daemon's name in the fleet, unique among the nodes sharing the database: 1 to "
        + "\(PostgreSQLSettings.maximumNodeNameLength) ASCII letters, digits, \"-\", \"_\" or \".\", "
        + "starting with a letter or digit.",
      defaultDescription: "the host name (\"localhost\" when there is none)"
    ) { value throws(InvalidValue) in
      guard PostgreSQLSettings.isValidNodeName(value) else { throw InvalidValue(reason: nodeNameRule) }
      return value
    },
    key(
      section: "PostgreSQL", name: "Shards", \.postgreSQLKeys.shards,
      defaultText: String(PostgreSQLSettings.defaultShards), valueName: "number",
      meaning:
        "How many shards the fleet spreads its trials over (\(PostgreSQLSettings.shardRange.lowerBound) to "
        + "\(PostgreSQLSettings.shardRange.upperBound)). Fixed when the first node creates the schema: a "
        + "node configured with another number refuses to start against it."
    ) { value throws(InvalidValue) in
      let range = PostgreSQLSettings.shardRange
      guard let shards = Int(value), range.contains(shards) else {
        throw InvalidValue(reason: "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
      }
      return shards
    },
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

  /// A key whose value `parse` reads into `field`; an empty assignment restores the field's
  /// default.
  private static func key<Value>(
    section: String, name: String, _ field: WritableKeyPath<DaemonConfiguration, Value> & Sendable,
    defaultText: String, valueName: String, meaning: String, defaultDescription: String? = nil,
    echoesValue: Bool = true, parse: @escaping @Sendable (String) throws(InvalidValue) -> Value
  ) -> ConfigurationKey {
    ConfigurationKey(
      section: section, name: name, defaultText: defaultText, valueName: valueName, meaning: meaning,
      apply: { config, value throws(InvalidValue) in config[keyPath: field] = try parse(value) },
      reset: { $0[keyPath: field] = $1[keyPath: field] }, defaultDescription: defaultDescription,
      echoesValue: echoesValue)
  }

  /// A key naming one of `Value`'s cases by its raw value; any other value is refused, saying
  /// what was `expected`.
  private static func choiceKey<Value: RawRepresentable<String> & Sendable>(
    section: String, name: String, _ field: WritableKeyPath<DaemonConfiguration, Value> & Sendable,
    defaultText: String, valueName: String, expected: String, meaning: String
  ) -> ConfigurationKey {
    key(section: section, name: name, field, defaultText: defaultText, valueName: valueName, meaning: meaning)
    {
      value throws(InvalidValue) in
      guard let choice = Value(rawValue: value) else { throw InvalidValue(reason: "expected \(expected)") }
      return choice
    }
  }

  /// A `[Daemon]` key holding a whole number from `minimum` to 65536.
  private static func countKey(
    _ name: String, _ field: WritableKeyPath<DaemonConfiguration, Int> & Sendable, _ defaultValue: Int,
    minimum: Int, meaning: String
  ) -> ConfigurationKey {
    key(
      section: "Daemon", name: name, field, defaultText: String(defaultValue), valueName: "number",
      meaning: meaning
    ) { value throws(InvalidValue) in
      guard let count = Int(value), (minimum...65_536).contains(count) else {
        throw InvalidValue(reason: "expected a whole number from \(minimum) to 65536")
      }
      return count
    }
  }

  /// A key holding a span longer than 0, or "infinity" for none.
  private static func spanOrInfinityKey(
    section: String, name: String, _ field: WritableKeyPath<DaemonConfiguration, Duration?> & Sendable,
    defaultText: String, meaning: String
  ) -> ConfigurationKey {
    key(
      section: section, name: name, field, defaultText: defaultText, valueName: "span|infinity",
      meaning: meaning
    ) {
      value throws(InvalidValue) in value == "infinity" ? nil : try positiveSpan(value, infinity: true)
    }
  }
}
