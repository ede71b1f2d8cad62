import Foundation
import TestSupport
import TrialCore
import TrialStore
import TrialTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd itself, as a process: time from start to READY=1 and resident memory with
/// 1,000,000 active trials, and its context switches while idle after a client's calls.
func runDaemonBench() throws {
  let scratch = try TemporaryDirectory("bench-daemon")
  let directory = scratch.url
  let trials = Int(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_DAEMON_TRIALS"] ?? "") ?? 1_000_000
  try populate(state: DaemonProcess.stateDirectory(in: directory).path, trials: trials)

  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: directory, configuration: "")
  let pid = daemon.pid
  report("daemon_ready_\(trials / 1000)k", daemon.secondsToReady, "s")
  report("daemon_rss_after_ready_\(trials / 1000)k", Double(residentBytes(of: pid)) / 1e6, "MB", digits: 1)

  let seconds = Double(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_IDLE_SECONDS"] ?? "") ?? 60
  // Idle after use: a client starts and reads a trial and closes its connection first.
  do {
    let client = try RawVarlinkConnection(path: daemon.socketPath)
    let id = try TrialsCalls.trialID(inReply: try client.call(TrialsCalls.startTrial(subject: "idle-check")))
    _ = try client.call(TrialsCalls.getTrial(id: id))
  }
  // Let the last work settle first: the status update, and Dispatch's worker threads, which
  // end after a few idle seconds.
  _ = daemon.notification(timeout: 8)
  let before = contextSwitches(of: pid)
  _ = daemon.notification(timeout: seconds)
  let after = contextSwitches(of: pid)
  report(
    "daemon_idle_context_switches_\(Int(seconds))s", Double(switchesBetween(before, after)), "switches",
    digits: 0)
  try daemon.stop()
}

/// Writes `trials` active trials, ending 10 to 40 days from now, in batches.
private func populate(state: String, trials: Int) throws {
  let repository = try LMDBTrialRepository(directory: state)
  defer { repository.close() }
  let clock = SystemWallClock()
  let now = clock.now()
  var generator = SeededGenerator(seed: 42)
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
