import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd run as a process of its own, as systemd runs it: with a notify socket it
/// reports READY=1 on, its store and control socket in one directory.
///
/// In `directory`: the configuration `trialwatch.conf`, the store under `state/` (filled
/// before the start if wanted, see `stateDirectory(in:)`), the control socket `io.trialwatch`,
/// the notify socket `notify.sock` and what the daemon logs, `trialwatchd.log`.
final class DaemonProcess {
  /// The trialwatchd built beside this bench.
  static var builtExecutable: URL {
    get throws {
      guard let bench = Bundle.main.executableURL else {
        throw BenchError("cannot find the bench executable, so neither the trialwatchd beside it")
      }
      return bench.deletingLastPathComponent().appendingPathComponent("trialwatchd")
    }
  }

  static func stateDirectory(in directory: URL) -> URL {
    directory.appendingPathComponent("state")
  }

  let socketPath: String
  /// Seconds from the start of the process to its READY=1.
  let secondsToReady: Double
  var pid: Int32 { process.processIdentifier }

  private let process = Process()
  private let notify: NotifySocket
  private let logPath: String

  /// Starts `executable` with `configuration` as its configuration file and waits for its
  /// READY=1 (at most `timeout` seconds).
  init(executable: URL, directory: URL, configuration: String, timeout: Double = 60) throws {
    guard FileManager.default.isExecutableFile(atPath: executable.path) else {
      throw BenchError("\(executable.path) is not an executable trialwatchd")
    }
    let config = directory.appendingPathComponent("trialwatch.conf")
    try configuration.write(to: config, atomically: true, encoding: .utf8)
    socketPath = directory.appendingPathComponent("io.trialwatch").path
    logPath = directory.appendingPathComponent("trialwatchd.log").path
    notify = try NotifySocket(path: directory.appendingPathComponent("notify.sock").path)
    guard FileManager.default.createFile(atPath: logPath, contents: nil),
      let log = FileHandle(forWritingAtPath: logPath)
    else { throw BenchError("cannot create \(logPath)") }
    defer { try? log.close() }

    process.executableURL = executable
    process.arguments = [
      "--config", config.path, "--state-dir", Self.stateDirectory(in: directory).path, "--socket", socketPath,
    ]
    var environment = ProcessInfo.processInfo.environment
    environment["NOTIFY_SOCKET"] = notify.path
    for key in [
      "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
    ] {
      environment.removeValue(forKey: key)
    }
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = log
    process.standardError = log

    var ready = false
    let process = process
    let notify = notify
    secondsToReady = try measure {
      try process.run()
      let deadline = Date().addingTimeInterval(timeout)
      while !ready, Date() < deadline {
        if let message = notify.receive(timeout: 0.2) {
          ready = message.split(separator: "\n").contains("READY=1")
        } else if !process.isRunning {
          break
        }
      }
    }
    guard ready else {
      let exited = !process.isRunning
      halt()
      let what =
        exited
        ? "exited with status \(process.terminationStatus) before READY=1"
        : "did not report READY=1 within \(Int(timeout)) s"
      throw BenchError("\(executable.path) \(what)" + logTail())
    }
  }

  deinit {
    halt()
  }

  /// The next sd_notify message, or nil after `timeout` seconds without one.
  func notification(timeout: Double) -> String? {
    notify.receive(timeout: timeout)
  }

  /// Stops the daemon with SIGTERM, as systemd does; fails when it does not exit cleanly.
  func stop() throws {
    guard process.isRunning else { throw BenchError("trialwatchd ended before it was stopped" + logTail()) }
    guard halt() else { throw BenchError("trialwatchd did not stop within 10 s of SIGTERM" + logTail()) }
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
      throw BenchError("trialwatchd stopped with status \(process.terminationStatus)" + logTail())
    }
  }

  /// Sends SIGTERM if the daemon still runs and waits for its end; after `timeout` seconds,
  /// kills it. Whether it ended on SIGTERM.
  @discardableResult
  private func halt(timeout: Double = 10) -> Bool {
    guard process.isRunning else { return true }
    process.terminate()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning, Date() < deadline { usleep(10_000) }
    let ended = !process.isRunning
    if !ended { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return ended
  }

  /// The last lines the daemon logged, to explain a failure.
  private func logTail() -> String {
    let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    let lines = text.split(separator: "\n").suffix(10)
    return lines.isEmpty ? "" : "; its last log lines:\n" + lines.joined(separator: "\n")
  }
}

/// A datagram socket that sd_notify messages are sent to, read all the time as systemd
/// reads it: a sender blocks once the socket's queue is full, and trialwatchd sends a status
/// with its changes. Messages wait for `receive` in order (the latest 10,000 at most).
final class NotifySocket {
  let path: String
  private let inbox: Inbox
  private let ended = DispatchSemaphore(value: 0)

  init(path: String) throws {
    self.path = path
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw BenchError("cannot make a datagram socket: errno \(errno)") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      close(fd)
      throw BenchError("socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0 else {
      let failure = errno
      close(fd)
      throw BenchError("cannot bind \(path): errno \(failure)")
    }
    let inbox = Inbox(fd: fd)
    self.inbox = inbox
    let ended = ended
    Thread {
      inbox.readUntilStopped()
      ended.signal()
    }.start()
  }

  deinit {
    inbox.stop()
    ended.wait()
    close(inbox.fd)
    unlink(path)
  }

  /// The next message, or nil after `timeout` seconds without one.
  func receive(timeout: Double) -> String? {
    inbox.next(timeout: timeout)
  }

  /// The socket and the messages read from it, shared with the thread that reads them.
  private final class Inbox: @unchecked Sendable {
    // @unchecked: `messages` and `stopped` are guarded by `condition`.
    let fd: Int32
    private let condition = NSCondition()
    private var messages: [String] = []
    private var stopped = false
    private static let kept = 10_000

    init(fd: Int32) {
      self.fd = fd
    }

    /// Reads messages as they come until `stop()`; looks for that a few times a second.
    func readUntilStopped() {
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        condition.lock()
        let stop = stopped
        condition.unlock()
        if stop { return }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 200) == 1 else { continue }
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { continue }
        condition.lock()
        messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        if messages.count > Self.kept { messages.removeFirst(messages.count - Self.kept) }
        condition.signal()
        condition.unlock()
      }
    }

    func stop() {
      condition.lock()
      stopped = true
      condition.unlock()
    }

    func next(timeout: Double) -> String? {
      let deadline = Date().addingTimeInterval(timeout)
      condition.lock()
      defer { condition.unlock() }
      while messages.isEmpty {
        if !condition.wait(until: deadline) { return nil }
      }
      return messages.removeFirst()
    }
  }
}
