import Glibc
import Logging
import TrialConfiguration
import TrialControl

/// The gateway's answers: the daemon's Varlink methods as `POST /call/METHOD` (the protocol of
/// systemd's varlink-httpd), `GET /interface`, `GET /metrics` in Prometheus's text format, and
/// `GET /healthz`, and the dashboard's pages (`Dashboard.swift`). It holds no state: every
/// answer comes from the daemon.
public final class Gateway: Sendable {
  let link: DaemonLink
  let tokens: TokenCheck
  let logger: Logger

  /// The media type of a stream of JSON texts (RFC 7464): each record is RS, the text, LF.
  static let jsonSequence = "application/json-seq"

  init(link: DaemonLink, tokens: TokenCheck, logger: Logger) {
    self.link = link
    self.tokens = tokens
    self.logger = logger
  }

  /// The answer to `request`.
  public func respond(_ request: HTTPRequest) -> HTTPResponse {
    if request.path == "/healthz" { return healthz(request) }
    if request.path == "/style.css" { return Self.style() }
    if request.path == "/login" { return login(request) }
    if Self.isPage(request.path) { return page(request) }
    let token: HTTPTokenFile.Token
    switch authenticate(request) {
    case .success(let found): token = found
    case .failure(let refusal): return refusal.response
    }
    if request.path.hasPrefix("/call/") {
      guard request.method == "POST" else { return Self.methodNotAllowed("POST") }
      return call(String(request.path.dropFirst("/call/".count)), request, token: token)
    }
    switch request.path {
    case "/interface":
      guard request.method == "GET" || request.method == "HEAD" else {
        return Self.methodNotAllowed("GET, HEAD")
      }
      return interface(request)
    case "/metrics":
      guard request.method == "GET" || request.method == "HEAD" else {
        return Self.methodNotAllowed("GET, HEAD")
      }
      return metrics()
    default:
      return Self.problem(404, "io.trialwatch.http.NotFound", "no such path: \(request.path)")
    }
  }

  // MARK: - Access

  /// A request refused before it reaches the daemon.
  struct Refusal: Error {
    var response: HTTPResponse
  }

  /// The token of the request's `Authorization: Bearer` header (or its `trialwatch_token`
  /// cookie), or why there is none.
  func authenticate(_ request: HTTPRequest) -> Result<HTTPTokenFile.Token, Refusal> {
    let secret: String
    if let authorization = request.headers["authorization"] {
      guard authorization.lowercased().hasPrefix("bearer ") else {
        return .failure(Refusal(response: Self.unauthorized("the Authorization header is not Bearer TOKEN")))
      }
      secret = String(authorization.dropFirst("bearer ".count).trimmingWhitespace())
    } else if let cookie = request.cookies["trialwatch_token"] {
      secret = cookie
    } else {
      return .failure(Refusal(response: Self.unauthorized("a token is needed: Authorization: Bearer TOKEN")))
    }
    switch tokens.verdict(secret) {
    case .token(let token): return .success(token)
    case .unknown:
      logger.warning("refused a request with an unknown token", metadata: ["peer": "\(request.peer)"])
      return .failure(Refusal(response: Self.unauthorized("the token is not known")))
    case .unusable(let problem):
      logger.error("the token file cannot be used", metadata: ["problem": "\(problem)"])
      return .failure(
        Refusal(
          response: Self.problem(
            503, "io.trialwatch.http.TokensUnusable", "the gateway's token file cannot be used")))
    }
  }

  /// Whether `token` may call a method of `kind`: a read token, only methods that change nothing.
  static func allows(_ token: HTTPTokenFile.Token, _ kind: MethodKind) -> Bool {
    token.scope == .change || !kind.needsChangeRights
  }

  /// Methods HTTP never passes on: the webhooks' sender's own.
  static let reserved: Set<String> = [
    Trials.serveWebhooks.qualifiedName, Trials.reportWebhooks.qualifiedName,
  ]

  // MARK: - Answers

  private func healthz(_ request: HTTPRequest) -> HTTPResponse {
    switch link.call(VarlinkService.getInfo.qualifiedName, parameters: []) {
    case .reply: return .text(200, "ok\n")
    case .error(let name, _): return .text(503, "the daemon answered \(name)\n")
    case .unreachable(let problem): return .text(503, "the daemon cannot be reached: \(problem)\n")
    }
  }

  private func interface(_ request: HTTPRequest) -> HTTPResponse {
    let name = request.query["name"] ?? Trials.interface
    let parameters = Array(#"{"interface":"#.utf8) + JSONText.string(name) + [UInt8(ascii: "}")]
    switch link.call(VarlinkService.getInterfaceDescription.qualifiedName, parameters: parameters) {
    case .reply(let reply):
      guard let members = JSONSyntax.members(of: reply), let range = members["description"],
        let text = JSONText.decodeString(Array(reply[range]))
      else {
        return Self.problem(502, "io.trialwatch.http.BadReply", "the daemon's reply has no description")
      }
      return .text(200, text, type: "text/plain; charset=utf-8")
    case .error(let name, let parameters): return Self.errorResponse(name, parameters)
    case .unreachable(let problem): return Self.unreachable(problem)
    }
  }

  // MARK: - Responses

  static func unauthorized(_ why: String) -> HTTPResponse {
    var response = problem(401, "io.trialwatch.http.Unauthorized", why)
    response.headers.append(("WWW-Authenticate", #"Bearer realm="trialwatch""#))
    return response
  }

  static func methodNotAllowed(_ allowed: String) -> HTTPResponse {
    var response = problem(405, "io.trialwatch.http.MethodNotAllowed", "the path takes \(allowed)")
    response.headers.append(("Allow", allowed))
    return response
  }

  static func unreachable(_ problem: String) -> HTTPResponse {
    Self.problem(503, "io.trialwatch.http.DaemonUnreachable", "the daemon cannot be reached: \(problem)")
  }

  /// An error of the gateway's own, in the form of the daemon's: `{"error":..,"parameters":{"message":..}}`.
  static func problem(_ status: Int, _ name: String, _ message: String) -> HTTPResponse {
    errorResponse(
      name, Array(#"{"message":"#.utf8) + JSONText.string(message) + [UInt8(ascii: "}")], status: status)
  }

  /// A Varlink error as an HTTP response: its status (`ErrorStatus`), its name and parameters.
  static func errorResponse(_ name: String, _ parameters: [UInt8], status: Int? = nil) -> HTTPResponse {
    .json(status ?? ErrorStatus.of(name), errorBody(name, parameters))
  }

  static func errorBody(_ name: String, _ parameters: [UInt8]) -> [UInt8] {
    Array(#"{"error":"#.utf8) + JSONText.string(name) + Array(#","parameters":"#.utf8) + parameters
      + Array("}\n".utf8)
  }
}
