import CSystemd
// The one file that imports libsystemd. Everything else in this target calls these wrappers,
// which turn libsystemd's negative-errno return codes into `SystemdError`s.
import ErrnoText

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

enum LibSystemd {
  /// The first file descriptor passed by socket activation (`SD_LISTEN_FDS_START`).
  static let listenFDsStart = Int32(SD_LISTEN_FDS_START)

  /// Sends one notification message (`KEY=value` lines) to the service manager with
  /// `sd_notify`. The environment is left alone, so later notifications reach it too.
  /// Returns false when `NOTIFY_SOCKET` is not set.
  static func notify(_ message: String) throws(SystemdError) -> Bool {
    let result = sd_notify(0, message)
    try checkError(result, .notifyFailed, "sd_notify")
    return result > 0
  }

  /// The watchdog interval from `WATCHDOG_USEC`, in microseconds, when it applies to this
  /// process (`WATCHDOG_PID` unset or ours); nil otherwise.
  static func watchdogMicroseconds() throws(SystemdError) -> UInt64? {
    var microseconds: UInt64 = 0
    let result = sd_watchdog_enabled(0, &microseconds)
    try checkError(result, .invalidWatchdogSettings, "sd_watchdog_enabled")
    return result > 0 ? microseconds : nil
  }

  /// Takes the descriptors passed by socket activation, with their names (`FileDescriptorName=`;
  /// "unknown" when the manager passed none). Unsets `LISTEN_FDS`, `LISTEN_PID` and
  /// `LISTEN_FDNAMES`, so that children do not inherit them, and sets close-on-exec.
  static func listenFDs() throws(SystemdError) -> [(fd: Int32, name: String)] {
    var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
    let count = sd_listen_fds_with_names(1, &names)
    defer {
      if let names {
        var cursor = names
        while let name = cursor.pointee {
          free(name)
          cursor += 1
        }
        free(names)
      }
    }
    try checkError(count, .listenFDsFailed, "sd_listen_fds_with_names")
    return (0..<Int(count)).map { index in
      let name = names.flatMap { $0[index] }.map { String(cString: $0) } ?? "unknown"
      return (fd: listenFDsStart + Int32(index), name: name)
    }
  }

  /// Sends one journal entry made of `NAME=value` byte strings with `sd_journal_sendv`.
  /// Note: returns normally when no journald listens (libsystemd drops the entry).
  static func journalSend(_ entries: UnsafeBufferPointer<iovec>) throws(SystemdError) {
    let result = sd_journal_sendv(entries.baseAddress, Int32(entries.count))
    try checkError(result, .journalSendFailed, "sd_journal_sendv")
  }

  private static func checkError(_ result: Int32, _ code: SystemdError.Code, _ call: String)
    throws(SystemdError)
  {
    guard result < 0 else { return }
    throw SystemdError(code, errno: -result, detail: "\(call): \(errnoText(-result))")
  }
}
