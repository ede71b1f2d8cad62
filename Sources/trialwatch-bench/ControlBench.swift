import Dispatch
import Foundation
import TestSupport
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The control socket of trialwatchd, measured from outside: the daemon built beside this
/// bench runs as a process of its own, with 1,000 trials, and the calls come from another
/// process (see `ControlClient`), as `nobody` in group `nogroup` when the bench runs as
/// root; the daemon's `ControlGroup=` is that group, so every change goes through the same
/// check as any other client's.
///
///     control_get_rps_1, _p50_1, _p99_1    GetTrial round trips, 1 client
///     control_get_rps_4, _p50_4, _p99_4    the same, 4 clients at once
///     control_start_rps_4, _p99_4          durable StartTrial, 4 clients, one call at a time
///     control_start_pipelined_rps_4, _p99_4    the same with 32 calls in flight per client
///     control_start_pipelined_rps_4_labels     the same, each trial with four labels of 32 bytes
///     control_get_p99_under_writes         GetTrial, 4 client processes, while 4 others
///                                          pipeline durable StartTrials
///
/// With `TRIALWATCH_BENCH_BASELINE_DAEMON` naming another trialwatchd (an older build, say),
/// the same calls are made to it as well, in turns: baseline, current, baseline, current, for
/// `ROUNDS` rounds (default 3). Each figure is the median of its rounds; the baseline's carry
/// the suffix `_baseline`.
func runControlBench() throws {
  report("control_socket_floor_rps", try socketPingPongRate(), "req/s", digits: 0)

  let identity = try clientIdentity()
  let current = DaemonProcess.builtExecutable
  guard let baselinePath = ProcessInfo.processInfo.environment["TRIALWATCH_BENCH_BASELINE_DAEMON"],
    !baselinePath.isEmpty
  else {
    for figure in try measureDaemon(executable: current, identity: identity) { figure.report(suffix: "") }
    return
  }
  let baseline = URL(fileURLWithPath: baselinePath)
  var currentRounds: [[ControlFigure]] = []
  var baselineRounds: [[ControlFigure]] = []
  let rounds = ProcessInfo.processInfo.environment["ROUNDS"].flatMap(Int.init).map { Swift.max($0, 1) } ?? 3
  for round in 1...rounds {
    note("control round \(round) of \(rounds): baseline \(baseline.path)")
    baselineRounds.append(try measureDaemon(executable: baseline, identity: identity))
    note("control round \(round) of \(rounds): current \(current.path)")
    currentRounds.append(try measureDaemon(executable: current, identity: identity))
  }
  for figure in ControlFigure.median(of: currentRounds) { figure.report(suffix: "") }
  for figure in ControlFigure.median(of: baselineRounds) { figure.report(suffix: "_baseline") }
}

/// One figure of a round.
private struct ControlFigure {
  enum Kind {
    /// Calls a second: higher is better.
    case rate
    /// Milliseconds: lower is better.
    case latency
  }

  var name: String
  var kind: Kind
  var value: Double

  func report(suffix: String) {
    switch kind {
    case .rate: trialwatch_bench.report(name + suffix, value, "req/s", digits: 0)
    case .latency: trialwatch_bench.report(name + suffix, value, "ms", digits: Latencies.digits)
    }
  }

  /// Each figure's median over rounds, in the order of the first round that has it: a round
  /// may lack a figure (a baseline that refuses labels).
  static func median(of rounds: [[ControlFigure]]) -> [ControlFigure] {
    var order: [ControlFigure] = []
    var values: [String: [Double]] = [:]
    for figure in rounds.joined() {
      if values[figure.name] == nil { order.append(figure) }
      values[figure.name, default: []].append(figure.value)
    }
    return order.map { figure in
      var figure = figure
      figure.value = trialwatch_bench.median(values[figure.name] ?? [])
      return figure
    }
  }
}

