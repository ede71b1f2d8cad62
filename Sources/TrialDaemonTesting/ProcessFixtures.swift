// Fixtures for tests that run the real binaries: trialwatchd with a stand-in for
// systemd's notify socket.
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: the daemon under test sends
/// its sd_notify messages here, and the test reads them in order.
public final class NotifyListener {
  public let path: String
  private let fd: Int32

  public init(directory: URL) throws {
    // A name of its own: a restarted daemon in the same directory gets a new listener.
    path = directory.appendingPathComponent("notify-\(UInt32.random(in: 0...UInt32.max)).sock").path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard result == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
  }

  deinit {
    close(fd)
    unlink(path)
  }

  /// The next message, or nil when none arrives within `timeout` seconds.
  public func next(timeout: TimeInterval = 30) -> String? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let count = recv(fd, &buffer, buffer.count, 0)
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count], as: UTF8.self)
  }

  /// Reads messages until one satisfies `match`; returns it and every message before it.
  public func waitFor(timeout: TimeInterval = 30, _ match: (String) -> Bool) -> (
    found: String?, seen: [String]
  ) {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
    var seen: [String] = []
    while DispatchTime.now().uptimeNanoseconds < deadline {
      let left = Double(deadline - DispatchTime.now().uptimeNanoseconds) / 1e9
      guard let message = next(timeout: left) else { break }
      seen.append(message)
      if match(message) { return (message, seen) }
    }
    return (nil, seen)
  }
}

/// The products of this package's build, next to the test bundle.
public enum BuiltProducts {
  public static var directory: URL {
    // The test bundle lives in .build/<config>/; the executables sit beside it.
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.pathComponents.count > 1 && url.pathExtension != "xctest" {
      url.deleteLastPathComponent()
    }
    if url.pathExtension == "xctest" { return url.deletingLastPathComponent() }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  }

  public static func path(_ name: String) -> String {
    directory.appendingPathComponent(name).path
  }
}

/// A `trialwatchd` process started by a test, with its own state directory and notify socket.
public final class DaemonProcess {
  public let directory: URL
  public let notify: NotifyListener
  public let process = Process()
  public let errors = Pipe()

  /// Whether the directory is removed when this process object goes away.
  public var removesDirectory = true

  /// The socket trialwatchctl reaches the daemon at.
  public var socketPath: String { directory.appendingPathComponent("io.trialwatch").path }

  /// - Parameter directory: reuse another run's directory (its store), e.g. for a restart.
  public init(
    config: String? = nil, environment: [String: String] = [:], arguments: [String] = [],
    directory: URL? = nil
  ) throws {
    self.directory =
      directory
      ?? FileManager.default.temporaryDirectory.appendingPathComponent(
        "trialwatchd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    chmod(self.directory.path, 0o711)
    notify = try NotifyListener(directory: self.directory)
    let configPath = self.directory.appendingPathComponent("trialwatch.conf").path
    try (config ?? "").write(toFile: configPath, atomically: true, encoding: .utf8)
    process.executableURL = URL(fileURLWithPath: BuiltProducts.path("trialwatchd"))
    process.arguments =
      [
        "--config", configPath, "--state-dir", self.directory.appendingPathComponent("state").path,
        "--socket", self.directory.appendingPathComponent("io.trialwatch").path,
      ] + arguments
    var env = ProcessInfo.processInfo.environment
    env["NOTIFY_SOCKET"] = notify.path
    env.removeValue(forKey: "JOURNAL_STREAM")
    env.removeValue(forKey: "WATCHDOG_USEC")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
  }

  public func start() throws {
    try process.run()
  }

  public func signal(_ signo: Int32) {
    kill(process.processIdentifier, signo)
  }

  /// Waits for the process to exit (bounded) and returns its status, or nil if it did not.
  public func waitForExit(timeout: TimeInterval = 30) -> Int32? {
    let done = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in done.signal() }
    if !process.isRunning { return process.terminationStatus }
    guard done.wait(timeout: .now() + timeout) == .success else { return nil }
    return process.terminationStatus
  }

  public var standardError: String {
    String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
  }

  deinit {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    if removesDirectory { try? FileManager.default.removeItem(at: directory) }
  }
}
