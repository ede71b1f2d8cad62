import Foundation
import TrialControl
import TrialCore
import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd itself, as a process: time from start to READY=1 and resident memory with
/// 1,000,000 active trials, and its context switches while idle after a client's calls.
func runDaemonBench() throws {
  let directory = try temporaryDirectory("daemon")
  defer { try? FileManager.default.removeItem(at: directory) }
  let state = directory.appendingPathComponent("state")
  let trials = Int(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_DAEMON_TRIALS"] ?? "") ?? 1_000_000
  try populate(state: state.path, trials: trials)

  let notifyPath = directory.appendingPathComponent("notify.sock").path
  let notify = try DatagramSocket(path: notifyPath)
  let config = directory.appendingPathComponent("trialwatch.conf")
  try "".write(to: config, atomically: true, encoding: .utf8)
  let process = Process()
  process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("trialwatchd")
  process.arguments = [
    "--config", config.path, "--state-dir", state.path,
    "--socket", directory.appendingPathComponent("io.trialwatch").path,
  ]
  var environment = ProcessInfo.processInfo.environment
  environment["NOTIFY_SOCKET"] = notifyPath
  for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID"] {
    environment.removeValue(forKey: key)
  }
  process.environment = environment
  process.standardError = FileHandle.nullDevice
  process.standardOutput = FileHandle.nullDevice

  var ready = false
  let startup = try measure {
    try process.run()
    while let message = notify.receive(timeout: 60) {
      if message.contains("READY=1") {
        ready = true
        break
      }
    }
  }
  defer {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
  }
  guard ready else { throw BenchError("trialwatchd did not report READY=1 within 60 s") }
  let pid = process.processIdentifier
  report("daemon_ready_\(trials / 1000)k", startup, "s")
  report("daemon_rss_after_ready_\(trials / 1000)k", Double(residentBytes(of: pid)) / 1e6, "MB", digits: 1)

  let seconds = Double(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_IDLE_SECONDS"] ?? "") ?? 60
  // Idle after use: a client starts and reads a trial and closes its connection first.
  let client = try VarlinkClient(path: directory.appendingPathComponent("io.trialwatch").path)
  let started = try client.call(
    Trials.startTrial, StartTrialParameters(subject: "idle-check", duration: Days(30))
  ).trial
  _ = try client.call(Trials.getTrial, GetTrialParameters(id: started.id))
  client.close()
  // Let the last work settle first: the status update, and Dispatch's worker threads, which
  // end after a few idle seconds.
  _ = notify.receive(timeout: 8)
  let before = contextSwitches(of: pid)
  _ = notify.receive(timeout: seconds)
  let after = contextSwitches(of: pid)
  report(
    "daemon_idle_context_switches_\(Int(seconds))s", Double(switchesBetween(before, after)), "switches",
    digits: 0)
  process.terminate()
  process.waitUntilExit()
}

/// Writes `trials` active trials, ending 10 to 40 days from now, in batches.
private func populate(state: String, trials: Int) throws {
  let repository = try LMDBTrialRepository(directory: state)
  defer { repository.close() }
  let clock = SystemWallClock()
  let now = clock.now()
  var generator = SplitMix64(seed: 42)
  let batch = 50_000
  var written = 0
  while written < trials {
    let count = min(batch, trials - written)
    try repository.write { txn in
      for index in written..<(written + count) {
        let end = now.addingTimeInterval(Double.random(in: 10...40, using: &generator) * Days.secondsPerDay)
        try txn.putTrial(
          Trial(
            id: TrialID(generator.next() | 1), subject: "bench-\(index)",
            period: TrialPeriod(startDate: now, endDate: end)))
      }
    }
    written += count
  }
}

/// The resident set size of another process, from /proc/PID/statm.
private func residentBytes(of pid: Int32) -> Int {
  guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Voluntary and involuntary context switches over all threads of a process.
private func contextSwitches(of pid: Int32) -> [String: Int] {
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
  var counts: [String: Int] = [:]
  for task in tasks {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else {
      continue
    }
    for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
      counts[task, default: 0] += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
    }
  }
  return counts
}

/// Context switches between two readings, thread by thread: a thread's growth, a new
/// thread's whole count, and one for each thread that ended (it woke at least to end).
private func switchesBetween(_ before: [String: Int], _ after: [String: Int]) -> Int {
  var total = 0
  for (task, count) in after { total += count - (before[task] ?? 0) }
  total += before.keys.filter { after[$0] == nil }.count
  return total
}

/// A datagram socket for sd_notify messages.
private final class DatagramSocket {
  private let fd: Int32
  private let path: String

  init(path: String) throws {
    self.path = path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard fd >= 0, bound == 0 else { throw BenchError("cannot bind \(path): errno \(errno)") }
  }

  deinit {
    close(fd)
    unlink(path)
  }

  /// The next message, or nil after `timeout` seconds without one.
  func receive(timeout: Double) -> String? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = recv(fd, &buffer, buffer.count, 0)
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
  }
}