/// Who the control clients run as: `nobody` in group `nogroup` (nor in any other) when the
/// bench runs as root; else this user, with a note, since only root can switch.
private func clientIdentity() throws -> ControlClient.Identity? {
  guard geteuid() == 0 else {
    note(
      "not running as root: the control clients run as this user, whom the daemon lets change trials "
        + "as its own user rather than through ControlGroup=")
    return nil
  }
  guard let user = getpwnam("nobody") else {
    throw BenchError("no user nobody to run the control clients as")
  }
  guard let group = getgrnam("nogroup") ?? getgrnam("nobody") else {
    throw BenchError("no group nogroup (nor nobody) to run the control clients in")
  }
  return ControlClient.Identity(uid: user.pointee.pw_uid, gid: group.pointee.gr_gid)
}

/// Every control figure of one daemon, started afresh from `executable`, in print order.
private func measureDaemon(executable: URL, identity: ControlClient.Identity?) throws -> [ControlFigure] {
  // Under /tmp, searchable by all, so that the clients' user reaches the socket in it; the
  // store inside stays the daemon's.
  let scratch = try TemporaryDirectory("bench-control")
  let directory = scratch.url

  // The socket is in the clients' group, mode 0660, and that group may change trials.
  let group = identity?.gid ?? getegid()
  let daemon = try DaemonProcess(
    executable: executable, directory: directory,
    configuration: "[Daemon]\nSocketGroup=\(group)\nControlGroup=\(group)\n")

  // A thousand trials to look up.
  var ids: [TrialID] = []
  do {
    let seeder = try RawVarlinkConnection(path: daemon.socketPath)
    for index in 0..<1000 {
      ids.append(
        try TrialsCalls.trialID(inReply: try seeder.call(TrialsCalls.startTrial(subject: "bench-\(index)"))))
    }
  }
  let idsFile = directory.appendingPathComponent("ids")
  try ids.map(\.description).joined(separator: "\n").write(to: idsFile, atomically: true, encoding: .utf8)

  var figures: [ControlFigure] = []
  func run(_ scenario: ControlClient.Scenario, clients: Int, calls: Int, depth: Int = 1) throws
    -> ControlClient.Report
  {
    try ControlClient.run(
      socket: daemon.socketPath, scenario: scenario, clients: clients, calls: calls, depth: depth,
      ids: scenario == .get ? idsFile.path : nil, identity: identity)
  }

  for clients in [1, 4] {
    let gets = try run(.get, clients: clients, calls: 80_000 / clients)
    figures += [
      ControlFigure(name: "control_get_rps_\(clients)", kind: .rate, value: gets.requestsPerSecond),
      ControlFigure(name: "control_get_p50_\(clients)", kind: .latency, value: gets.latencies.p50),
      ControlFigure(name: "control_get_p99_\(clients)", kind: .latency, value: gets.latencies.p99),
    ]
  }

  // Durable StartTrial: each answered only once committed (group commit across clients).
  let starts = try run(.start, clients: 4, calls: 5_000)
  figures += [
    ControlFigure(name: "control_start_rps_4", kind: .rate, value: starts.requestsPerSecond),
    ControlFigure(name: "control_start_p99_4", kind: .latency, value: starts.latencies.p99),
  ]

  // The same with each client pipelining 32 calls (Varlink allows it): the daemon runs a
  // connection's changes together, so a group commit takes up to 4 × 32 of them.
  let pipelined = try run(.start, clients: 4, calls: 20_000, depth: 32)
  figures += [
    ControlFigure(name: "control_start_pipelined_rps_4", kind: .rate, value: pipelined.requestsPerSecond),
    ControlFigure(name: "control_start_pipelined_p99_4", kind: .latency, value: pipelined.latencies.p99),
  ]
  // A baseline from before labels refuses them: its labelled figure is left out.
  do {
    let labelled = try run(.startLabelled, clients: 4, calls: 20_000, depth: 32)
    figures.append(
      ControlFigure(
        name: "control_start_pipelined_rps_4_labels", kind: .rate, value: labelled.requestsPerSecond))
  } catch {
    note("no labelled starts measured on \(executable.path): \(error)")
  }

  // Reads while commits go on: 4 processes of one GetTrial client each, while 4 processes of
  // one StartTrial client each keep 32 calls in flight. The readers start once the writers
  // have started a few thousand trials; the writers stop when the readers are done.
  let stop = directory.appendingPathComponent("readers-done").path
  let writers = started(
    Array(
      repeating: {
        try ControlClient.run(
          socket: daemon.socketPath, scenario: .start, clients: 1, calls: 1_000_000, depth: 32, ids: nil,
          identity: identity, until: stop)
      }, count: 4))
  let readers: [ControlClient.Report]
  do {
    defer { _ = FileManager.default.createFile(atPath: stop, contents: nil) }
    try waitForTrials(moreThan: 1_000 + 4 * ControlClient.warmUpCalls + 2_000, socket: daemon.socketPath)
    readers = try started(Array(repeating: { try run(.get, clients: 1, calls: 10_000) }, count: 4))()
  }
  _ = try writers()
  var read = Latencies()
  for reader in readers { read.add(reader.latencies) }
  figures.append(ControlFigure(name: "control_get_p99_under_writes", kind: .latency, value: read.p99))

  try daemon.stop()
  return figures
}

