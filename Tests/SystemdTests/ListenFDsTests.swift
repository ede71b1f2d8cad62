import Foundation
import Testing

@testable import Systemd

/// Socket activation with real sockets placed at descriptors 3 and up, as systemd passes
/// them. Each test runs in a child process of its own: it moves descriptors and changes the
/// environment, which no other test may see.
@Suite struct ListenFDsTests {
  /// What one call saw, collected while descriptors 3 and 4 are replaced (no test issue can be
  /// reported then: the test library may itself use one of them), checked afterwards.
  struct Observation {
    var descriptors: [ListenFDs.Descriptor] = []
    var error: SystemdError?
    var identities: [Int32: FileIdentity] = [:]
    var closeOnExec: [Int32: Bool] = [:]
    var environmentAfter: [String: String] = [:]
    var secondCall: [Int32] = []
  }

  struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(_ fd: Int32) {
      var info = stat()
      guard fstat(fd, &info) == 0 else { return nil }
      device = UInt64(info.st_dev)
      inode = UInt64(info.st_ino)
    }
  }

  /// Puts `sockets` at descriptors 3, 4, … with the given variables set, calls `body`, then
  /// puts back whatever was at those descriptors before.
  static func withPassedSockets(
    _ sockets: [Int32], environment: [String: String], _ body: () -> Observation
  ) -> Observation {
    var saved: [Int32: Int32] = [:]
    for index in sockets.indices {
      let target = Int32(3 + index)
      if fcntl(target, F_GETFD) >= 0 { saved[target] = fcntl(target, F_DUPFD_CLOEXEC, 100) }
      dup2(sockets[index], target)
    }
    for (name, value) in environment { setenv(name, value, 1) }
    let observation = body()
    for index in sockets.indices {
      let target = Int32(3 + index)
      if let original = saved[target] {
        dup2(original, target)
        close(original)
      } else {
        close(target)
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
          "LISTEN_FDS": "2", "LISTEN_PID": String(getpid()), "LISTEN_FDNAMES": "varlink:events",
        ]
      ) {
        var observation = Observation()
        do throws(SystemdError) {
          observation.descriptors = try ListenFDs.takeNamed()
        } catch {
          observation.error = error
        }
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
        environment: ["LISTEN_FDS": "1", "LISTEN_PID": String(getpid())]
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
          "LISTEN_FDS": "2", "LISTEN_PID": String(getpid()), "LISTEN_FDNAMES": "only-one",
        ]
      ) {
        var observation = Observation()
        do throws(SystemdError) {
          observation.descriptors = try ListenFDs.takeNamed()
        } catch {
          observation.error = error
        }
        return observation
      }
      #expect(seen.error == .listenFDsFailed)
      #expect(seen.error?.errno == EINVAL)
      #expect(seen.descriptors.isEmpty)
    }
  }
}
