import Dispatch
import Foundation
import Logging
import TrialControl
import TrialCore
import TrialDaemon

/// GetTrial round trips through the control socket: requests per second and p50/p99 latency,
/// with 1 and 4 clients each on its own thread and connection, calls one at a time.
///
/// `makeBackend` is the backend behind the server: an in-memory one by default; the daemon's
/// engine to measure the whole path.
func runControlBench(makeBackend: () throws -> any TrialsBackend) throws {
  print("control_socket_floor_rps: \(Int(try socketPingPongRate())) req/s")
  try runControlBench(makeBackend: makeBackend, suffix: "")
}

/// The floor under every round-trip figure: two threads passing 100 bytes back and forth
/// over a connected pair of Unix stream sockets with blocking reads and writes, no parsing
/// and no Dispatch. Round trips per second.
private func socketPingPongRate(roundTrips: Int = 50_000) throws -> Double {
  var pair: [Int32] = [0, 0]
  guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { throw POSIXError(.EIO) }
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
    guard write(pair[0], buffer, 100) == 100 else { throw POSIXError(.EIO) }
    var received = 0
    while received < 100 {
      let count = read(pair[0], &buffer, buffer.count)
      guard count > 0 else { throw POSIXError(.EIO) }
      received += count
    }
  }
  let elapsed = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
  shutdown(pair[0], Int32(SHUT_WR))
  echoed.wait()
  return Double(roundTrips) / elapsed
}

private func runControlBench(makeBackend: () throws -> any TrialsBackend, suffix: String) throws {
  var template = Array("/tmp/trialwatch-bench-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
  let directory = String(cString: made)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let path = directory + "/io.trialwatch"

  let server = try ControlServer(
    listener: .bind(path: path, group: nil), backend: try makeBackend(),
    logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
  server.start()
  defer {
    let stopped = DispatchSemaphore(value: 0)
    server.stop { stopped.signal() }
    _ = stopped.wait(timeout: .now() + 10)
  }

  // A thousand trials to look up.
  let seeder = try TrialsClient(path: path)
  var ids: [TrialID] = []
  for index in 0..<1000 {
    ids.append(try seeder.startTrial(StartTrialParameters(subject: "bench-\(index)", duration: Days(30))).id)
  }
  seeder.connection.close()

  // Requests are encoded before timing starts: the figures are the socket, server and backend.
  let gets = ids.map {
    VarlinkCall(method: TrialsMethod.getTrial.qualifiedName, parameters: ["id": .string($0.description)])
      .encoded()
  }
  for clients in [1, 4] {
    let perClient = 80_000 / clients
    let result = try measureCalls(path: path, clients: clients, callsPerClient: perClient) { client, call in
      gets[((call * 7 + client) % gets.count + gets.count) % gets.count]
    }
    print("control_get_rps_\(clients)\(suffix): \(Int(result.requestsPerSecond)) req/s")
    print("control_get_p50_\(clients)\(suffix): \(format(result.p50)) ms")
    print("control_get_p99_\(clients)\(suffix): \(format(result.p99)) ms")
  }

  // Durable StartTrial: each answered only once committed (group commit across clients).
  let clients = 4
  let starts = try measureCalls(path: path, clients: clients, callsPerClient: 5_000) { client, call in
    VarlinkCall(
      method: TrialsMethod.startTrial.qualifiedName,
      parameters: ["subject": .string("load-\(client)-\(call)"), "duration": .string("30d")]
    ).encoded()
  }
  print("control_start_rps_\(clients)\(suffix): \(Int(starts.requestsPerSecond)) req/s")
  print("control_start_p99_\(clients)\(suffix): \(format(starts.p99)) ms")

  // The same with each client pipelining 32 calls (Varlink allows it): the daemon runs a
  // connection's changes together, so a group commit takes up to 4 × 32 of them.
  let pipelined = try measureCalls(path: path, clients: clients, callsPerClient: 20_000, depth: 32) {
    client, call in
    VarlinkCall(
      method: TrialsMethod.startTrial.qualifiedName,
      parameters: ["subject": .string("pipelined-\(client)-\(call)"), "duration": .string("30d")]
    ).encoded()
  }
  print("control_start_pipelined_rps_\(clients)\(suffix): \(Int(pipelined.requestsPerSecond)) req/s")
  print("control_start_pipelined_p99_\(clients)\(suffix): \(format(pipelined.p99)) ms")
}

private struct CallFigures {
  var requestsPerSecond: Double
  /// Milliseconds.
  var p50: Double
  var p99: Double
}

private final class ClientRun: @unchecked Sendable {
  var latencies = Latencies()
  var failure: (any Error)?
}

/// Runs `callsPerClient` calls on each of `clients` connections at once, `depth` calls in
/// flight per connection (1: one at a time); `request(client, call)` gives each call's bytes
/// (negative calls warm up). A call's latency runs from its sending to its reply.
private func measureCalls(
  path: String, clients: Int, callsPerClient: Int, depth: Int = 1, request: @escaping (Int, Int) -> [UInt8]
) throws -> CallFigures {
  let runs = (0..<clients).map { _ in ClientRun() }
  let connections = try (0..<clients).map { _ in try VarlinkClient(path: path) }
  nonisolated(unsafe) let request = request
  let ready = DispatchGroup()
  let start = DispatchSemaphore(value: 0)
  let done = DispatchGroup()
  for (index, run) in runs.enumerated() {
    nonisolated(unsafe) let connection = connections[index]
    ready.enter()
    done.enter()
    let thread = Thread {
      defer { done.leave() }
      do {
        // Warm up the connection and the caches.
        for call in 0..<200 { try roundTrip(connection, request(index, -1 - call)) }
        ready.leave()
        start.wait()
        var sentAt: [UInt64] = []
        sentAt.reserveCapacity(callsPerClient)
        for call in 0..<min(depth, callsPerClient) {
          sentAt.append(DispatchTime.now().uptimeNanoseconds)
          try connection.sendBytes(request(index, call))
        }
        for call in 0..<callsPerClient {
          let reply = try connection.receive()
          if let error = reply.error { throw ControlError(name: error, parameters: reply.parameters) }
          run.latencies.record(nanoseconds: DispatchTime.now().uptimeNanoseconds - sentAt[call])
          let next = call + depth
          if next < callsPerClient {
            sentAt.append(DispatchTime.now().uptimeNanoseconds)
            try connection.sendBytes(request(index, next))
          }
        }
      } catch {
        run.failure = error
        ready.leave()
      }
    }
    thread.start()
  }
  ready.wait()
  let began = DispatchTime.now().uptimeNanoseconds
  for _ in 0..<clients { start.signal() }
  done.wait()
  let elapsed = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
  for run in runs { if let failure = run.failure { throw failure } }
  var all = Latencies()
  for run in runs { all.add(run.latencies) }
  return CallFigures(requestsPerSecond: Double(all.count) / elapsed, p50: all.p50, p99: all.p99)
}

private func roundTrip(_ connection: VarlinkClient, _ request: [UInt8]) throws {
  try connection.sendBytes(request)
  let reply = try connection.receive()
  if let error = reply.error { throw ControlError(name: error, parameters: reply.parameters) }
}

private func format(_ milliseconds: Double) -> String {
  String(format: "%.3f", milliseconds)
}
