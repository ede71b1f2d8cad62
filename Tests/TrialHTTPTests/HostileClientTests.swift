import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Hostile clients of the gateway: many idle connections, a slow head, a huge body, a flood of
/// headers, a body framed twice to smuggle a request. Each is refused or outlived, and every
/// other client, over HTTP and on the daemon's control socket, is served meanwhile.
@Suite(.serialized) struct HostileClientTests {
  static let idleConnections = 1000

  @Test func thousandIdleConnections_OthersAreServed() throws {
    // This process holds the client's side of each connection.
    try OpenFiles.raiseSoftLimit(to: rlim_t(Self.idleConnections + 256))
    let fixture = try GatewayFixture()
    try fixture.start()
    let hostile = HostileRequests(fixture: fixture)
    let gateway = try #require(fixture.gateway)
    // The gateway raised its own limit to the hard one, and says what it runs with.
    let limits = try #require(OpenFiles.limits(of: gateway.pid))
    #expect(limits.soft == limits.hard && limits.soft >= 1000 + 64, "\(limits)")
    #expect(fixture.standardError.contains("open_files=\(limits.soft)"), "\(fixture.standardError)")

    var idle: [RawHTTPClient] = []
    for _ in 0..<Self.idleConnections { idle.append(try hostile.connect()) }
    // The gateway took every one (a socket of its own each), not only the kernel's backlog.
    #expect(
      waitUntil { OpenFiles.count(of: gateway.pid) >= Self.idleConnections },
      "\(OpenFiles.count(of: gateway.pid)) open files")
    try hostile.expectOthersServed("1,000 idle connections open")
    for connection in idle { connection.close() }
    #expect(
      waitUntil { OpenFiles.count(of: gateway.pid) < Self.idleConnections / 10 },
      "the connections are let go: \(OpenFiles.count(of: gateway.pid)) open files")
    try hostile.expectStillServing()
  }

  @Test func slowHeader_DoesNotBlockOthers() throws {
    let fixture = try GatewayFixture()
    // Silence is allowed as long as the tests wait for anything: the bound is the test's own.
    try fixture.start(["--connection-timeout", "\(Int(patience))"])
    let hostile = HostileRequests(fixture: fixture)
    let answer = try hostile.trickledHead()
    #expect(answer.status == 200, "the trickled request is answered once whole: \(answer)")
    try hostile.expectStillServing()
  }

  @Test func silentConnection_IsClosedPastItsTimeout() throws {
    let fixture = try GatewayFixture()
    try fixture.start(["--connection-timeout", "1"])
    let hostile = HostileRequests(fixture: fixture)
    let halfHead = try hostile.connect()
    halfHead.send("POST \(HostileRequests.getStatus) HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    let silent = try hostile.connect()
    // Each is closed without an answer once silent past the timeout: waited for, not timed.
    let afterHalfHead = halfHead.readAnswer()
    #expect(afterHalfHead.status == nil && afterHalfHead.closed, "\(afterHalfHead)")
    let afterNothing = silent.readAnswer()
    #expect(afterNothing.status == nil && afterNothing.closed, "\(afterNothing)")
    // So is a connection kept alive after its answer.
    let kept = try hostile.connect()
    kept.send(hostile.head("/healthz", method: "GET", token: nil))
    let first = kept.readAnswer()
    #expect(first.status == 200 && !first.closed, "\(first)")
    #expect(kept.isClosed(), "a kept-alive connection gone silent")
    try hostile.expectStillServing()
  }

  @Test func tenMegabyteBody_Is413AndClosed() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let hostile = HostileRequests(fixture: fixture)
    let declared = try hostile.declaredHugeBody()
    #expect(declared.status == 413 && declared.closed, "announced: \(declared)")
    let chunked = try hostile.chunkedHugeBody()
    #expect(chunked.status == 413 && chunked.closed, "chunked: \(chunked)")
    try hostile.expectStillServing()
  }

  @Test func headerFlood_Is431AndClosed() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let hostile = HostileRequests(fixture: fixture)
    let many = try hostile.manyHeaders()
    #expect(many.status == 431 && many.closed, "2,000 headers: \(many)")
    try hostile.expectOthersServed("after 2,000 headers")
    let huge = try hostile.hugeHeader()
    #expect(huge.status == 431 && huge.closed, "a header of 100 KB: \(huge)")
    try hostile.expectStillServing()
  }

  @Test func smuggling_IsRefusedAndNeverExecuted() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let hostile = HostileRequests(fixture: fixture)
    // What is hidden is a request the gateway carries out when it comes on its own.
    let plain = try hostile.send(hostile.startTrial(subject: "in-the-open"))
    #expect(plain.status == 200, "\(plain)")
    #expect(try hostile.daemonHasTrial(subject: "in-the-open"))

    let hidden = hostile.startTrial(subject: "smuggled")
    let clte = try hostile.contentLengthThenChunked(hiding: hidden)
    #expect(clte.status == 400 && clte.closed, "Content-Length, then Transfer-Encoding: \(clte)")
    let tecl = try hostile.chunkedThenContentLength(hiding: hidden)
    #expect(tecl.status == 400 && tecl.closed, "Transfer-Encoding, then Content-Length: \(tecl)")
    let twice = try hostile.twoContentLengths(hiding: hidden)
    #expect(twice.status == 400 && twice.closed, "two Content-Lengths: \(twice)")
    #expect(try !hostile.daemonHasTrial(subject: "smuggled"), "a smuggled StartTrial was carried out")
    try hostile.expectStillServing()
  }

  @Test func everyAttackInTurn_TheGatewayStillServes() throws {
    try OpenFiles.raiseSoftLimit(to: rlim_t(Self.idleConnections + 256))
    let fixture = try GatewayFixture()
    try fixture.start()
    let hostile = HostileRequests(fixture: fixture)
    var idle: [RawHTTPClient] = []
    for _ in 0..<Self.idleConnections { idle.append(try hostile.connect()) }
    let hidden = hostile.startTrial(subject: "smuggled")
    let answers = [
      try hostile.trickledHead(), try hostile.declaredHugeBody(), try hostile.chunkedHugeBody(),
      try hostile.manyHeaders(), try hostile.hugeHeader(),
      try hostile.contentLengthThenChunked(hiding: hidden),
      try hostile.chunkedThenContentLength(hiding: hidden), try hostile.twoContentLengths(hiding: hidden),
    ]
    #expect(answers.map(\.status) == [200, 413, 413, 431, 431, 400, 400, 400], "\(answers)")
    #expect(try !hostile.daemonHasTrial(subject: "smuggled"))
    try hostile.expectStillServing()
    withExtendedLifetime(idle) {}
  }
}

/// This process's and the gateway's open files.
enum OpenFiles {
  /// Raises this process's soft limit on open files to at least `wanted`, within the hard one.
  static func raiseSoftLimit(to wanted: rlim_t) throws {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw RawHTTPError("getrlimit") }
    guard limit.rlim_cur < wanted else { return }
    try #require(
      limit.rlim_max >= wanted, "the hard limit on open files, \(limit.rlim_max), is below \(wanted)")
    limit.rlim_cur = wanted
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw RawHTTPError("setrlimit") }
  }

  /// The soft and hard limits on open files of process `pid`, from /proc/PID/limits.
  static func limits(of pid: Int32) -> (soft: UInt64, hard: UInt64)? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
      let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") })
    else { return nil }
    let numbers = line.split(separator: " ").compactMap { UInt64($0) }
    return numbers.count >= 2 ? (numbers[0], numbers[1]) : nil
  }

  /// How many files process `pid` has open.
  static func count(of pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
  }
}
