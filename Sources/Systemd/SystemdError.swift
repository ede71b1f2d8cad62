/// A call into systemd's interfaces that failed, or a value they cannot carry.
///
/// Compare with the static members to tell the kinds apart:
/// `error == .invalidJournalField`. Two errors of the same kind compare equal whatever
/// their detail.
public struct SystemdError: Error, Hashable, Sendable, CustomStringConvertible {
  enum Code: Hashable, Sendable {
    case notifyFailed
    case invalidWatchdogSettings
    case listenFDsFailed
    case journalSendFailed
    case invalidJournalField
  }

  let code: Code
  /// The `errno` value behind the failure, when there is one.
  public let errno: Int32?
  /// What went wrong, in words.
  public let detail: String

  init(_ code: Code, errno: Int32? = nil, detail: String) {
    self.code = code
    self.errno = errno
    self.detail = detail
  }

  /// `sd_notify` could not reach the service manager.
  public static let notifyFailed = SystemdError(.notifyFailed, detail: "notification failed")
  /// `WATCHDOG_USEC` or `WATCHDOG_PID` cannot be parsed.
  public static let invalidWatchdogSettings = SystemdError(
    .invalidWatchdogSettings, detail: "invalid watchdog settings")
  /// `LISTEN_FDS`, `LISTEN_PID` or `LISTEN_FDNAMES` cannot be parsed or do not match.
  public static let listenFDsFailed = SystemdError(.listenFDsFailed, detail: "socket activation failed")
  /// `sd_journal_sendv` failed.
  public static let journalSendFailed = SystemdError(.journalSendFailed, detail: "journal send failed")
  /// A journal field name the journal would reject.
  public static let invalidJournalField = SystemdError(
    .invalidJournalField, detail: "invalid journal field")

  public static func == (lhs: SystemdError, rhs: SystemdError) -> Bool {
    lhs.code == rhs.code
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(code)
  }

  public var description: String { detail }
}
