import Dispatch
import Foundation
import TestSupport
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The load of the control bench, run in a process of its own: this executable again, in a
/// mode of its own,
///
///     trialwatch-bench --control-client SOCKET SCENARIO CLIENTS CALLS DEPTH [--ids FILE] [--user UID:GID]
///         [--until FILE]
///
/// It reads the trial ids to look up from FILE, becomes UID:GID (with no supplementary
/// groups) when given, opens CLIENTS connections to SOCKET, each on a thread of its own,
/// warms each up with calls one at a time, then runs CALLS calls on each at once, DEPTH in
/// flight per connection (1: one at a time). SCENARIO is `get` (GetTrial of the ids, in
/// turn) or `start` (durable StartTrial of new subjects). A call's latency runs from its
/// sending to its reply. With `--until FILE`, each connection stops early once FILE exists
/// (a load that runs while another is measured). What it prints on stdout is one
/// `ControlClient.Report` in JSON.
enum ControlClient {
  static let flag = "--control-client"

  enum Scenario: String {
    case get
    case start
    /// StartTrial with four labels of 32 bytes each.
    case startLabelled = "start-labelled"
  }

  /// Who the client runs as, and how it went.
  struct Report: Codable {
    var uid: UInt32
    var gid: UInt32
    var groups: [UInt32]
    /// From the start of the calls to the last reply, every connection together.
    var seconds: Double
    var latencies: Latencies
    /// When the calls began and the last reply came, in monotonic time (`CLOCK_MONOTONIC`,
    /// the same in every process): to check that loads run in parallel overlapped.
    var began: UInt64
    var ended: UInt64

    var requestsPerSecond: Double { Double(latencies.count) / seconds }
  }

  /// A user and group to run as.
  struct Identity: Equatable {
    var uid: UInt32
    var gid: UInt32
  }

  /// Calls made one at a time on each connection before the measured ones.
  static let warmUpCalls = 200

  /// Runs the client process for one scenario and returns what it measured; fails when it
  /// fails or did not run as `identity`.
  static func run(
    socket: String, scenario: Scenario, clients: Int, calls: Int, depth: Int, ids: String?,
    identity: Identity?, until: String? = nil
  ) throws -> Report {
    var arguments = [flag, socket, scenario.rawValue, "\(clients)", "\(calls)", "\(depth)"]
    if let ids { arguments += ["--ids", ids] }
    if let until { arguments += ["--until", until] }
    if let identity { arguments += ["--user", "\(identity.uid):\(identity.gid)"] }
    let done = try ChildProcess.run(.product("trialwatch-bench"), arguments, timeout: 3_600)
    let what = "the control clients (\(scenario.rawValue), \(clients) × \(calls) calls, depth \(depth))"
    guard done.status == .exited(0) else {
      throw BenchError("\(what) \(done.status): \(done.errors)")
    }
    let report: Report
    do {
      report = try JSONDecoder().decode(Report.self, from: Data(done.output.utf8))
    } catch {
      throw BenchError("\(what) printed no report: \(error)")
    }
    if let identity {
      guard report.uid == identity.uid, report.gid == identity.gid,
        report.groups.allSatisfy({ $0 == identity.gid })
      else {
        throw BenchError(
          "\(what) ran as uid \(report.uid), gid \(report.gid), groups \(report.groups), "
            + "not as uid \(identity.uid), gid \(identity.gid)")
      }
    }
    guard until != nil ? report.latencies.count > 0 : report.latencies.count == clients * calls else {
      throw BenchError("\(what) reported \(report.latencies.count) calls")
    }
    return report
  }

  /// The client process: `arguments` are those after the flag. Prints the report on stdout
  /// and returns 0, or names the failure on stderr and returns 1.
  static func main(_ arguments: [String]) -> Int32 {
    do {
      let report = try runLoad(try Options(arguments))
      FileHandle.standardOutput.write(try JSONEncoder().encode(report))
      return 0
    } catch {
      FileHandle.standardError.write(Data("trialwatch-bench \(flag): \(error)\n".utf8))
      return 1
    }
  }

  private struct Options {
    var socket: String
    var scenario: Scenario
    var clients: Int
    var calls: Int
    var depth: Int
    var ids: String?
    var identity: Identity?
    var until: String?

    init(_ arguments: [String]) throws {
      let usage =
        "usage: \(flag) SOCKET get|start CLIENTS CALLS DEPTH [--ids FILE] [--user UID:GID] [--until FILE]"
      guard arguments.count >= 5, let scenario = Scenario(rawValue: arguments[1]),
        let clients = Int(arguments[2]), let calls = Int(arguments[3]), let depth = Int(arguments[4]),
        clients > 0, calls > 0, depth > 0
      else { throw BenchError(usage) }
      socket = arguments[0]
      self.scenario = scenario
      self.clients = clients
      self.calls = calls
      self.depth = depth
      var rest = arguments.dropFirst(5)
      while let option = rest.popFirst() {
        guard let value = rest.popFirst() else { throw BenchError(usage) }
        switch option {
        case "--ids": ids = value
        case "--until": until = value
        case "--user":
          let parts = value.split(separator: ":")
          guard parts.count == 2, let uid = UInt32(parts[0]), let gid = UInt32(parts[1]) else {
            throw BenchError(usage)
          }
          identity = Identity(uid: uid, gid: gid)
        default: throw BenchError(usage)
        }
      }
      if scenario == .get, ids == nil { throw BenchError("get needs --ids FILE") }
    }
  }

  /// One connection's calls and what came of them; each is used by its own thread, and
  /// read by the main thread once that thread has signalled.
  private final class Client: @unchecked Sendable {
    let connection: RawVarlinkConnection
    let warmUp: [[UInt8]]
    /// The calls: encoded before the clock starts, or as they go (a load with `--until`).
    let count: Int
    let call: (Int) -> [UInt8]
    let until: String?
    var latencies = Latencies()
    var failure: (any Error)?

