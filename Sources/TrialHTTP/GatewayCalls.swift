import FoundationEssentials
import Glibc
import Logging
import TrialConfiguration
import TrialControl

extension Gateway {
  /// `POST /call/METHOD`: the body is the call's parameters (empty for none), the answer the
  /// reply's parameters; a method that streams answers with a JSON text sequence, one record per
  /// reply. The token's scope decides what may be called; every change is journaled with the
  /// token's name.
  func call(_ method: String, _ request: HTTPRequest, token: HTTPTokenFile.Token) -> HTTPResponse {
    guard let kind = VarlinkInterfaces.methodKinds[method], !Self.reserved.contains(method) else {
      return Self.errorResponse(
        ControlError.Name.methodNotFound,
        Array(#"{"method":"#.utf8) + JSONText.string(method) + [UInt8(ascii: "}")])
    }
    guard Self.allows(token, kind) else {
      logger.warning(
        "refused a change to a read token",
        metadata: ["token": "\(token.name)", "method": "\(method)", "peer": "\(request.peer)"])
      return Self.problem(
        403, "io.trialwatch.http.Forbidden",
        "token \"\(token.name)\" may only read; \(method) needs a change token")
    }
    let parameters =
      request.body.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D } ? [] : request.body
    if !parameters.isEmpty, JSONSyntax.members(of: parameters) == nil {
      let problem = JSONSyntax.problem(in: parameters) ?? "the body is not a JSON object"
      return Self.errorResponse(
        ControlError.Name.invalidMessage,
        Array(#"{"problem":"#.utf8) + JSONText.string("the body: \(problem)") + [UInt8(ascii: "}")])
    }
    let response =
      kind.streams || kind == .replies
      ? stream(method, parameters, clientSocket: request.socket) : single(method, parameters)
    if kind.needsChangeRights {
      logger.notice(
        "change called",
        metadata: [
          "token": "\(token.name)", "method": "\(method)", "peer": "\(request.peer)",
          "status": "\(response.status)",
        ])
    }
    return response
  }

  private func single(_ method: String, _ parameters: [UInt8]) -> HTTPResponse {
    switch link.call(method, parameters: parameters) {
    case .reply(let reply): return .json(200, reply + [UInt8(ascii: "\n")])
    case .error(let name, let parameters): return Self.errorResponse(name, parameters)
    case .unreachable(let problem): return Self.unreachable(problem)
    }
  }

  /// The first reply decides the status (an error is answered as a single call's); from there
  /// each reply is a record of the sequence, an error too, which ends it.
  private func stream(_ method: String, _ parameters: [UInt8], clientSocket: Int32) -> HTTPResponse {
    let replies: DaemonLink.Replies
    switch link.stream(method, parameters: parameters) {
    case .success(let opened): replies = opened
    case .failure(let error): return Self.unreachable(error.description)
    }
    let first = replies.next(stop: nil)
    guard case .reply(let outcome, let more) = first else {
      return Self.unreachable("the stream ended at once")
    }
    switch outcome {
    case .error(let name, let parameters): return Self.errorResponse(name, parameters)
    case .unreachable(let problem): return Self.unreachable(problem)
    case .reply(let reply):
      let body = ReplySequence(
        first: Self.record(reply), replies: more ? replies : nil, clientSocket: clientSocket)
      return HTTPResponse(
        status: 200, headers: [("Content-Type", Self.jsonSequence), ("Cache-Control", "no-store")],
        body: .stream(body))
    }
  }

  /// One record of a JSON text sequence.
  static func record(_ json: [UInt8]) -> [UInt8] { [0x1E] + json + [0x0A] }

  /// `GET /metrics`: the daemon's metrics in Prometheus's text format, as
  /// `trialwatchctl metrics --prometheus` writes them.
  func metrics() -> HTTPResponse {
    do {
      let families = try collect(SystemdMetrics.describe)
      let metrics = try collect(SystemdMetrics.list)
      return .text(
        200, PrometheusText.render(families: families, metrics: metrics),
        type: "text/plain; version=0.0.4; charset=utf-8")
    } catch let refusal as Refusal {
      return refusal.response
    } catch {
      return Self.problem(
        502, "io.trialwatch.http.BadReply", "the daemon's metrics could not be read: \(error)")
    }
  }

  func collect<R: Decodable>(_ method: VarlinkMethod<MetricsParameters, R>) throws -> [R] {
    let replies: DaemonLink.Replies
    switch link.stream(method.qualifiedName, parameters: []) {
    case .success(let opened): replies = opened
    case .failure(let error): throw Refusal(response: Self.unreachable(error.description))
    }
    var all: [R] = []
    let decoder = WireCoding.makeDecoder()
    while case .reply(let outcome, let more) = replies.next(stop: nil) {
      switch outcome {
      case .reply(let reply): all.append(try decoder.decode(R.self, from: Data(reply)))
      case .error(let name, let parameters): throw Refusal(response: Self.errorResponse(name, parameters))
      case .unreachable(let problem): throw Refusal(response: Self.unreachable(problem))
      }
      if !more { break }
    }
    return all
  }
}

/// A stream's replies as the records of a JSON text sequence, read as the HTTP client reads them.
/// The wait for the next reply ends when the client goes away (its socket reads end of file).
final class ReplySequence: HTTPBodyStream, @unchecked Sendable {
  // @unchecked: read by the one thread of its HTTP connection.
  private var first: [UInt8]?
  private let replies: DaemonLink.Replies?
  private let clientSocket: Int32

  init(first: [UInt8], replies: DaemonLink.Replies?, clientSocket: Int32) {
    self.first = first
    self.replies = replies
    self.clientSocket = clientSocket
  }

  func next() -> [UInt8]? {
    if let record = first {
      first = nil
      return record
    }
    guard let replies else { return nil }
    var stop: Int32? = clientSocket >= 0 ? clientSocket : nil
    while true {
      switch replies.next(stop: stop) {
      case .end: return nil
      case .interrupted:
        if clientClosed() { return nil }
        // Bytes from the client (a pipelined request): the next reply is waited for alone.
        stop = nil
      case .reply(let outcome, _):
        switch outcome {
        case .reply(let reply): return Gateway.record(reply)
        case .error(let name, let parameters):
          return Gateway.record(Array(Gateway.errorBody(name, parameters).dropLast()))
        case .unreachable(let problem):
          let parameters = Array(#"{"message":"#.utf8) + JSONText.string(problem) + [UInt8(ascii: "}")]
          return Gateway.record(
            Array(Gateway.errorBody("io.trialwatch.http.DaemonUnreachable", parameters).dropLast()))
        }
      }
    }
  }

  /// Whether the client's socket reads end of file (or fails).
  private func clientClosed() -> Bool {
    var byte: UInt8 = 0
    let peeked = recv(clientSocket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
    return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
  }

  func close() { replies?.finish() }
}
