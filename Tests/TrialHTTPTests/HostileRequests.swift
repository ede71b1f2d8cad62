import Foundation
import TestSupport
import Testing
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// The requests of hostile clients, each on a connection of its own, and the checks that the
/// gateway goes on answering everyone else and the daemon's control socket is untouched.
struct HostileRequests {
  let fixture: GatewayFixture

  static let getStatus = "/call/io.trialwatch.Trials.GetStatus"
  static let startTrial = "/call/io.trialwatch.Trials.StartTrial"
  /// The bytes of the body a hostile client sends, ten times the gateway's limit.
  static let hugeBody = 10 * 1024 * 1024

  /// A request's line and headers (with its Authorization, when `token`), ended by the empty line.
  func head(_ path: String, method: String = "POST", token: String?, _ headers: [String] = []) -> String {
    var lines = ["\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(fixture.port)"]
    if let token { lines.append("Authorization: Bearer \(token)") }
    return (lines + headers).map { $0 + "\r\n" }.joined() + "\r\n"
  }

  /// A whole StartTrial call for `subject`, framed by its Content-Length: what a smuggler hides.
  func startTrial(subject: String) -> String {
    let body = #"{"subject":"\#(subject)","duration":"3d"}"#
    return head(
      Self.startTrial, token: fixture.changeSecret,
      ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"]) + body
  }

  func connect() throws -> RawHTTPClient { try RawHTTPClient(port: fixture.port) }

  /// `request` sent whole on a new connection (as much as the gateway takes of it), and the answer.
  func send(_ request: String) throws -> RawHTTPClient.Answer {
    let client = try connect()
    client.send(request)
    return client.readAnswer()
  }

  /// `request`, which hides a second, sent whole on a new connection, and the answer. A
  /// connection left open is read on: an answer to the hidden request, if the gateway took it for
  /// one, comes before the end, so that its trial is in the daemon when the test asks.
  func smuggle(_ request: String) throws -> RawHTTPClient.Answer {
    let client = try connect()
    client.send(request)
    let answer = client.readAnswer()
    if !answer.closed { _ = client.readAnswer() }
    return answer
  }

  /// Other clients are served: an authenticated call over HTTP answers 200, /healthz 200, and a
  /// call straight to the daemon's control socket answers.
  func expectOthersServed(_ when: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let status = try fixture.call("io.trialwatch.Trials.GetStatus", token: fixture.readSecret)
    #expect(
      status.status == 200 && status.has("trials"), "\(when): \(status)", sourceLocation: sourceLocation)
    let health = try fixture.request("/healthz", token: nil)
    #expect(health.status == 200, "\(when): \(health)", sourceLocation: sourceLocation)
    let client = try VarlinkClient(path: fixture.daemon.socketPath, timeout: patience)
    #expect(
      throws: Never.self, "\(when): the control socket", sourceLocation: sourceLocation
    ) { _ = try client.call(Trials.getStatus) }
  }

  /// The gateway's process runs still, and says it is healthy.
  func expectStillServing(sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(
      fixture.gateway?.status == nil, "the gateway ended: \(fixture.standardError)",
      sourceLocation: sourceLocation)
    try expectOthersServed("at the end", sourceLocation: sourceLocation)
  }

  // MARK: - The attacks

  /// A body of 10 MB announced by its Content-Length, the head sent alone: the gateway answers
  /// at the head, before any of the body, while another client is served meanwhile.
  func declaredHugeBody() throws -> RawHTTPClient.Answer {
    let client = try connect()
    client.send(
      head(
        Self.getStatus, token: fixture.readSecret,
        ["Content-Type: application/json", "Content-Length: \(Self.hugeBody)"]))
    try expectOthersServed("a 10 MB body announced")
    return client.readAnswer()
  }

  /// A body of 10 MB in chunks, no length announced: the gateway learns of it as it comes. Half is
  /// sent, another client is served, then the rest.
  func chunkedHugeBody() throws -> RawHTTPClient.Answer {
    let client = try connect()
    client.send(
      head(
        Self.getStatus, token: fixture.readSecret,
        ["Content-Type: application/json", "Transfer-Encoding: chunked"]))
    let chunk =
      Array(String(format: "%x\r\n", 64 * 1024).utf8) + [UInt8](repeating: 0x20, count: 64 * 1024)
      + Array("\r\n".utf8)
    let chunks = Self.hugeBody / (64 * 1024)
    var taken = true
    for index in 0..<chunks where taken {
      taken = client.send(chunk)
      if index == chunks / 2 { try expectOthersServed("half of a 10 MB body sent") }
    }
    if taken { client.send("0\r\n\r\n") }
    return client.readAnswer()
  }

  /// 2,000 header lines of 20 bytes or so: 40 KB of head.
  func manyHeaders() throws -> RawHTTPClient.Answer {
    let flood = (0..<2000).map { "X-Flood-\($0): \($0)" }
    return try send(head(Self.getStatus, method: "GET", token: fixture.readSecret, flood))
  }

  /// One header line of 100 KB.
  func hugeHeader() throws -> RawHTTPClient.Answer {
    let value = String(repeating: "a", count: 100 * 1024)
    return try send(head("/healthz", method: "GET", token: nil, ["X-Huge: \(value)"]))
  }

  /// A head trickled a byte at a time, its first half before another client is served and its
  /// second after; the answer to it.
  func trickledHead() throws -> RawHTTPClient.Answer {
    let client = try connect()
    let bytes =
      Array(head(Self.getStatus, token: fixture.readSecret, ["Content-Length: 2"]).utf8)
      + Array("{}".utf8)
    for byte in bytes.prefix(bytes.count / 2) { client.send([byte]) }
    try expectOthersServed("half a head trickled")
    for byte in bytes.dropFirst(bytes.count / 2) { client.send([byte]) }
    return client.readAnswer()
  }

  /// CL.TE: the chunked body ends at once, the Content-Length covers a StartTrial behind it.
  func contentLengthThenChunked(hiding hidden: String) throws -> RawHTTPClient.Answer {
    let body = "0\r\n\r\n" + hidden
    return try smuggle(
      head(
        Self.getStatus, token: fixture.readSecret,
        ["Content-Length: \(body.utf8.count)", "Transfer-Encoding: chunked"]) + body)
  }

  /// TE.CL: the Content-Length ends the body at once, the chunk carries a StartTrial.
  func chunkedThenContentLength(hiding hidden: String) throws -> RawHTTPClient.Answer {
    let body = String(format: "%x\r\n", hidden.utf8.count) + hidden + "\r\n0\r\n\r\n"
    return try smuggle(
      head(Self.getStatus, token: fixture.readSecret, ["Transfer-Encoding: chunked", "Content-Length: 4"])
        + body)
  }

  /// Two Content-Lengths: the first ends the body after `{}`, the second covers a StartTrial.
  func twoContentLengths(hiding hidden: String) throws -> RawHTTPClient.Answer {
    let body = "{}" + hidden
    return try smuggle(
      head(
        Self.getStatus, token: fixture.readSecret,
        ["Content-Type: application/json", "Content-Length: 2", "Content-Length: \(body.utf8.count)"]) + body)
  }

  /// Whether the daemon has a trial for `subject`, asked on its control socket.
  func daemonHasTrial(subject: String) throws -> Bool {
    let client = try VarlinkClient(path: fixture.daemon.socketPath, timeout: patience)
    do {
      _ = try client.call(Trials.getTrial, GetTrialParameters(subject: subject))
      return true
    } catch  where error.remoteError?.name == "io.trialwatch.TrialNotFound" {
      return false
    }
  }
}
