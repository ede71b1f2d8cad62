import Foundation
import Testing

@testable import Systemd

/// Socket activation with real sockets placed at descriptors 3 and up, as systemd passes
/// them. Each test runs in a child process of its own (an exit test): it changes the
/// environment, which no other test may see; and the descriptors are moved in a process forked
/// from that one (see `withPassedSockets`).
@Suite struct ListenFDsTests {
  /// What one call saw, collected in the forked process, checked in the test's.
  struct Observation {
    var descriptors: [ListenFDs.Descriptor] = []
    var error: SystemdError?
    var identities: [Int32: FileIdentity] = [:]
    var closeOnExec: [Int32: Bool] = [:]
    var environmentAfter: [String: String] = [:]
    var secondCall: [Int32] = []

    /// What `takeNamed()` returns, or the error it throws.
    static func takingNamed() -> Observation {
      var observation = Observation()
      do throws(SystemdError) {
        observation.descriptors = try ListenFDs.takeNamed()
      } catch {
        observation.error = error
      }
      return observation
    }
  }

  struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init(device: UInt64, inode: UInt64) {
      self.device = device
      self.inode = inode
    }

    init?(_ fd: Int32) {
      var info = stat()
      guard fstat(fd, &info) == 0 else { return nil }
      device = UInt64(info.st_dev)
      inode = UInt64(info.st_ino)
    }
  }

  /// Stands for the pid of the process that takes the sockets, in `LISTEN_PID`.
  static let ownPID = "own-pid"

  /// Puts `sockets` at descriptors 3, 4, … with the given variables set (`ownPID` replaced by
  /// the pid), calls `body` and returns what it saw. All of it runs in a process forked for
  /// it, with one thread: in the exit test's process the runtime keeps descriptors of its own
  /// at 3 and 4 (Dispatch's epoll and eventfd), which another of its threads may use or close
  /// while they are replaced. What `body` saw comes back through a pipe.
  static func withPassedSockets(
    _ sockets: [Int32], environment: [String: String], _ body: () -> Observation
  ) -> Observation {
    var ends: [Int32] = [0, 0]
    precondition(pipe(&ends) == 0)
    let child = fork()
    precondition(child >= 0)
    if child == 0 {
      close(ends[0])
      for index in sockets.indices { dup2(sockets[index], Int32(3 + index)) }
      for (name, value) in environment { setenv(name, value == ownPID ? String(getpid()) : value, 1) }
      let text = encode(body())
      _ = text.utf8CString.withUnsafeBufferPointer { write(ends[1], $0.baseAddress, $0.count - 1) }
      _exit(0)
    }
    close(ends[1])
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while case let count = read(ends[0], &chunk, chunk.count), count != 0 {
      if count < 0 {
        if errno == EINTR { continue }
        break
      }
      bytes += chunk[0..<count]
    }
    close(ends[0])
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    return decode(String(decoding: bytes, as: UTF8.self))
  }

  /// An observation as lines of text, one fact a line.
  static func encode(_ observation: Observation) -> String {
    var lines = observation.descriptors.map { "descriptor \($0.fd) \($0.name)" }
    if let error = observation.error {
      lines.append("error \(error.code) \(error.errno ?? -1) \(error.detail)")
    }
    for (fd, identity) in observation.identities {
      lines.append("identity \(fd) \(identity.device) \(identity.inode)")
    }
    for (fd, flag) in observation.closeOnExec { lines.append("cloexec \(fd) \(flag)") }
    for (name, value) in observation.environmentAfter { lines.append("environment \(name) \(value)") }
    lines += observation.secondCall.map { "second \($0)" }
    return lines.joined(separator: "\n")
  }

  static func decode(_ text: String) -> Observation {
    var observation = Observation()
    let codes: [SystemdError] = [
      .notifyFailed, .invalidWatchdogSettings, .listenFDsFailed, .journalSendFailed, .invalidJournalField,
    ]
    for line in text.split(separator: "\n") {
      let field = line.split(separator: " ", maxSplits: 3).map(String.init)
      switch field.first {
      case "descriptor": observation.descriptors.append(.init(fd: Int32(field[1])!, name: field[2]))
      case "error":
        let code = codes.first { "\($0.code)" == field[1] }!.code
        let errno = Int32(field[2])!
        observation.error = SystemdError(code, errno: errno < 0 ? nil : errno, detail: field[3])
      case "identity":
        observation.identities[Int32(field[1])!] = FileIdentity(
          device: UInt64(field[2])!, inode: UInt64(field[3])!)
      case "cloexec": observation.closeOnExec[Int32(field[1])!] = field[2] == "true"
      case "environment":
        observation.environmentAfter[field[1]] = field.count > 2 ? field[2...].joined(separator: " ") : ""
      case "second": observation.secondCall.append(Int32(field[1])!)
      default: break
      }
    }
    return observation
  }

  static func makeSockets() -> [Int32] {
    let stream = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    return [stream, datagram]
  }

  @Test func listenFDs_PassedWithNames_AreTakenAndTheEnvironmentCleared() async {
    await #expect(processExitsWith: .success) { () throws in
      let sockets = ListenFDsTests.makeSockets()
      #expect(sockets.allSatisfy { $0 >= 0 })
      let expected = sockets.map { FileIdentity($0) }
      let seen = ListenFDsTests.withPassedSockets(
        sockets,
        environment: [
          "LISTEN_FDS": "2", "LISTEN_PID": ListenFDsTests.ownPID, "LISTEN_FDNAMES": "varlink:events",
        ]
      ) {
        var observation = Observation.takingNamed()
        for fd: Int32 in [3, 4] {
          observation.identities[fd] = FileIdentity(fd)
          observation.closeOnExec[fd] = fcntl(fd, F_GETFD) & FD_CLOEXEC != 0
        }
        for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
          if let value = getenv(name) { observation.environmentAfter[name] = String(cString: value) }
        }
        observation.secondCall = (try? ListenFDs.take()) ?? [-1]
        return observation
      }
      #expect(seen.error == nil)
      #expect(
        seen.descriptors == [.init(fd: 3, name: "varlink"), .init(fd: 4, name: "events")])
      #expect(seen.identities[3] == expected[0])
      #expect(seen.identities[4] == expected[1])
      #expect(seen.closeOnExec == [3: true, 4: true])
      #expect(seen.environmentAfter.isEmpty)
      #expect(seen.secondCall.isEmpty)
    }
  }

  @Test func listenFDs_WithoutNames_AreNamedUnknown() async {
    await #expect(processExitsWith: .success) { () throws in
      let seen = ListenFDsTests.withPassedSockets(
        [ListenFDsTests.makeSockets()[0]],
        environment: ["LISTEN_FDS": "1", "LISTEN_PID": ListenFDsTests.ownPID]
      ) {
        unsetenv("LISTEN_FDNAMES")
        var observation = Observation()
        observation.descriptors = (try? ListenFDs.takeNamed()) ?? []
        return observation
      }
      #expect(seen.descriptors == [.init(fd: 3, name: "unknown")])
    }
  }

  @Test func listenFDs_ForAnotherProcess_AreIgnored() async {
    await #expect(processExitsWith: .success) { () throws in
      setenv("LISTEN_FDS", "2", 1)
      setenv("LISTEN_PID", String(getpid() + 1), 1)
      #expect(try ListenFDs.take() == [])
      // Cleared all the same, so that children do not take them for theirs.
      #expect(getenv("LISTEN_FDS") == nil)
    }
  }

  @Test func listenFDs_WithoutSocketActivation_AreNone() async {
    await #expect(processExitsWith: .success) { () throws in
      unsetenv("LISTEN_FDS")
      unsetenv("LISTEN_PID")
      #expect(try ListenFDs.take() == [])
    }
  }

  @Test func listenFDs_WithAMalformedCount_Throw() async {
    await #expect(processExitsWith: .success) { () throws in
      setenv("LISTEN_FDS", "two", 1)
      setenv("LISTEN_PID", String(getpid()), 1)
      let error = #expect(throws: SystemdError.listenFDsFailed) { try ListenFDs.take() }
      #expect(error?.errno == EINVAL)
    }
  }

  @Test func listenFDs_WithNamesNotMatchingTheCount_Throw() async {
    await #expect(processExitsWith: .success) { () throws in
      let seen = ListenFDsTests.withPassedSockets(
        ListenFDsTests.makeSockets(),
        environment: [
          "LISTEN_FDS": "2", "LISTEN_PID": ListenFDsTests.ownPID, "LISTEN_FDNAMES": "only-one",
        ]
      ) { Observation.takingNamed() }
      #expect(seen.error == .listenFDsFailed)
      #expect(seen.error?.errno == EINVAL)
      #expect(seen.descriptors.isEmpty)
    }
  }
}
