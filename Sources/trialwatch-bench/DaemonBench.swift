import Foundation
import TestSupport
import TrialCore
import TrialStore
import TrialTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd itself, as a process:
///
///     daemon_start_to_ready_empty_ms    process start to READY=1 on an empty store (median of 9)
///     daemon_rss_idle_empty             resident memory of that daemon once idle (and its parts,
///                                       `_file` and `_anon`; `_program`, the pages of its own
///                                       file, a part of `_file`)
///     daemon_pss_idle_empty             the same proportionally: a page shared with other
///                                       processes (glibc's) counted in part
///     ctl_status_wall_ms                `trialwatchctl status` against it, end to end, its
///                                       process start included (median of 20)
///     daemon_rss_pending_100k           resident memory after READY=1 with 100,000 active trials
///     daemon_ready_1000k                start to READY=1 with 1,000,000 active trials
///     daemon_rss_after_ready_1000k      resident memory then
///     daemon_peak_rss_ready_1000k       the most resident at once until then (VmHWM): the
///                                       store's pages the start-up scan mapped in, mostly
///     daemon_rss_after_ready_1000k_labels  the same with four labels on every trial
///     daemon_rss_after_ready_1000k_followups  the same with two follow-ups (3d, 30d) on every
///                                       trial, planned after its expiry (`FollowUps=`)
///     daemon_idle_context_switches_60s  context switches while idle after a client's calls
///     daemon_ready_1000k_retention      start to READY=1 with 1,000,000 active trials and
///                                       `[Trials] Retention=400d`, whose first pass over the
///                                       trials runs a minute after the start
///     daemon_rss_after_ready_1000k_retention  resident memory then
///     daemon_rss_after_retention_pass_1000k   resident memory 90 s after the start, that pass
///                                       done and the daemon idle (the pages it read released)
///
/// `TRIALWATCH_BENCH_DAEMON_TRIALS` changes the 1,000,000 (and the names of its figures),
/// `TRIALWATCH_BENCH_IDLE_SECONDS` the 60.
func runDaemonBench() throws {
  try measureEmptyDaemon()

  let pending = 100_000
  try measureLoadedDaemon(trials: pending) { daemon in
    report("daemon_rss_pending_\(pending / 1000)k", daemon.memory().megabytes(\.resident), "MB", digits: 1)
  }

  let trials = Int(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_DAEMON_TRIALS"] ?? "") ?? 1_000_000
  // With the report socket bound, as under systemd: serving metrics must not wake it either.
  try measureLoadedDaemon(trials: trials, reportSocket: true) { daemon in
    report("daemon_ready_\(trials / 1000)k", daemon.secondsToReady, "s")
    let memory = daemon.memory()
    report("daemon_rss_after_ready_\(trials / 1000)k", memory.megabytes(\.resident), "MB", digits: 1)
    report("daemon_peak_rss_ready_\(trials / 1000)k", memory.megabytes(\.peak), "MB", digits: 1)
    try measureIdleSwitches(daemon)
  }
  try measureLoadedDaemon(trials: trials, labels: benchLabels) { daemon in
    report(
      "daemon_rss_after_ready_\(trials / 1000)k_labels", daemon.memory().megabytes(\.resident), "MB",
      digits: 1)
  }
  let followUps = try FollowUpSchedule([.days(3), .days(30)])
  try measureLoadedDaemon(trials: trials, followUps: followUps) { daemon in
    report(
      "daemon_rss_after_ready_\(trials / 1000)k_followups", daemon.memory().megabytes(\.resident), "MB",
      digits: 1)
  }
  try measureLoadedDaemon(trials: trials, configuration: "[Trials]\nRetention=400d\n") { daemon in
    report("daemon_ready_\(trials / 1000)k_retention", daemon.secondsToReady, "s")
    report(
      "daemon_rss_after_ready_\(trials / 1000)k_retention", daemon.memory().megabytes(\.resident), "MB",
      digits: 1)
    // The pass starts a minute after the start and reads every trial, 1,000 a step; the daemon
    // releases the pages it read once writes have been quiet for 6 s.
    daemon.idle(seconds: 90)
    report(
      "daemon_rss_after_retention_pass_\(trials / 1000)k", daemon.memory().megabytes(\.resident), "MB",
      digits: 1)
  }
}

/// The start-up and the idle memory of a daemon with nothing in its store, and a client's
/// command against it.
private func measureEmptyDaemon() throws {
  let scratch = try TemporaryDirectory("bench-daemon-empty")
  let directory = scratch.url
  // The first start creates the store and brings the executable into the page cache: not
  // counted. Each measured start finds the empty store it left.
  try DaemonProcess(executable: DaemonProcess.builtExecutable, directory: directory, configuration: "").stop()
  var starts: [Double] = []
  var daemon: DaemonProcess?
  for run in 1...9 {
    let started = try DaemonProcess(
      executable: DaemonProcess.builtExecutable, directory: directory, configuration: "")
    starts.append(started.secondsToReady * 1000)
    if run < 9 { try started.stop() } else { daemon = started }
  }
  report("daemon_start_to_ready_empty_ms", median(starts), "ms", digits: 1)

  let idle = daemon!
  // A moment with nothing to do: the start's last work done, Dispatch's worker threads gone,
  // and the memory released 6 s after the start's last write.
  idle.idle(seconds: 10)
  let memory = idle.memory()
  report("daemon_rss_idle_empty", memory.megabytes(\.resident), "MB", digits: 1)
  report("daemon_rss_idle_empty_file", memory.megabytes(\.file), "MB", digits: 1)
  report("daemon_rss_idle_empty_anon", memory.megabytes(\.anonymous), "MB", digits: 1)
  report("daemon_rss_idle_empty_program", memory.megabytes(\.program), "MB", digits: 1)
  report("daemon_pss_idle_empty", memory.megabytes(\.proportional), "MB", digits: 1)

  report("ctl_status_wall_ms", try ctlStatusMilliseconds(idle), "ms", digits: 1)
  try idle.stop()
}

/// `trialwatchctl status SUBJECT` run 20 times, one after the other, against `daemon`: the
/// median wall time from the launch of the process to its exit.
private func ctlStatusMilliseconds(_ daemon: DaemonProcess) throws -> Double {
  let ctl = DaemonProcess.builtExecutable.deletingLastPathComponent().appendingPathComponent("trialwatchctl")
  guard FileManager.default.isExecutableFile(atPath: ctl.path) else {
    throw BenchError("no trialwatchctl beside \(DaemonProcess.builtExecutable.path)")
  }
  let subject = "bench-status"
  _ = try RawVarlinkConnection(path: daemon.socketPath).call(TrialsCalls.startTrial(subject: subject))
  let arguments = ["status", "--socket", daemon.socketPath, subject]
  var times: [Double] = []
  for run in 0..<22 {
    var done: ChildProcess.Completion?
    let seconds = try measure { done = try ChildProcess.run(.path(ctl.path), arguments, timeout: 30) }
    guard let done, done.status == .exited(0), done.output.contains(subject) else {
      throw BenchError("trialwatchctl status failed: \(done.map { "\($0.status): \($0.errors)" } ?? "")")
    }
    // The first two bring it into the page cache.
    if run >= 2 { times.append(seconds * 1000) }
  }
  return median(times)
}

/// Runs `body` on a daemon started on a store of `trials` active trials, then stops it.
/// `reportSocket`: the daemon also binds a metrics socket, `report.sock` in its directory.
private func measureLoadedDaemon(
  trials: Int, labels: [String: String] = [:], followUps: FollowUpSchedule = .none,
  configuration: String = "",
  reportSocket: Bool = false, _ body: (DaemonProcess) throws -> Void
) throws {
  let scratch = try TemporaryDirectory("bench-daemon")
  let directory = scratch.url
  try populate(
    state: DaemonProcess.stateDirectory(in: directory).path, trials: trials, labels: labels,
    followUps: followUps)
  let report =
    reportSocket ? "[Daemon]\nMetricsSocket=\(directory.appendingPathComponent("report.sock").path)\n" : ""
  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: directory, configuration: report + configuration)
  try body(daemon)
  try daemon.stop()
}

