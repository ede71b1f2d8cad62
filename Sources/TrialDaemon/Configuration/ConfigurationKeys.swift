import Logging
import Systemd
import TrialCore

/// Why a value cannot be used; the loader adds file, line, key and section.
struct InvalidValue: Error {
  var reason: String
}

/// One key of the configuration: where it lives, its default as written in the sample
/// configuration, how a value is applied, and how an empty assignment resets it.
struct ConfigurationKey: Sendable {
  var section: String
  var name: String
  /// The default as the sample configuration writes it (`#Key=default`).
  var defaultText: String
  var apply: @Sendable (inout DaemonConfiguration, String) throws(InvalidValue) -> Void
  var reset: @Sendable (inout DaemonConfiguration, DaemonConfiguration) -> Void
}

/// Every key trialwatchd reads.
enum ConfigurationSchema {
  static let keys: [ConfigurationKey] = [
    ConfigurationKey(
      section: "Trials", name: "DefaultLength", defaultText: "5d",
      apply: { config, value throws(InvalidValue) in
        let length = try span(value)
        guard length > .zero else { throw InvalidValue(reason: "must be longer than 0") }
        config.defaultLength = Days(length)
      },
      reset: { $0.defaultLength = $1.defaultLength }),
    ConfigurationKey(
      section: "Trials", name: "DefaultReminders", defaultText: "3d, 1d",
      apply: { config, value throws(InvalidValue) in config.defaultReminders = try reminders(value) },
      reset: { $0.defaultReminders = $1.defaultReminders }),
    ConfigurationKey(
      section: "CatchUp", name: "LateReminders", defaultText: "latest",
      apply: { config, value throws(InvalidValue) in
        guard let policy = CatchUpPolicy.LateReminders(rawValue: value) else {
          throw InvalidValue(reason: "expected latest, all or skip")
        }
        config.catchUp.reminders = policy
      },
      reset: { $0.catchUp.reminders = $1.catchUp.reminders }),
    ConfigurationKey(
      section: "CatchUp", name: "ReminderGrace", defaultText: "1h",
      apply: { config, value throws(InvalidValue) in config.catchUp.grace = try span(value) },
      reset: { $0.catchUp.grace = $1.catchUp.grace }),
    ConfigurationKey(
      section: "CatchUp", name: "LateThreshold", defaultText: "1s",
      apply: { config, value throws(InvalidValue) in
        config.catchUp.lateThreshold = try span(value)
      },
      reset: { $0.catchUp.lateThreshold = $1.catchUp.lateThreshold }),
    ConfigurationKey(
      section: "Daemon", name: "StateDirectory", defaultText: DaemonConfiguration.defaultStateDirectory,
      apply: { config, value throws(InvalidValue) in config.stateDirectory = try absolutePath(value) },
      reset: { $0.stateDirectory = $1.stateDirectory }),
    ConfigurationKey(
      section: "Daemon", name: "Socket", defaultText: DaemonConfiguration.defaultSocketPath,
      apply: { config, value throws(InvalidValue) in
        let path = try absolutePath(value)
        guard path.utf8.count <= maximumSocketPathLength else {
          throw InvalidValue(
            reason: "longer than \(maximumSocketPathLength) bytes, the limit of a Unix socket address")
        }
        config.socketPath = path
      },
      reset: { $0.socketPath = $1.socketPath }),
    ConfigurationKey(
      section: "Daemon", name: "SocketGroup", defaultText: DaemonConfiguration.defaultSocketGroup,
      apply: { config, value throws(InvalidValue) in config.socketGroup = try groupName(value) },
      reset: { $0.socketGroup = $1.socketGroup }),
    ConfigurationKey(
      section: "Daemon", name: "ControlGroup", defaultText: DaemonConfiguration.defaultControlGroup,
      apply: { config, value throws(InvalidValue) in config.controlGroup = try groupName(value) },
      reset: { $0.controlGroup = $1.controlGroup }),
    countKey("MaxConnections", \.maxConnections, DaemonConfiguration.defaultMaxConnections, minimum: 1),
    countKey(
      "MaxConnectionsPerUser", \.maxConnectionsPerUser, DaemonConfiguration.defaultMaxConnectionsPerUser,
      minimum: 1),
    countKey(
      "ReservedConnections", \.reservedConnections, DaemonConfiguration.defaultReservedConnections, minimum: 0
    ),
    ConfigurationKey(
      section: "Daemon", name: "IdleTimeout", defaultText: "5min",
      apply: { config, value throws(InvalidValue) in
        if value == "infinity" {
          config.idleTimeout = nil
          return
        }
        config.idleTimeout = try positiveSpan(value, infinity: true)
      },
      reset: { $0.idleTimeout = $1.idleTimeout }),
    ConfigurationKey(
      section: "Daemon", name: "MessageTimeout", defaultText: "10s",
      apply: { config, value throws(InvalidValue) in config.messageTimeout = try positiveSpan(value) },
      reset: { $0.messageTimeout = $1.messageTimeout }),
    ConfigurationKey(
      section: "Daemon", name: "LogLevel", defaultText: "info",
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
      section: "Daemon", name: "LogTarget", defaultText: "auto",
      apply: { config, value throws(InvalidValue) in
        guard let target = LogTarget(rawValue: value) else {
          throw InvalidValue(reason: "expected auto, journal or console")
        }
        config.logTarget = target
      },
      reset: { $0.logTarget = $1.logTarget }),
  ]

