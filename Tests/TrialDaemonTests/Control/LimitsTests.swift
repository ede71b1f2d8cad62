import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialControlServer
@testable import TrialDaemon

/// Connection limits under hostile local users: clients run as other users (with setpriv), in
/// processes of their own, holding their connections open.
@Suite(.enabled(if: getuid() == 0, "needs root to run clients as other users"))
struct LimitsTests {
  /// Opens `count` connections, calls GetInfo on each, keeps those admitted, prints how many
  /// were kept and refused, and holds them until its standard input closes.
  static let script = """
    import json, resource, socket, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    path, count = sys.argv[1], int(sys.argv[2])
    kept, refused = [], {}
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(b'{"method":"org.varlink.service.GetInfo"}\\0')
        except OSError:
            pass
        reply = b""
        try:
            while b"\\0" not in reply:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except OSError:
            pass
        message = json.loads(reply.split(b"\\0")[0])
        if message.get("error") == "io.trialwatch.TooManyConnections":
            limit = str(message["parameters"]["limit"])
            refused[limit] = refused.get(limit, 0) + 1
            s.close()
        elif message.get("parameters", {}).get("vendor") == "trialwatch":
            kept.append(s)
        else:
            sys.exit("unexpected reply: %r" % reply)
    print(json.dumps({"kept": len(kept), "refused": refused}), flush=True)
    sys.stdin.read()
    """

  struct Holder {
    struct Counts: Decodable {
      var kept: Int
      var refused: [String: Int]
    }

    let child: ChildProcess
    let counts: Counts

    /// Ends the process, closing its connections.
    func release() {
      child.closeInput()
      child.wait()
    }
  }

  /// Connections from `user`, held open. By default the user's group is nogroup, which may
  /// reach the socket; with `group`, that is its primary group and nogroup a supplementary one.
  func hold(_ count: Int, as user: String, group: String? = nil, at path: String) throws -> Holder {
    let identity =
      group.map { ChildProcess.User(user, group: $0, supplementaryGroups: ["nogroup"]) }
      ?? ChildProcess.User(user)
    let child = try ChildProcess(
      .path("/usr/bin/python3"), ["-c", Self.script, path, String(count)], as: identity, input: .pipe)
    let line = child.readLine(timeout: 60).line ?? ""
    let counts = try JSONDecoder().decode(Holder.Counts.self, from: Data(line.utf8))
    return Holder(child: child, counts: counts)
  }

  static func options(maximum: Int, perUser: Int, reserved: Int) -> ControlServer.Options {
    var options = ControlServer.Options()
    options.maximumConnections = maximum
    options.maximumConnectionsPerUser = perUser
    options.reservedConnections = reserved
    return options
  }

  @Test func oneUser_WithAThousandConnections_CannotLockOutAnother() throws {
    let fixture = try ControlFixture(
      options: Self.options(maximum: 256, perUser: 64, reserved: 16), group: 65_534, ids: [1])
    let hostile = try hold(1000, as: "nobody", at: fixture.socketPath)
    defer { hostile.release() }
    #expect(hostile.counts.kept == 64)
    #expect(hostile.counts.refused == ["64": 936], "refused with the per-user limit")
    // Another ordinary user is served while nobody holds its 64.
    let other = try hold(3, as: "daemon", at: fixture.socketPath)
    defer { other.release() }
    #expect(other.counts.kept == 3)
    #expect(other.counts.refused.isEmpty)
    // So is root.
    let root = try fixture.client()
    #expect(try root.startTrial(StartTrialParameters(subject: "still-served")).id == TrialID(1))
    #expect(fixture.server.connectionCount == 64 + 3 + 1)
    // Refusals are logged, not one line each.
    let logged = fixture.logs.all.filter { $0.message.contains("too many connections") }
    #expect((1...2).contains(logged.count))
    #expect(logged.first?.level == .warning)
    #expect(logged.first?.metadata["peer"]?.contains("uid 65534") == true)
  }

  @Test func reserve_WhenOrdinaryUsersFillTheRest_StillAdmitsRootAndTheControlGroup() throws {
    var options = Self.options(maximum: 32, perUser: 8, reserved: 8)
    options.controlGroup = 3  // sys
    let fixture = try ControlFixture(options: options, group: 65_534)
    let holders = try ["nobody", "daemon", "bin"].map { try hold(8, as: $0, at: fixture.socketPath) }
    defer { for holder in holders { holder.release() } }
    #expect(holders.map(\.counts.kept) == [8, 8, 8])
    // The 24 connections outside the reserve are taken: the next ordinary user is refused
    // with the overall limit, though it has none of its own open.
    let late = try hold(1, as: "games", at: fixture.socketPath)
    defer { late.release() }
    #expect(late.counts.kept == 0)
    #expect(late.counts.refused == ["32": 1])
    // A member of the control group (sys, by its primary group) and root still get in.
    let member = try hold(2, as: "sys", group: "sys", at: fixture.socketPath)
    defer { member.release() }
    #expect(member.counts.kept == 2)
    let root = try fixture.client()
    #expect(try root.getInfo().vendor == "trialwatch")
    #expect(fixture.server.connectionCount == 24 + 2 + 1)
  }

  @Test func admission_OfConnections_FollowsTheLimits() throws {
    let fixture = try ControlFixture(
      options: Self.options(maximum: 4, perUser: 2, reserved: 1), group: 65_534)
    let nobody = try hold(3, as: "nobody", at: fixture.socketPath)
    defer { nobody.release() }
    #expect(nobody.counts.kept == 2)
    #expect(nobody.counts.refused == ["2": 1])
    let daemon = try hold(2, as: "daemon", at: fixture.socketPath)
    defer { daemon.release() }
    #expect(daemon.counts.kept == 1, "one place left outside the reserve")
    #expect(daemon.counts.refused == ["4": 1])
    let root = try fixture.client()
    #expect(try root.getInfo().vendor == "trialwatch", "root takes the reserved place")
    // Now every place is taken, the reserve included.
    let extra = try fixture.client()
    let refused = try readToEnd(extra.fileDescriptor).map { try replies(in: $0) }
    #expect(refused?.first?.controlError == .tooManyConnections(limit: 4))
  }
}
