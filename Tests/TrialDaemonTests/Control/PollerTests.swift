import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialControlServer
@testable import TrialDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The poller threads that read the connections: reads answered there and then, and events
/// that arrive for connections already gone.
@Suite struct PollerTests {
  @Test(arguments: StoreKind.allCases)
  func reads_OneAtATime_AreAnsweredOnThePoller(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1])
    let raw = try fixture.client()
    let started = try raw.startTrial(StartTrialParameters(subject: "only"))
    let before = ControlConnection.pollerCompletions.load(ordering: .relaxed)
    for _ in 0..<500 {
      #expect(try raw.getTrial(GetTrialParameters(id: started.id)).subject == "only")
    }
    // Other tests running meanwhile only add to the count.
    #expect(ControlConnection.pollerCompletions.load(ordering: .relaxed) - before >= 500)
  }

  @Test func connections_OpenedAndClosedQuickly_LeaveTheOthersAnswered() throws {
    let fixture = try ControlFixture(ids: Array(1...64))
    var ids: [TrialID] = []
    do {
      let seeder = try fixture.client()
      for index in 0..<4 { ids.append(try seeder.startTrial(StartTrialParameters(subject: "s\(index)")).id) }
    }
    let path = fixture.socketPath
    let failures = Atomic<Int>(0)
    let answered = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    // Callers keep their connections, one call at a time, while others come and go: their
    // descriptors (and their numbers, reused) are closed with events possibly on the way.
    for (index, id) in ids.enumerated() {
      Thread {
        defer { done.signal() }
        guard let client = try? VarlinkClient(path: path) else { return failed(failures) }
        client.setReceiveTimeout(seconds: patience)
        for _ in 0..<400 {
          guard (try? client.getTrial(GetTrialParameters(id: id)))?.subject == "s\(index)" else {
            return failed(failures)
          }
          answered.add(1, ordering: .relaxed)
        }
      }.start()
    }
    for round in 0..<2 {
      Thread {
        defer { done.signal() }
        for count in 0..<300 {
          guard let fd = try? connectedSocket(path) else { return failed(failures) }
          switch (count + round) % 3 {
          case 0: break  // closed at once, nothing said
          case 1: sendAll(fd, message("io.trialwatch.Trials.GetTrial", #"{"subject":"s0"}"#))  // reply unread
          default: sendAll(fd, Array(#"{"method":"org.varlink.se"#.utf8))  // half a message
          }
          close(fd)
        }
      }.start()
    }
    for _ in 0..<(ids.count + 2) { #expect(done.wait(timeout: .now() + 60) == .success) }
    #expect(failures.load(ordering: .relaxed) == 0)
    #expect(answered.load(ordering: .relaxed) == ids.count * 400)
    // Every connection that came and went is gone, and the server still answers.
    #expect(eventually { fixture.server.connectionCount == 0 })
    #expect(try fixture.client().getTrial(GetTrialParameters(id: ids[0])).subject == "s0")
    #expect(fixture.stop())
  }
}

/// A blocking Unix stream socket connected to `path`.
private func connectedSocket(_ path: String) throws -> Int32 {
  let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw POSIXError(.EMFILE) }
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  withUnsafeMutableBytes(of: &address.sun_path) { bytes in
    for (index, byte) in path.utf8.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
  }
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  guard connected == 0 else {
    close(fd)
    throw POSIXError(.ECONNREFUSED)
  }
  return fd
}

private func failed(_ failures: borrowing Atomic<Int>) {
  failures.add(1, ordering: .relaxed)
}

private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
  _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}
