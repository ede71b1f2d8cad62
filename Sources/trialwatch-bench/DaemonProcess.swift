import Foundation
import TestSupport

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
  /// The trialwatchd measured: `TRIALWATCH_BENCH_DAEMON` names it (make bench names the static
  /// build make release ships, with its trialwatchctl link beside it), else the one built
  /// beside this bench.
  static var builtExecutable: URL {
    if let path = ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_DAEMON"], !path.isEmpty {
      return URL(fileURLWithPath: path)
    }
    return URL(fileURLWithPath: BuiltProducts.path("trialwatchd"))
  }

  static func stateDirectory(in directory: URL) -> URL {
    directory.appendingPathComponent("state")
  }

  let socketPath: String
  /// Seconds from the start of the process to its READY=1.
  let secondsToReady: Double
  var pid: Int32 { child.pid }

  private let child: ChildProcess
  /// Read all the time, as systemd reads it: a sender blocks once the socket's queue is full,
  /// and trialwatchd sends a status with its changes.
  private let notify: UnixDatagramSocket
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
    notify = try UnixDatagramSocket(path: directory.appendingPathComponent("notify.sock").path)
    notify.readInBackground()
    guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
      throw BenchError("cannot create \(logPath)")
    }
    let arguments = [
      "--config", config.path, "--state-dir", Self.stateDirectory(in: directory).path, "--socket", socketPath,
    ]
    let environment = ChildProcess.environment(
      adding: ["NOTIFY_SOCKET": notify.path],
      removing: [
        "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
      ])

    var ready = false
    var started: ChildProcess?
    let notify = notify
    let logPath = logPath
    secondsToReady = try measure {
      let child = try ChildProcess(
        .path(executable.path), arguments, environment: environment, output: .file(logPath),
        errors: .file(logPath))
      started = child
      let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
      // Each wait for a message is short, to see a daemon that exits without one.
      while !ready, ContinuousClock.now < deadline, child.status == nil {
        if let message = try notify.receiveText(timeout: 0.2) {
          ready = message.split(separator: "\n").contains("READY=1")
        }
      }
    }
    child = started!
    guard ready else {
      let status = child.status
      halt()
      let what =
        status.map { "\($0) before READY=1" } ?? "did not report READY=1 within \(Int(timeout)) s"
      throw BenchError("\(executable.path) \(what)" + logTail())
    }
  }

  deinit {
    halt()
  }

  /// The next sd_notify message, or nil after `timeout` seconds without one.
  func notification(timeout: Double) -> String? {
    try? notify.receiveText(timeout: timeout)
  }

  /// Waits `seconds` seconds, reading what the daemon notifies meanwhile.
  func idle(seconds: Double) {
    let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
    while ContinuousClock.now < deadline {
      _ = notification(timeout: ContinuousClock.now.duration(to: deadline).seconds)
    }
  }

  /// The daemon's resident memory now.
  func memory() -> ResidentMemory {
    ResidentMemory(pid: pid)
  }

  /// Stops the daemon with SIGTERM, as systemd does; fails when it does not exit cleanly.
  func stop() throws {
    guard child.status == nil else { throw BenchError("trialwatchd ended before it was stopped" + logTail()) }
    guard halt() else { throw BenchError("trialwatchd did not stop within 10 s of SIGTERM" + logTail()) }
    guard child.status == .exited(0) else {
      throw BenchError("trialwatchd stopped: \(child.status.map { "\($0)" } ?? "still running")" + logTail())
    }
  }

  /// Sends SIGTERM if the daemon still runs and waits for its end; after `timeout` seconds,
  /// kills it. Whether it ended on SIGTERM.
  @discardableResult
  private func halt(timeout: Double = 10) -> Bool {
    guard child.status == nil else { return true }
    child.signal(SIGTERM)
    guard child.wait(timeout: timeout) == nil else { return true }
    child.kill()
    child.wait()
    return false
  }

  /// The last lines the daemon logged, to explain a failure.
  private func logTail() -> String {
    let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    let lines = text.split(separator: "\n").suffix(10)
    return lines.isEmpty ? "" : "; its last log lines:\n" + lines.joined(separator: "\n")
  }
}

/// A process's resident memory, from /proc/PID/status, in bytes: in all (`VmRSS`), the pages
/// of mapped files (`RssFile`: its executable, shared libraries, the store's map) and the
/// anonymous ones (`RssAnon`: heap, stacks).
struct ResidentMemory {
  var resident = 0
  var file = 0
  var anonymous = 0
  /// The most it was resident at once since it started (`VmHWM`).
  var peak = 0
  /// Proportional: each shared page divided by the processes that map it (smaps' Pss).
  var proportional = 0
  /// The pages of the program's own file (its code and read-only data), from smaps.
  var program = 0

  init(pid: Int32) {
    // smaps: every mapping's figures; its Pss lines add up to the process's.
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "?"
    var inProgram = false
    for line in (ProcFiles.read("/proc/\(pid)/smaps") ?? "").split(separator: "\n") {
      if ProcFiles.startsMapping(line) {
        inProgram = ProcFiles.mappedPath(line) == executable[...]
        continue
      }
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count == 3, fields[2] == "kB", let kilobytes = Int(fields[1]) else { continue }
      if fields[0] == "Pss:" { proportional += kilobytes * 1024 }
      if fields[0] == "Rss:" && inProgram { program += kilobytes * 1024 }
    }
    let text = ProcFiles.read("/proc/\(pid)/status") ?? ""
    for line in text.split(separator: "\n") {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count == 3, fields[2] == "kB", let kilobytes = Int(fields[1]) else { continue }
      switch fields[0] {
      case "VmRSS:": resident = kilobytes * 1024
      case "RssFile:": file = kilobytes * 1024
      case "RssAnon:": anonymous = kilobytes * 1024
      case "VmHWM:": peak = kilobytes * 1024
      default: break
      }
    }
  }

  /// One of the figures in MB (10^6 bytes).
  func megabytes(_ part: KeyPath<ResidentMemory, Int>) -> Double {
    Double(self[keyPath: part]) / 1e6
  }
}
