import Logging
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A log level shared by every handler made by `SystemdLogging.bootstrap`, so that a
/// configuration reload can change it for loggers that already exist.
public final class SharedLogLevel: Sendable {
  private let storage: Mutex<Logger.Level>

  public init(_ level: Logger.Level) {
    storage = Mutex(level)
  }

  public var level: Logger.Level {
    get { storage.withLock { $0 } }
    set { storage.withLock { $0 = newValue } }
  }
}

/// The syslog priority of a swift-log level (`PRIORITY=` in the journal).
public func syslogPriority(of level: Logger.Level) -> Int {
  switch level {
  case .trace, .debug: 7
  case .info: 6
  case .notice: 5
  case .warning: 4
  case .error: 3
  case .critical: 2
  }
}

/// A swift-log backend writing structured journal entries: `MESSAGE`, `PRIORITY`,
/// `SYSLOG_IDENTIFIER`, `LOGGER` (the logger's label), `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, `ERROR` (when the event carries one) and each metadata key as an upper-case
/// field (`trial-id` becomes `TRIAL_ID`; a key clashing with one of the fields above gets a
/// `META_` prefix). When the journal cannot be written, the line goes to standard error.
public struct JournalLogHandler: LevelledLogHandler {
  public static let ownFields: Set<String> = [
    "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
    "ERROR",
  ]

  public let label: String
  public let identifier: String
  public var metadata: Logger.Metadata = [:]
  public var metadataProvider: Logger.MetadataProvider?
  private let sink: any JournalSink
  var level: LevelSource

  /// - Parameters:
  ///   - identifier: `SYSLOG_IDENTIFIER`, normally the program's name.
  ///   - sink: where entries go; the real journal by default.
  public init(
    label: String, identifier: String, sink: any JournalSink = SystemdJournal(),
    level: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil
  ) {
    self.init(
      label: label, identifier: identifier, sink: sink, level: .fixed(level),
      metadataProvider: metadataProvider)
  }

  init(
    label: String, identifier: String, sink: any JournalSink, level: LevelSource,
    metadataProvider: Logger.MetadataProvider?
  ) {
    self.label = label
    self.identifier = identifier
    self.sink = sink
    self.level = level
    self.metadataProvider = metadataProvider
  }

  func write(_ event: LogEvent, metadata merged: Logger.Metadata) {
    let fields = Self.fields(for: event, label: label, identifier: identifier, metadata: merged)
    do {
      try sink.send(fields)
    } catch {
      let line = StderrLogHandler.format(
        level: event.level, label: label, message: event.message.description, metadata: merged,
        error: event.error)
      writeLine(line + " (journal unavailable: \(error))", to: STDERR_FILENO)
    }
  }

  /// The fields of one entry, in the order they are sent.
  public static func fields(
    for event: LogEvent, label: String, identifier: String, metadata: Logger.Metadata
  ) -> [JournalField] {
    var fields = [
      JournalField(name: "MESSAGE", value: event.message.description),
      JournalField(name: "PRIORITY", value: String(syslogPriority(of: event.level))),
      JournalField(name: "SYSLOG_IDENTIFIER", value: identifier),
      JournalField(name: "LOGGER", value: label),
      JournalField(name: "CODE_FILE", value: event.file),
      JournalField(name: "CODE_LINE", value: String(event.line)),
      JournalField(name: "CODE_FUNC", value: event.function),
    ]
    if let error = event.error {
      fields.append(JournalField(name: "ERROR", value: String(describing: error)))
    }
    for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
      var name = JournalField.fieldName(forKey: key)
      if ownFields.contains(name) { name = String(("META_" + name).prefix(JournalField.maximumNameLength)) }
      fields.append(JournalField(name: name, value: value.description))
    }
    return fields
  }
}

/// A swift-log backend for a terminal: one readable line per message on standard error (or
/// another descriptor), e.g.
///
///     warning  trialwatchd: socket taken over path=/run/trialwatch/io.trialwatch
///
/// The level padded to a column, the logger's label, the message, then the metadata as
/// `key=value` (sorted; values with spaces or quotes are quoted). Control characters in the
/// message are escaped, so every message is exactly one line.
public struct StderrLogHandler: LevelledLogHandler {
  public let label: String
  public var metadata: Logger.Metadata = [:]
  public var metadataProvider: Logger.MetadataProvider?
  private let fileDescriptor: Int32
  var level: LevelSource

  public init(
    label: String, fileDescriptor: Int32 = STDERR_FILENO, level: Logger.Level = .info,
    metadataProvider: Logger.MetadataProvider? = nil
  ) {
    self.init(
      label: label, fileDescriptor: fileDescriptor, level: .fixed(level),
      metadataProvider: metadataProvider)
  }

  init(
    label: String, fileDescriptor: Int32, level: LevelSource,
    metadataProvider: Logger.MetadataProvider?
  ) {
    self.label = label
    self.fileDescriptor = fileDescriptor
    self.level = level
    self.metadataProvider = metadataProvider
  }

