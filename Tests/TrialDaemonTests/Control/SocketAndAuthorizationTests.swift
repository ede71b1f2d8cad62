import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialControlServer
@testable import TrialDaemon

/// Setting up the socket (binding, stale sockets, socket activation) and who may change trials.
@Suite struct SocketTests {
  @Test func boundSocket_OfTheServer_HasMode0660AndTheGivenGroup() throws {
    let fixture = try ControlFixture(group: 65_534)
    var info = stat()
    #expect(lstat(fixture.socketPath, &info) == 0)
    #expect(info.st_mode & S_IFMT == S_IFSOCK)
    #expect(info.st_mode & 0o777 == 0o660)
    #expect(info.st_gid == 65_534)
  }

  @Test func socket_LeftStale_IsReplaced() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("io.trialwatch")
    // A socket left behind by a process that is gone: bound, never listening, closed.
    let leftover = try UnixSocket.makeStreamSocket()
    _ = try UnixSocket.withAddress(path) { bind(leftover, $0, $1) }
    close(leftover)
    #expect(FileManager.default.fileExists(atPath: path))

    let server = try ControlServer(
      listener: .bind(path: path, group: nil),
      routes: [],
      logger: CapturedLogs().makeLogger())
    server.start()
    defer { server.stop() }
    #expect(try VarlinkClient(path: path).getInfo().product == "trialwatchd")
  }

  @Test func socket_ThatIsLive_IsNotTakenOver() throws {
    let fixture = try ControlFixture()
    let error = try #require(throws: ControlServerError.self) {
      _ = try ControlServer(
        listener: .bind(path: fixture.socketPath, group: nil), routes: [],
        logger: fixture.logs.makeLogger())
    }
    #expect(error.description.contains("already listening"))
    #expect(error.description.contains(fixture.socketPath))
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test func file_ThatIsNotASocket_IsLeftAlone() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("io.trialwatch")
    try "precious".write(toFile: path, atomically: false, encoding: .utf8)
    let error = try #require(throws: ControlServerError.self) {
      _ = try ControlServer(
        listener: .bind(path: path, group: nil), routes: [],
        logger: CapturedLogs().makeLogger())
    }
    #expect(error.description == "\(path) exists and is not a socket; not removing it")
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
  }

  @Test func socketPath_ThatIsTooLong_IsNamed() throws {
    let path = "/tmp/" + String(repeating: "d", count: 200) + "/io.trialwatch"
    let error = try #require(throws: ControlServerError.self) {
      _ = try ControlServer(
        listener: .bind(path: path, group: nil), routes: [],
        logger: CapturedLogs().makeLogger())
    }
    #expect(error.description.contains(path))
  }

  @Test func listeningSocket_WhenAdopted_IsServed() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("activated")
    // As the service manager would hand it over: already bound and listening.
    let fd = try ControlSocket.bind(path: path, group: nil, mode: 0o600)
    let logs = CapturedLogs()
    let server = try ControlServer(
      listener: .adopt(fileDescriptor: fd), routes: [],
      logger: logs.makeLogger())
    #expect(server.socketPath == nil)
    server.start()
    #expect(try VarlinkClient(path: path).getInfo().product == "trialwatchd")
    #expect(logs.waitFor { $0.message == "control socket adopted" } != nil)
    let stopped = DispatchSemaphore(value: 0)
    server.stop { stopped.signal() }
    #expect(stopped.wait(timeout: .now() + 10) == .success)
    // The socket file belongs to the service manager.
    #expect(FileManager.default.fileExists(atPath: path))
  }

  @Test func acceptedConnection_IsNonBlockingAndCloseOnExec() throws {
    let directory = try TemporaryDirectory()
    let path = directory.appending("s")
    let listener = try ControlSocket.bind(path: path, group: nil, mode: 0o600)
    defer { close(listener) }
    #expect(ControlSocket.hasAccept4)
    guard case .success(nil) = ControlSocket.accept(listener) else {
      Issue.record("a connection was pending before any client connected")
      return
    }
    let client = try UnixSocket.connect(to: path)
    defer { close(client) }
    guard case .success(let accepted?) = ControlSocket.accept(listener) else {
      Issue.record("no connection accepted")
      return
    }
    defer { close(accepted) }
    #expect(fcntl(accepted, F_GETFD) & FD_CLOEXEC != 0)
    #expect(fcntl(accepted, F_GETFL) & O_NONBLOCK != 0)
    #expect(
      ControlSocket.peerCredentials(accepted) == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
  }

  @Test func adoption_OfWhatIsNotAListeningSocket_Fails() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    let error = try #require(throws: ControlServerError.self) {
      _ = try ControlServer(
        listener: .adopt(fileDescriptor: fds[0]), routes: [],
        logger: CapturedLogs().makeLogger())
    }
    #expect(error.description.hasPrefix("file descriptor \(fds[0]) is not a listening stream socket"))

    let unconnected = try UnixSocket.makeStreamSocket()
    defer { close(unconnected) }
    let notListening = try #require(throws: ControlServerError.self) {
      _ = try ControlServer(
        listener: .adopt(fileDescriptor: unconnected), routes: [],
        logger: CapturedLogs().makeLogger())
    }
    #expect(notListening.description.hasSuffix("not listening"))
  }
}