  static let sections: [String] = {
    var seen: [String] = []
    for key in keys where !seen.contains(key.section) { seen.append(key.section) }
    return seen
  }()

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
    minimum: Int
  ) -> ConfigurationKey {
    ConfigurationKey(
      section: "Daemon", name: name, defaultText: String(defaultValue),
      apply: { config, value throws(InvalidValue) in
        guard let count = Int(value), (minimum...65_536).contains(count) else {
          throw InvalidValue(reason: "expected a whole number from \(minimum) to 65536")
        }
        config[keyPath: field] = count
      },
      reset: { $0[keyPath: field] = $1[keyPath: field] })
  }

  // MARK: Value parsers

  static func positiveSpan(_ value: String, infinity: Bool = false) throws(InvalidValue) -> Duration {
    let span = try span(value)
    guard span > .zero else {
      throw InvalidValue(
        reason: "must be longer than 0" + (infinity ? " (use \"infinity\" for no timeout)" : ""))
    }
    return span
  }

  static func span(_ value: String) throws(InvalidValue) -> Duration {
    do {
      return try TimeSpan.parse(value)
    } catch {
      throw InvalidValue(reason: "not a time span (like 5d, 36h, 90s or 1d 12h): \(error.problem)")
    }
  }

  static func reminders(_ value: String) throws(InvalidValue) -> ReminderSchedule {
    if value == "none" { return .none }
    var offsets: [Duration] = []
    for item in value.split(separator: ",", omittingEmptySubsequences: false) {
      let text = ConfigurationSyntax.trimmed(item)
      guard !text.isEmpty else {
        throw InvalidValue(reason: "empty reminder offset; expected time spans separated by commas, or none")
      }
      offsets.append(try span(text))
    }
    do {
      return try ReminderSchedule(offsets)
    } catch {
      throw InvalidValue(reason: error.description)
    }
  }

  static func absolutePath(_ value: String) throws(InvalidValue) -> String {
    guard value.hasPrefix("/") else { throw InvalidValue(reason: "must be an absolute path") }
    guard !value.utf8.contains(0) else { throw InvalidValue(reason: "must not contain NUL") }
    return value
  }

  /// A group name as useradd(8) accepts it, or a numeric group id.
  static func groupName(_ value: String) throws(InvalidValue) -> String {
    if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
      guard UInt32(value) != nil, value != "4294967295" else {
        throw InvalidValue(reason: "group id out of range")
      }
      return value
    }
    let bytes = Array(value.utf8)
    let isLetter = { (b: UInt8) in (b >= 97 && b <= 122) || (b >= 65 && b <= 90) }
    let isDigit = { (b: UInt8) in b >= 48 && b <= 57 }
    guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_"),
      bytes.count <= 32,
      bytes.dropFirst().allSatisfy({
        isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
          || $0 == UInt8(ascii: ".")
      })
    else {
      throw InvalidValue(
        reason: "not a group name (a letter or \"_\", then letters, digits, \"_\", \"-\" or \".\", "
          + "at most 32) or a numeric group id")
    }
    return value
  }
}