/// Context switches of an idle daemon, after a client started and read a trial, listed the
/// metrics (on the report socket too, when there is one) and closed its connections.
private func measureIdleSwitches(_ daemon: DaemonProcess) throws {
  let seconds = Double(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_IDLE_SECONDS"] ?? "") ?? 60
  do {
    let client = try RawVarlinkConnection(path: daemon.socketPath)
    let id = try TrialsCalls.trialID(inReply: try client.call(TrialsCalls.startTrial(subject: "idle-check")))
    _ = try client.call(TrialsCalls.getTrial(id: id))
    let list = Array(#"{"method":"io.systemd.Metrics.List","more":true}"#.utf8) + [0]
    _ = try client.callForReplies(list)
    let report = URL(fileURLWithPath: daemon.socketPath).deletingLastPathComponent()
      .appendingPathComponent("report.sock").path
    if FileManager.default.fileExists(atPath: report) {
      _ = try RawVarlinkConnection(path: report).callForReplies(list)
    }
  }
  // Let the last work settle first: the status update, Dispatch's worker threads, which end
  // after 5 idle seconds, and the release of memory 6 s after the last write.
  daemon.idle(seconds: 10)
  let before = contextSwitches(of: daemon.pid)
  daemon.idle(seconds: seconds)
  let after = contextSwitches(of: daemon.pid)
  report(
    "daemon_idle_context_switches_\(Int(seconds))s", Double(switchesBetween(before, after)), "switches",
    digits: 0)
}

/// Writes `trials` active trials, ending 10 to 40 days from now, with `labels` and `followUps`,
/// in batches.
private func populate(state: String, trials: Int, labels: [String: String], followUps: FollowUpSchedule)
  throws
{
  let labels = try TrialLabels(labels)
  let repository = try LMDBTrialRepository(directory: state)
  defer { repository.close() }
  let clock = SystemWallClock()
  let now = clock.now()
  var generator = SeededGenerator(seed: 42)
  try writeInBatches(repository, count: trials) { txn, index in
    let end = now.addingTimeInterval(Double.random(in: 10...40, using: &generator) * 86_400)
    try txn.putTrial(
      Trial(
        id: TrialID(generator.next() | 1), subject: "bench-\(index)", labels: labels,
        period: TrialPeriod(startDate: now, endDate: end), followUps: followUps))
  }
}

/// Calls `body` for items 0..<count in write transactions of 50,000 items each.
func writeInBatches(
  _ repository: LMDBTrialRepository, count: Int, _ body: (any TrialWriteTransaction, Int) throws -> Void
) throws {
  var written = 0
  while written < count {
    let batch = written..<min(written + 50_000, count)
    try repository.write { txn in
      for index in batch { try body(txn, index) }
    }
    written = batch.upperBound
  }
}

/// The middle value of `values` (the mean of the two middle ones for an even count).
func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return .nan }
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Voluntary and involuntary context switches over all threads of a process.
private func contextSwitches(of pid: Int32) -> [String: Int] {
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
  var counts: [String: Int] = [:]
  for task in tasks {
    guard let status = ProcFiles.read("/proc/\(pid)/task/\(task)/status") else { continue }
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