/// Starts each body on a thread of its own, all at once; returns what waits for them and
/// gives their results in order, or the first failure.
private func started<T>(_ bodies: [() throws -> T]) -> () throws -> [T] {
  let slots = bodies.map { _ in ResultSlot<T>() }
  let done = DispatchSemaphore(value: 0)
  for (body, slot) in zip(bodies, slots) {
    nonisolated(unsafe) let body = body
    Thread {
      slot.result = Result { try body() }
      done.signal()
    }.start()
  }
  return {
    for _ in bodies { done.wait() }
    return try slots.map { try $0.result!.get() }
  }
}

/// Asks the daemon for its status until it counts more than `count` active trials (60 s at
/// most).
private func waitForTrials(moreThan count: Int, socket: String) throws {
  let connection = try RawVarlinkConnection(path: socket)
  let call = Array(#"{"method":"io.trialwatch.Trials.GetStatus"}"#.utf8) + [0]
  let deadline = DispatchTime.now().uptimeNanoseconds + 60_000_000_000
  while DispatchTime.now().uptimeNanoseconds < deadline {
    let reply = String(decoding: try connection.call(call), as: UTF8.self)
    guard let range = reply.range(of: #""active":"#) else { throw BenchError("GetStatus: \(reply)") }
    let active = Int(reply[range.upperBound...].prefix { $0.isNumber }) ?? 0
    if active > count { return }
  }
  throw BenchError("the writers did not start \(count) trials within 60 s")
}

/// One thread's result: written by its thread before it signals, read after the wait.
private final class ResultSlot<T>: @unchecked Sendable {
  var result: Result<T, any Error>?
}

/// The floor under every round-trip figure: two threads passing 100 bytes back and forth
/// over a connected pair of Unix stream sockets with blocking reads and writes, no parsing
/// and no Dispatch. Round trips per second.
private func socketPingPongRate(roundTrips: Int = 50_000) throws -> Double {
  var pair: [Int32] = [0, 0]
  guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
    throw BenchError("socketpair: errno \(errno)")
  }
  defer {
    close(pair[0])
    close(pair[1])
  }
  let echo = pair[1]
  let echoed = DispatchSemaphore(value: 0)
  let thread = Thread {
    var buffer = [UInt8](repeating: 0, count: 256)
    while true {
      let count = read(echo, &buffer, buffer.count)
      if count <= 0 || write(echo, buffer, count) != count { break }
    }
    echoed.signal()
  }
  thread.start()
  var buffer = [UInt8](repeating: 0, count: 256)
  let began = DispatchTime.now().uptimeNanoseconds
  for _ in 0..<roundTrips {
    guard write(pair[0], buffer, 100) == 100 else { throw BenchError("socket floor: write failed") }
    var received = 0
    while received < 100 {
      let count = read(pair[0], &buffer, buffer.count)
      guard count > 0 else { throw BenchError("socket floor: read failed") }
      received += count
    }
  }
  let elapsed = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
  shutdown(pair[0], Int32(SHUT_WR))
  echoed.wait()
  return Double(roundTrips) / elapsed
}
