#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One assignment of a service-manager notification, as listed in sd_notify(3).
public enum NotifyState: Hashable, Sendable, CustomStringConvertible {
  /// `READY=1`: start-up is finished, the service is up.
  case ready
  /// `RELOADING=1`: the service reloads its configuration. Send it together with
  /// `monotonicUsec` (see `reloadingNow`), then `ready` once the reload is done.
  case reloading
  /// `STOPPING=1`: the service is shutting down.
  case stopping
  /// `STATUS=…`: one line describing the service's state. Line breaks become spaces.
  case status(String)
  /// `WATCHDOG=1`: keep-alive ping for `WatchdogSec=`.
  case watchdog
  /// `MONOTONIC_USEC=…`: `CLOCK_MONOTONIC` in microseconds, sent with `RELOADING=1`.
  case monotonicUsec(UInt64)
  /// `EXTEND_TIMEOUT_USEC=…`: asks for this much more time for the current start, stop or
  /// reload step, counted from now.
  case extendTimeoutUsec(UInt64)
  /// `ERRNO=…`: the errno-style reason of a failure.
  case errno(Int32)
  /// `MAINPID=…`: the service's main process.
  case mainPID(Int32)

  /// `RELOADING=1` and `MONOTONIC_USEC=` with the current monotonic time, as systemd
  /// expects them: in one message.
  public static func reloadingNow() -> [NotifyState] {
    [.reloading, .monotonicUsec(SystemdNotifier.monotonicMicroseconds())]
  }

  /// `EXTEND_TIMEOUT_USEC=` for a duration.
  public static func extendTimeout(_ duration: Duration) -> NotifyState {
    .extendTimeoutUsec(microseconds(duration))
  }

  /// The `KEY=value` line sent for this state.
  public var assignment: String {
    switch self {
    case .ready: "READY=1"
    case .reloading: "RELOADING=1"
    case .stopping: "STOPPING=1"
    case .status(let text): "STATUS=" + Self.singleLine(text)
    case .watchdog: "WATCHDOG=1"
    case .monotonicUsec(let value): "MONOTONIC_USEC=\(value)"
    case .extendTimeoutUsec(let value): "EXTEND_TIMEOUT_USEC=\(value)"
    case .errno(let value): "ERRNO=\(value)"
    case .mainPID(let pid): "MAINPID=\(pid)"
    }
  }

  public var description: String { assignment }

  private static func singleLine(_ text: String) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.map { $0 == "\n" || $0 == "\r" || $0 == "\0" ? " " : $0 }))
  }

  private static func microseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    return UInt64(seconds) * 1_000_000 + UInt64(attoseconds / 1_000_000_000_000)
  }
}

/// Where notifications go. `SystemdNotifier` is the real one; tests of the code above it
/// may record what it would send.
public protocol NotifySink: Sendable {
  /// Sends the states in one message. Returns false when there is no one to notify.
  @discardableResult
  func send(_ states: [NotifyState]) throws(SystemdError) -> Bool
}

/// Tells the service manager about the service's state through `sd_notify` (the socket
/// named by `NOTIFY_SOCKET`). Without `NOTIFY_SOCKET` every send does nothing.
public struct SystemdNotifier: NotifySink {
  public init() {}

  /// True when a service manager waits for notifications (`NOTIFY_SOCKET` is set).
  public var isEnabled: Bool {
    guard let value = getenv("NOTIFY_SOCKET") else { return false }
    return value.pointee != 0
  }

  /// Sends the states in one message, in the order given. Returns false when
  /// `NOTIFY_SOCKET` is not set (or nothing was given); throws when the socket is set but
  /// the message cannot be sent.
  @discardableResult
  public func send(_ states: NotifyState...) throws(SystemdError) -> Bool {
    try send(states)
  }

  @discardableResult
  public func send(_ states: [NotifyState]) throws(SystemdError) -> Bool {
    guard !states.isEmpty else { return false }
    return try LibSystemd.notify(states.map(\.assignment).joined(separator: "\n"))
  }

  /// The watchdog interval the service manager expects pings within (`WATCHDOG_USEC`),
  /// when the watchdog is enabled for this process; nil when it is not. Ping at half of it.
  /// Throws when `WATCHDOG_USEC` or `WATCHDOG_PID` is malformed.
  public static func watchdogInterval() throws(SystemdError) -> Duration? {
    guard let microseconds = try LibSystemd.watchdogMicroseconds() else { return nil }
    return .microseconds(Int64(clamping: microseconds))
  }

  /// `CLOCK_MONOTONIC` in microseconds, for `MONOTONIC_USEC=`. Not a wall-clock read: the
  /// monotonic clock counts time since boot and is not affected by clock steps.
  public static func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
  }
}