  func write(_ event: LogEvent, metadata merged: Logger.Metadata) {
    let line = Self.format(
      level: event.level, label: label, message: event.message.description, metadata: merged,
      error: event.error)
    writeLine(line, to: fileDescriptor)
  }

  /// One line, without the line break.
  public static func format(
    level: Logger.Level, label: String, message: String, metadata: Logger.Metadata,
    error: (any Error)? = nil
  ) -> String {
    let levelName = level.rawValue
    var line = levelName + String(repeating: " ", count: max(1, 9 - levelName.count))
    line += label + ": " + escaped(message)
    var pairs = metadata.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value.description) }
    if let error { pairs.append(("error", String(describing: error))) }
    for (key, value) in pairs {
      line += " " + escaped(key) + "=" + quotedIfNeeded(value)
    }
    return line
  }

  private static func escaped(_ text: String) -> String {
    // Printable ASCII, most text logged, goes out as it is.
    if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if isControl(scalar) {
          out += "\\u{" + String(scalar.value, radix: 16) + "}"
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }

  private static func quotedIfNeeded(_ value: String) -> String {
    let needsQuotes =
      value.isEmpty
      || value.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || isControl($0) }
    guard needsQuotes else { return value }
    return "\"" + escaped(value).replacing("\"", with: "\\\"") + "\""
  }

  /// Unicode's control characters (general category Cc): C0, DEL and C1, a fixed set, so no
  /// look-up of the scalar's properties.
  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
  }
}

/// Installs the swift-log backend the process should use.
public enum SystemdLogging {
  /// Decides where logs go (see `JournalDestination.detect`) and bootstraps swift-log with
  /// the matching handler. Call once, at start. Every handler follows `level` until a
  /// logger sets its own level.
  ///
  /// - Parameter identifier: the program's name (`SYSLOG_IDENTIFIER=` in the journal).
  @discardableResult
  public static func bootstrap(
    identifier: String, target: LogTarget = .auto, level: SharedLogLevel = SharedLogLevel(.info),
    metadataProvider: Logger.MetadataProvider? = nil
  ) -> JournalDestination {
    let destination = JournalDestination.detect(target: target)
    LoggingSystem.bootstrap(
      { label, provider in
        makeHandler(
          label: label, destination: destination, identifier: identifier, level: level,
          metadataProvider: provider)
      }, metadataProvider: metadataProvider)
    return destination
  }

  /// The handler `bootstrap` installs for `destination`.
  public static func makeHandler(
    label: String, destination: JournalDestination, identifier: String, level: SharedLogLevel,
    metadataProvider: Logger.MetadataProvider? = nil, journal: any JournalSink = SystemdJournal(),
    standardError: Int32 = STDERR_FILENO
  ) -> any LogHandler {
    switch destination {
    case .journal:
      JournalLogHandler(
        label: label, identifier: identifier, sink: journal, level: .shared(level),
        metadataProvider: metadataProvider)
    case .standardError:
      StderrLogHandler(
        label: label, fileDescriptor: standardError, level: .shared(level),
        metadataProvider: metadataProvider)
    }
  }
}

/// A handler's level: its own, or the shared one set at bootstrap.
enum LevelSource: Sendable {
  case fixed(Logger.Level)
  case shared(SharedLogLevel)

  var current: Logger.Level {
    switch self {
    case .fixed(let level): level
    case .shared(let shared): shared.level
    }
  }
}

/// What the journal's handler and the terminal's share: a level that follows the shared one
/// until a logger sets its own, the metadata, and how an event's metadata is merged into it.
protocol LevelledLogHandler: LogHandler {
  var level: LevelSource { get set }
  /// Writes one event, with its metadata merged (`mergedMetadata`).
  func write(_ event: LogEvent, metadata merged: Logger.Metadata)
}

extension LevelledLogHandler {
  public var logLevel: Logger.Level {
    get { level.current }
    set { level = .fixed(newValue) }
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func log(event: LogEvent) {
    write(event, metadata: mergedMetadata(metadata, metadataProvider, event.metadata))
  }
}

/// The handler's metadata, then the provider's, then the event's; later ones win.
private func mergedMetadata(
  _ handler: Logger.Metadata, _ provider: Logger.MetadataProvider?, _ event: Logger.Metadata?
) -> Logger.Metadata {
  var merged = handler
  if let provided = provider?.get(), !provided.isEmpty {
    merged.merge(provided, uniquingKeysWith: { _, new in new })
  }
  if let event, !event.isEmpty {
    merged.merge(event, uniquingKeysWith: { _, new in new })
  }
  return merged
}

/// Writes `line` and a line break in one `write`, so lines of concurrent writers do not mix.
private func writeLine(_ line: String, to fd: Int32) {
  var bytes = Array(line.utf8)
  bytes.append(UInt8(ascii: "\n"))
  bytes.withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
      if written < 0 {
        if errno == EINTR { continue }
        return
      }
      offset += written
    }
  }
}
