import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One field of a journal entry: `NAME=value`.
public struct JournalField: Hashable, Sendable, CustomStringConvertible {
  /// The longest field name the journal accepts.
  public static let maximumNameLength = 64

  public var name: String
  /// Any text; line breaks are kept (the entry is sent in the journal's binary-safe form).
  public var value: String

  public init(name: String, value: String) {
    self.name = name
    self.value = value
  }

  /// Why the journal would reject `name`, or nil when it is valid: 1 to 64 characters of
  /// upper-case ASCII letters, digits and underscores, not starting with a digit or with an
  /// underscore (those names are reserved for fields journald adds itself).
  public static func problem(withName name: String) -> String? {
    if name.isEmpty { return "field name must not be empty" }
    if name.utf8.count > maximumNameLength {
      return "field name \"\(name)\" is longer than \(maximumNameLength) characters"
    }
    guard name.utf8.allSatisfy({ isUpper($0) || isDigit($0) || $0 == UInt8(ascii: "_") }) else {
      return "field name \"\(name)\" may only contain A-Z, 0-9 and \"_\""
    }
    let first = name.utf8.first!
    if first == UInt8(ascii: "_") {
      return "field name \"\(name)\" must not start with \"_\" (reserved for journald)"
    }
    if isDigit(first) { return "field name \"\(name)\" must not start with a digit" }
    return nil
  }

  /// Turns any key (e.g. swift-log metadata such as `trial-id`) into a valid field name
  /// (`TRIAL_ID`): upper-cased, other characters replaced by `_`, leading underscores
  /// dropped, prefixed with `META_` when empty or starting with a digit, cut to 64.
  public static func fieldName(forKey key: String) -> String {
    var bytes = key.utf8.map { byte -> UInt8 in
      if isUpper(byte) || isDigit(byte) { return byte }
      if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { return byte - 32 }
      return UInt8(ascii: "_")
    }
    while bytes.first == UInt8(ascii: "_") { bytes.removeFirst() }
    if bytes.first.map(isDigit) ?? true { bytes = Array("META_".utf8) + bytes }
    return String(decoding: bytes.prefix(maximumNameLength), as: UTF8.self)
  }

  public var description: String { "\(name)=\(value)" }

  private static func isUpper(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")
  }

  private static func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
  }
}

/// Where journal entries go. `SystemdJournal` is the real one.
public protocol JournalSink: Sendable {
  /// Writes one entry made of `fields`, in the order given.
  func send(_ fields: [JournalField]) throws
}

/// Writes entries to journald with `sd_journal_sendv`.
///
/// When no journald listens, entries are dropped without an error: choose the journal
/// with `JournalDestination.detect` rather than by trying to send.
public struct SystemdJournal: JournalSink {
  public init() {}

  /// Sends one entry. Throws `SystemdError.invalidJournalField` (sending nothing) when a
  /// field name is invalid, `SystemdError.journalSendFailed` when the send fails.
  public func send(_ fields: [JournalField]) throws(SystemdError) {
    guard !fields.isEmpty else { return }
    for field in fields {
      if let problem = JournalField.problem(withName: field.name) {
        throw SystemdError(.invalidJournalField, detail: problem)
      }
    }
    var bytes: [UInt8] = []
    var spans: [(start: Int, count: Int)] = []
    spans.reserveCapacity(fields.count)
    for field in fields {
      let start = bytes.count
      bytes.append(contentsOf: field.name.utf8)
      bytes.append(UInt8(ascii: "="))
      bytes.append(contentsOf: field.value.utf8)
      spans.append((start, bytes.count - start))
    }
    let result: Result<Void, SystemdError> = bytes.withUnsafeMutableBytes { buffer in
      let base = buffer.baseAddress!
      let entries = spans.map { iovec(iov_base: base + $0.start, iov_len: $0.count) }
      return entries.withUnsafeBufferPointer { pointer in
        Result { () throws(SystemdError) in try LibSystemd.journalSend(pointer) }
      }
    }
    try result.get()
  }
}

/// Which logging the daemon was asked for (e.g. `LogTarget=` in its configuration).
public enum LogTarget: String, Hashable, Sendable, CaseIterable {
  /// The journal when standard error is connected to it, else standard error.
  case auto
  /// The journal, when journald's socket exists; else standard error.
  case journal
  /// Standard error, in a readable one-line format.
  case console
}

/// Where the daemon's logs go.
public enum JournalDestination: Hashable, Sendable {
  /// Structured entries to journald (`JournalLogHandler`).
  case journal
  /// Readable lines on standard error (`StderrLogHandler`).
  case standardError

  /// journald's native socket, which `sd_journal_sendv` writes to.
  public static let journalSocketPath = "/run/systemd/journal/socket"

  /// Decides where logs go. `auto` picks the journal when standard error is connected to
  /// it: `JOURNAL_STREAM` holds the `device:inode` of standard error (systemd.exec(5)), so a
  /// shell started from a service, whose standard error is elsewhere, logs to its terminal.
  /// `journal` picks the journal when journald's socket exists. The outcome never depends
  /// on `sd_journal_sendv`'s return code, which is 0 even when no journald listens.
  public static func detect(
    target: LogTarget = .auto,
    environment: [String: String] = ProcessInfo.processInfo.environment,
    standardError: Int32 = STDERR_FILENO,
    journalSocket: String = journalSocketPath
  ) -> JournalDestination {
    switch target {
    case .console:
      return .standardError
    case .journal:
      return isSocket(journalSocket) ? .journal : .standardError
    case .auto:
      return isJournalStream(standardError, environment: environment) ? .journal : .standardError
    }
  }

  /// True when `fd` is the stream systemd connected to the journal: its device and inode
  /// match `JOURNAL_STREAM`.
  public static func isJournalStream(
    _ fd: Int32, environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> Bool {
    guard let value = environment["JOURNAL_STREAM"] else { return false }
    let parts = value.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
      return false
    }
    var info = stat()
    guard fstat(fd, &info) == 0 else { return false }
    return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
  }

  private static func isSocket(_ path: String) -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else { return false }
    return info.st_mode & S_IFMT == S_IFSOCK
  }
}
