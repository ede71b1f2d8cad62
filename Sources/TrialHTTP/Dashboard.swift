import FoundationEssentials
import Logging
import TrialConfiguration
import TrialControl
import TrialCore

/// The dashboard: pages of the trial programme rendered from the daemon's replies, read with a
/// token kept in a cookie (`HttpOnly`, `SameSite=Strict`) that the login form sets. A page holds
/// nothing of its own: every figure comes from a call to the daemon as the page is asked for.
extension Gateway {
  /// The pages' paths: each answers `GET` (the trial's changes `POST`).
  static func isPage(_ path: String) -> Bool {
    ["/", "/plans", "/cohorts", "/cohorts.csv", "/search", "/logout"].contains(path)
      || path.hasPrefix("/trials/")
  }

  /// A page, or a change posted from one.
  func page(_ request: HTTPRequest) -> HTTPResponse {
    let token: HTTPTokenFile.Token
    switch authenticate(request) {
    case .success(let found): token = found
    case .failure(let refusal):
      guard refusal.response.status == 401, request.method == "GET" || request.method == "HEAD" else {
        return refusal.response.status == 401
          ? PageMarkup.response(401, title: "Log in first", body: Self.loginLink) : refusal.response
      }
      return Self.redirect(PageMarkup.link("/login", [("next", Self.target(of: request))]))
    }
    if request.path == "/logout" {
      guard request.method == "POST" else { return Self.methodNotAllowed("POST") }
      var response = Self.redirect("/login")
      response.headers.append(("Set-Cookie", Self.cookie("", maxAge: 0, request)))
      return response
    }
    if request.method == "POST", request.path.hasPrefix("/trials/") {
      return change(request, token: token)
    }
    guard request.method == "GET" || request.method == "HEAD" else {
      return Self.methodNotAllowed("GET, HEAD")
    }
    let context = PageContext(request: request, token: token, csrf: csrf(for: request))
    do {
      switch request.path {
      case "/": return try overview(context)
      case "/plans": return try plans(context)
      case "/cohorts": return try cohorts(context)
      case "/cohorts.csv": return try cohortsCSV(context)
      case "/search": return try search(context)
      default: return try trial(context)
      }
    } catch {
      return error.response
    }
  }

  /// What a page is made with.
  struct PageContext {
    var request: HTTPRequest
    var token: HTTPTokenFile.Token
    /// The form field a change from this page carries (`csrf`).
    var csrf: String
    var query: [String: String] { request.query }
  }

  /// A page that could not be made: its status and why, in words.
  struct PageFailure: Error {
    var status: Int
    var title: String
    var message: String

    var response: HTTPResponse {
      var body = PageMarkup()
      body.element("p", [("class", "error"), ("id", "page-error")], message)
      return PageMarkup.response(status, title: title, body: body.html)
    }
  }

  // MARK: - Calls

  /// A call of `method` with `parameters`, its reply decoded as `R`; a Varlink error as a
  /// failure with the status `ErrorStatus` gives it.
  func fetch<R: Decodable>(_ method: String, _ parameters: [String: PageParameter] = [:], as: R.Type)
    throws(PageFailure) -> R
  {
    let body = parameters.isEmpty ? [] : ((try? Array(WireCoding.makeEncoder().encode(parameters))) ?? [])
    switch link.call(method, parameters: body) {
    case .reply(let reply):
      do {
        return try WireCoding.makeDecoder().decode(R.self, from: Data(reply))
      } catch {
        throw PageFailure(status: 502, title: "Unexpected reply", message: "\(method) answered: \(error)")
      }
    case .error(let name, let parameters):
      throw PageFailure(
        status: ErrorStatus.of(name), title: Self.errorTitle(name),
        message: Self.errorMessage(name, parameters))
    case .unreachable(let problem):
      throw PageFailure(
        status: 503, title: "Daemon unreachable", message: "the daemon cannot be reached: \(problem)")
    }
  }

  /// `io.trialwatch.TrialNotFound` as "Trial not found".
  static func errorTitle(_ name: String) -> String {
    let last = name.split(separator: ".").last.map(String.init) ?? name
    var words = ""
    for character in last {
      if character.isUppercase, !words.isEmpty {
        words += " " + character.lowercased()
      } else {
        words.append(character)
      }
    }
    return words
  }

  /// An error's parameters in words: `name (parameter: by; problem: …)`, the text values as
  /// they are; the JSON itself when they are not all text or numbers.
  static func errorMessage(_ name: String, _ parameters: [UInt8]) -> String {
    guard let fields = try? JSONDecoder().decode([String: MetricValue].self, from: Data(parameters)) else {
      return "\(name): \(String(decoding: parameters, as: UTF8.self))"
    }
    let words = fields.sorted { $0.key < $1.key }.map { key, value in
      if case .text(let text) = value { return "\(key): \(text)" }
      return "\(key): \(value)"
    }
    return words.isEmpty ? name : "\(name) (\(words.joined(separator: "; ")))"
  }

  // MARK: - Responses

  static func redirect(_ location: String) -> HTTPResponse {
    HTTPResponse(status: 303, headers: [("Location", location), ("Cache-Control", "no-store")])
  }

  static let loginLink = "<p><a href=\"/login\">Log in</a> with a token of the gateway.</p>\n"

  /// The path and query a page was asked for, to come back to after the login.
  static func target(of request: HTTPRequest) -> String {
    PageMarkup.link(request.path, request.query.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
  }

  /// The token's cookie: the secret itself, sent back on the gateway's paths only, never to a
  /// script and never with a request another site starts. `Secure` when a proxy in front says
  /// the request came over HTTPS.
  static func cookie(_ secret: String, maxAge: Int?, _ request: HTTPRequest) -> String {
    var cookie = "\(tokenCookie)=\(secret); Path=/; HttpOnly; SameSite=Strict"
    if let maxAge { cookie += "; Max-Age=\(maxAge)" }
    if request.headers["x-forwarded-proto"]?.lowercased() == "https" { cookie += "; Secure" }
    return cookie
  }

  static let tokenCookie = "trialwatch_token"
}

/// A parameter of a call a page makes, as JSON.
enum PageParameter: Encodable {
  case text(String)
  case integer(Int)
  case flag(Bool)
  case texts([String])

  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .text(let value): try container.encode(value)
    case .integer(let value): try container.encode(value)
    case .flag(let value): try container.encode(value)
    case .texts(let value): try container.encode(value)
    }
  }
}