    init(
      connection: RawVarlinkConnection, warmUp: [[UInt8]], count: Int, call: @escaping (Int) -> [UInt8],
      until: String?
    ) {
      self.connection = connection
      self.warmUp = warmUp
      self.count = count
      self.call = call
      self.until = until
    }
  }

  /// Whether the calls go ahead: false when a connection failed while warming up. Written by
  /// the main thread before it lets the client threads go, read by them after.
  private final class Gate: @unchecked Sendable {
    var open = true
  }

  private static func runLoad(_ options: Options) throws -> Report {
    // Read before giving up root: the file need not be readable by the client's user.
    var ids: [String] = []
    if let path = options.ids {
      ids = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
      guard !ids.isEmpty else { throw BenchError("no trial ids in \(path)") }
    }
    let lookups = try ids.map { text in
      guard let id = TrialID(text) else {
        throw BenchError("\"\(text)\" in \(options.ids ?? "") is not a trial id")
      }
      return TrialsCalls.getTrial(id: id)
    }
    if let identity = options.identity { try become(identity) }

    // Calls are encoded before any is made: the figures are the socket and the daemon.
    var clients: [Client] = []
    for client in 0..<options.clients {
      let request: (Int) -> [UInt8]
      switch options.scenario {
      case .get:
        request = { call in
          let index = (call * 7 + client) % lookups.count
          return lookups[index < 0 ? index + lookups.count : index]
        }
      case .start:
        // The process id too: several client processes start trials at once.
        let prefix = "load-d\(options.depth)-p\(getpid())-\(client)-"
        request = { call in TrialsCalls.startTrial(subject: prefix + String(call)) }
      case .startLabelled:
        let prefix = "labelled-d\(options.depth)-p\(getpid())-\(client)-"
        request = { call in TrialsCalls.startTrial(subject: prefix + String(call), labels: benchLabels) }
      }
      let warmUp = (1...warmUpCalls).map { request(-$0) }
      let call: (Int) -> [UInt8]
      if options.until == nil {
        let calls = (0..<options.calls).map(request)
        call = { calls[$0] }
      } else {
        call = request
      }
      clients.append(
        Client(
          connection: try RawVarlinkConnection(path: options.socket), warmUp: warmUp, count: options.calls,
          call: call, until: options.until))
    }

    let warmed = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let gate = Gate()
    let depth = options.depth
    for client in clients {
      // Each thread signals `warmed` and `finished` exactly once and waits for `go` once,
      // whatever fails.
      Thread {
        do {
          for call in client.warmUp {
            try client.connection.send(call)
            try client.connection.receiveReply()
          }
        } catch {
          client.failure = error
        }
        warmed.signal()
        go.wait()
        if gate.open, client.failure == nil {
          do {
            try runCalls(client, depth: depth)
          } catch {
            client.failure = error
          }
        }
        finished.signal()
      }.start()
    }
    for _ in clients { warmed.wait() }
    gate.open = clients.allSatisfy { $0.failure == nil }
    let began = DispatchTime.now().uptimeNanoseconds
    for _ in clients { go.signal() }
    for _ in clients { finished.wait() }
    let ended = DispatchTime.now().uptimeNanoseconds
    let elapsed = Double(ended - began) / 1e9
    if let failure = clients.lazy.compactMap({ $0.failure }).first { throw failure }

    var all = Latencies()
    for client in clients { all.add(client.latencies) }
    return Report(
      uid: getuid(), gid: getgid(), groups: currentGroups(), seconds: elapsed, latencies: all, began: began,
      ended: ended)
  }

  /// Makes `client`'s calls, `depth` in flight at most; with `until`, stops sending once that
  /// file exists (looked for every 256 calls).
  private static func runCalls(_ client: Client, depth: Int) throws {
    var sentAt = [UInt64](repeating: 0, count: client.count)
    var limit = client.count
    var next = 0
    func sendNext() throws {
      if let until = client.until, next % 256 == 0, FileManager.default.fileExists(atPath: until) {
        limit = next
        return
      }
      sentAt[next] = DispatchTime.now().uptimeNanoseconds
      try client.connection.send(client.call(next))
      next += 1
    }
    while next < min(depth, limit) { try sendNext() }
    var call = 0
    while call < next {
      try client.connection.receiveReply()
      client.latencies.record(nanoseconds: DispatchTime.now().uptimeNanoseconds - sentAt[call])
      call += 1
      if next < limit { try sendNext() }
    }
  }

  /// Gives up root for good: no supplementary groups, then the group, then the user.
  private static func become(_ identity: Identity) throws {
    guard setgroups(0, nil) == 0 else { throw BenchError("setgroups: errno \(errno)") }
    guard setgid(identity.gid) == 0 else { throw BenchError("setgid(\(identity.gid)): errno \(errno)") }
    guard setuid(identity.uid) == 0 else { throw BenchError("setuid(\(identity.uid)): errno \(errno)") }
    guard getuid() == identity.uid, geteuid() == identity.uid, getgid() == identity.gid,
      getegid() == identity.gid
    else { throw BenchError("still running as uid \(geteuid()), gid \(getegid())") }
    if identity.uid != 0, setuid(0) == 0 { throw BenchError("root could be regained") }
  }

  /// The supplementary groups of this process.
  private static func currentGroups() -> [UInt32] {
    let count = getgroups(0, nil)
    guard count > 0 else { return [] }
    var groups = [gid_t](repeating: 0, count: Int(count))
    let got = getgroups(count, &groups)
    return Array(groups.prefix(Int(max(got, 0))))
  }
}
