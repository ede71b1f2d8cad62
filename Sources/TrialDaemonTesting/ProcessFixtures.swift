// Fixtures for tests that run the real binaries: trialwatchd with a stand-in for
// systemd's notify socket.
import Foundation
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A `trialwatchd` process started by a test, with its own state directory, configuration
/// file and control socket in a temporary directory, and a datagram socket standing in for
/// systemd's notify socket: the daemon sends its sd_notify messages there, and the test reads
/// them in order.
public final class DaemonProcess {
  /// Shared with a restarted daemon (see `init`); removed once neither uses it.
  public let directory: TemporaryDirectory
  public let notify: UnixDatagramSocket
  private let arguments: [String]
  private let environment: [String: String]
  /// The running process, once started.
  public private(set) var child: ChildProcess?

  /// The socket trialwatchctl reaches the daemon at.
  public var socketPath: String { directory.appending("io.trialwatch") }

  /// The configuration file the daemon reads.
  public var configPath: String { directory.appending("trialwatch.conf") }

  /// - Parameter directory: reuse another run's directory (its store), e.g. for a restart.
  public init(
    config: String? = nil, environment: [String: String] = [:], arguments: [String] = [],
    directory: TemporaryDirectory? = nil
  ) throws {
    let scratch = try directory ?? TemporaryDirectory("trialwatchd")
    self.directory = scratch
    // A name of its own: a restarted daemon in the same directory gets a new socket.
    let name = (1...).lazy.map { "notify-\($0).sock" }.first {
      !FileManager.default.fileExists(atPath: scratch.appending($0))
    }!
    notify = try UnixDatagramSocket(path: scratch.appending(name))
    try (config ?? "").write(
      toFile: self.directory.appending("trialwatch.conf"), atomically: true, encoding: .utf8)
    self.arguments =
      [
        "--config", self.directory.appending("trialwatch.conf"), "--state-dir",
        self.directory.appending("state"),
        "--socket", self.directory.appending("io.trialwatch"),
      ] + arguments
    self.environment = ChildProcess.environment(
      adding: ["NOTIFY_SOCKET": notify.path].merging(environment) { $1 },
      removing: ["JOURNAL_STREAM", "WATCHDOG_USEC"])
  }

  deinit {
    child?.kill()
    child?.wait(timeout: 10)
  }

  /// - Parameter errors: where standard error goes: a pipe the test reads (`standardError`), or
  ///   a file, for a daemon that logs more than a pipe holds while nobody reads it (each event
  ///   it takes is a line there when it logs to the console).
  /// - Parameter cgroup: a cgroup to run the daemon in, put there before it starts.
  public func start(errors: ChildProcess.Output = .pipe, in cgroup: MemoryCgroup? = nil) throws {
    guard let cgroup else {
      child = try ChildProcess(.product("trialwatchd"), arguments, environment: environment, errors: errors)
      return
    }
    let command = cgroup.wrapping([ChildProcess.Executable.product("trialwatchd").path] + arguments)
    child = try ChildProcess(
      .path(command[0]), Array(command.dropFirst()), environment: environment, errors: errors)
  }

  public func signal(_ signo: Int32) {
    child?.signal(signo)
  }

  /// Waits for the process to exit (bounded) and returns its exit status (128 plus the
  /// signal if one ended it), or nil if it did not exit.
  public func waitForExit(timeout: TimeInterval = patience) -> Int32? {
    child?.wait(timeout: timeout)?.code
  }

  /// What the daemon wrote on standard output, up to its end.
  public var standardOutput: String {
    child?.readRest(.output, timeout: 30) ?? ""
  }

  /// Starts the daemon and waits for it to exit (a run that does not serve, such as
  /// `--check-config`); returns its exit status and standard output.
  public func run() throws -> (status: Int32?, output: String) {
    try start()
    let status = waitForExit()
    return (status, standardOutput)
  }

  /// The file names of the shared libraries the running daemon has mapped (from
  /// `/proc/PID/maps`), such as `libc.so.6`.
  public var mappedLibraries: Set<String> {
    guard let pid = child?.pid, let maps = ProcFiles.read("/proc/\(pid)/maps") else { return [] }
    return Set(
      maps.split(separator: "\n").compactMap { line in
        ProcFiles.mappedPath(line).map { String($0.split(separator: "/").last ?? "") }
      }.filter { $0.contains(".so") })
  }

  /// What the daemon wrote on standard error, up to its end (read it once the daemon ended).
  public var standardError: String {
    child?.readRest(.errors, timeout: 30) ?? ""
  }
}