@Suite struct AuthorizerTests {
  static let groups: @Sendable (UInt32, UInt32) -> [UInt32]? = { uid, gid in
    uid == 1000 ? [gid, 27, 990] : [gid]
  }

  @Test func authorizer_ForEachKindOfCaller_Decides() {
    let authorizer = ControlAuthorizer(daemonUID: 500, controlGroup: 990, groupsOfUser: Self.groups)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 0, gid: 0)) == .root)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 500, gid: 500)) == .daemonUser)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 2000, gid: 990)) == .primaryGroup)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 1000, gid: 1000)) == .supplementaryGroup)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 1001, gid: 1001)) == .refused)
  }

  @Test func authorizer_WithoutAControlGroup_LetsOnlyRootAndTheDaemonUserChange() {
    let authorizer = ControlAuthorizer(daemonUID: 500, controlGroup: nil, groupsOfUser: Self.groups)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 1000, gid: 990)) == .refused)
    #expect(authorizer.mayChange(PeerCredentials(pid: 1, uid: 500, gid: 1)).permitted)
  }

  @Test func groups_OfRootAndNobody_ComeFromTheUserDatabase() {
    #expect(ControlSocket.groups(ofUser: 0, primaryGroup: 0)?.contains(0) == true)
    #expect(ControlSocket.groups(ofUser: 65_534, primaryGroup: 65_534) == [65_534])
    #expect(ControlSocket.groups(ofUser: 3_999_999_999, primaryGroup: 1) == nil)
  }

  @Test func changingCall_FromACallerWhoMayNot_IsRefusedBeforeItsParametersAreRead() throws {
    let fixture = try ControlFixture()
    let router = fixture.server.router
    for method in [
      Trials.startTrial.qualifiedName, Trials.extendTrial.qualifiedName, Trials.endTrial.qualifiedName,
    ] {
      guard
        case .answer(let reply?) = router.classify(
          message(method, #"{"bogus":true}"#).dropLast(), mayChange: false, uid: 4321)
      else {
        Issue.record("\(method) was not refused")
        continue
      }
      let error = try #require(try VarlinkReply(reply.dropLast().map { $0 }).controlError)
      #expect(error.name == "io.trialwatch.PermissionDenied")
      #expect(error.parameters.method == method)
      #expect(error.parameters.uid == 4321)
    }
    let read = router.classify(
      message(Trials.getTrial.qualifiedName, #"{"id":"1"}"#).dropLast(), mayChange: false, uid: 4321)
    guard case .call(let call, change: false, oneway: false) = read else {
      Issue.record("reading was refused: \(read)")
      return
    }
    #expect(call.route.method == Trials.getTrial.qualifiedName)
  }
}

/// A client running as `nobody`, with `setpriv`: a separate process with a different uid.
@Suite(.enabled(if: getuid() == 0, "needs root to run a client as nobody"))
struct OtherUserTests {
  /// Sends each call and prints each reply on a line; only the standard library, so the
  /// system's Python can run it as nobody.
  static let script = """
    import json, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sys.argv[1])
    buffer = b""
    for call in json.loads(sys.argv[2]):
        s.sendall(json.dumps(call).encode() + b"\\0")
        while b"\\0" not in buffer:
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("connection closed")
            buffer += chunk
        message, buffer = buffer.split(b"\\0", 1)
        print(message.decode(), flush=True)
    """

  struct Outcome {
    var status: Int32
    var replies: [VarlinkReply]
    var errorOutput: String
  }

  func runAsNobody(_ path: String, _ calls: [[UInt8]]) throws -> Outcome {
    let encoded =
      "[" + calls.map { String(decoding: $0.dropLast(), as: UTF8.self) }.joined(separator: ",") + "]"
    let done = try ChildProcess.run(
      .path("/usr/bin/python3"), ["-c", Self.script, path, encoded], as: .nobody)
    let lines = done.output.split(separator: "\n")
    return Outcome(
      status: done.status.code, replies: try lines.map { try VarlinkReply(Array($0.utf8)) },
      errorOutput: done.errors)
  }

  @Test func nobody_OutsideTheControlGroup_MayReadButNotChange() throws {
    let fixture = try ControlFixture(group: 65_534, ids: [0x77, 0x78])
    let trial = try fixture.client().startTrial(StartTrialParameters(subject: "owned-by-root"))
    let outcome = try runAsNobody(
      fixture.socketPath,
      [
        message("io.trialwatch.Trials.StartTrial", #"{"subject":"intruder"}"#),
        message("io.trialwatch.Trials.EndTrial", #"{"id":"\#(trial.id)","outcome":"cancelled"}"#),
        message("io.trialwatch.Trials.GetTrial", #"{"id":"\#(trial.id)"}"#),
        message("io.trialwatch.Trials.GetStatus"),
      ])
    #expect(outcome.status == 0, "\(outcome.errorOutput)")
    #expect(
      outcome.replies.map(\.error) == [
        "io.trialwatch.PermissionDenied", "io.trialwatch.PermissionDenied", nil, nil,
      ])
    #expect(outcome.replies.first?.errorParameters.uid == 65_534)
    #expect(outcome.replies.first?.errorParameters.method == "io.trialwatch.Trials.StartTrial")
    #expect(try outcome.replies[2].parameters(as: TrialReply.self).trial.state == .active)
    let logged = fixture.logs.waitFor { $0.message.contains("refused a call that changes trials") }
    #expect(logged?.level == .warning)
    #expect(logged?.metadata["peer_uid"] == "65534")
    #expect(logged?.metadata["method"] == "io.trialwatch.Trials.StartTrial")
    // Nothing changed.
    #expect(try fixture.client().listTrials().trials.map(\.subject) == ["owned-by-root"])
  }

  @Test func member_OfTheControlGroup_MayChange() throws {
    var options = ControlServer.Options()
    options.controlGroup = 65_534
    let fixture = try ControlFixture(options: options, group: 65_534, ids: [0x99])
    let outcome = try runAsNobody(
      fixture.socketPath,
      [message("io.trialwatch.Trials.StartTrial", #"{"subject":"member"}"#)])
    #expect(outcome.status == 0, "\(outcome.errorOutput)")
    #expect(outcome.replies.first?.error == nil)
    #expect(try outcome.replies[0].parameters(as: TrialReply.self).trial.id == TrialID(0x99))
  }

  @Test func socketMode_ForOthers_KeepsThemOut() throws {
    let fixture = try ControlFixture(group: 0)
    let outcome = try runAsNobody(fixture.socketPath, [message("org.varlink.service.GetInfo")])
    #expect(outcome.status != 0)
    #expect(outcome.errorOutput.contains("PermissionError"))
    #expect(outcome.replies.isEmpty)
  }
}
