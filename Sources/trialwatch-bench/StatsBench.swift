import Foundation
import TestSupport
import TrialControl
import TrialCore
import TrialStore
import TrialTesting

/// The conversion figures, asked of a daemon whose store holds a year of trials:
///
///     control_get_stats_ms_1m    GetStats by week over the year (53 periods, every plan), a
///                                round trip on one connection, with 1,000,000 trials (median of
///                                50, after 5 not counted)
///     control_metrics_ms_1m      a whole io.systemd.Metrics.List (every family, every reply
///                                read), on the same daemon and connection (median of 50, after 5)
///
/// The store is written as the daemon writes it (`TrialBook.write`: each trial with its
/// cohort's figures), 1,000,000 trials started over 365 days, with three plans and none, in every
/// state. `TRIALWATCH_BENCH_DAEMON_TRIALS` changes the 1,000,000.
func runStatsBench() throws {
  let trials = Int(ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_DAEMON_TRIALS"] ?? "") ?? 1_000_000
  let scratch = try TemporaryDirectory("bench-stats")
  let directory = scratch.url
  let now = SystemWallClock().now()
  try populateYear(state: DaemonProcess.stateDirectory(in: directory).path, trials: trials, now: now)
  let daemon = try DaemonProcess(
    executable: DaemonProcess.builtExecutable, directory: directory, configuration: "")
  let client = try RawVarlinkConnection(path: daemon.socketPath)
  let call = WireCoding.makeEncoder().message(
    OutgoingCall(
      method: Trials.getStats.qualifiedName,
      parameters: GetStatsParameters(
        from: CalendarDay(now.addingTimeInterval(-364 * 86_400)), to: CalendarDay(now), by: .week)))
  let reply = try VarlinkReply(try client.call(call)).parameters(as: GetStatsReply.self)
  guard reply.total.started == Int64(trials) else {
    throw BenchError("GetStats counted \(reply.total.started) trials, not \(trials)")
  }
  var times: [Double] = []
  for run in 0..<55 {
    let seconds = try measure { _ = try client.call(call) }
    if run >= 5 { times.append(seconds * 1000) }
  }
  report("control_get_stats_ms_\(trials / 1_000_000)m", median(times), "ms", digits: 2)

  let list = Array(#"{"method":"io.systemd.Metrics.List","more":true}"#.utf8) + [0]
  let metrics = try client.callForReplies(list).map {
    try VarlinkReply($0).parameters(as: MetricReply.self)
  }
  let counted = metrics.filter { $0.name == "io.trialwatch.trials" }.reduce(Int64(0)) {
    if case .integer(let count) = $1.value { $0 + count } else { $0 }
  }
  guard counted == Int64(trials) else {
    throw BenchError("io.systemd.Metrics.List counted \(counted) trials, not \(trials)")
  }
  times = []
  for run in 0..<55 {
    let seconds = try measure { _ = try client.callForReplies(list) }
    if run >= 5 { times.append(seconds * 1000) }
  }
  report("control_metrics_ms_\(trials / 1_000_000)m", median(times), "ms", digits: 3)
  try daemon.stop()
}

/// Writes `trials` trials started over the 365 days before `now`, of plans `pro`, `team`,
/// `edu` or none, converted, cancelled, expired, paused or active, in batches.
private func populateYear(state: String, trials: Int, now: Date) throws {
  let repository = try LMDBTrialRepository(directory: state)
  defer { repository.close() }
  var generator = SeededGenerator(seed: 7)
  let plans = ["pro", "team", "edu", nil]
  try writeInBatches(repository, count: trials) { txn, index in
    let start = now.addingTimeInterval(-Double.random(in: 1...365, using: &generator) * 86_400)
    var trial = Trial(
      id: TrialID(generator.next() | 1),
      attributes: TrialAttributes(subject: "stats-\(index)", plan: plans[index % plans.count]),
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(14 * 86_400)))
    let ended = start.addingTimeInterval(Double.random(in: 0...14, using: &generator) * 86_400)
    switch Int.random(in: 0..<10, using: &generator) {
    case 0..<3 where ended < now:
      trial.state = .converted
      trial.endedAt = ended
    case 3..<5 where ended < now:
      trial.state = .cancelled
      trial.endedAt = ended
    case 5..<8 where trial.period.endDate < now:
      trial.state = .expired
      trial.endedAt = trial.period.endDate
    case 8:
      trial.state = .paused
      trial.pause = TrialPause(since: min(ended, now))
    default:
      break
    }
    try TrialBook.write(trial, was: nil, in: txn)
  }
}
