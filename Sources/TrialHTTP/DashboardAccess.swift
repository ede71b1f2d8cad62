import Logging
import TrialConfiguration
import TrialControl

/// The dashboard's login, and the changes its pages post: end, extend, pause or resume a trial, or
/// cancel it at its end and take that back.
/// A change needs a change token and a form the gateway wrote: its `csrf` field is derived from
/// the token's secret (SHA-256 of a fixed prefix and the secret), which a page of another site
/// cannot read, and a request whose `Origin` is not the gateway's own is refused as well.
extension Gateway {
  // MARK: - Login

  /// `GET /login`: the form; `POST /login`: the token checked, kept as a cookie, and the page
  /// asked for before.
  func login(_ request: HTTPRequest) -> HTTPResponse {
    switch request.method {
    case "GET", "HEAD":
      return Self.loginPage(next: request.query["next"], error: nil, status: 200)
    case "POST":
      guard let form = FormData.decode(request.body) else {
        return Self.loginPage(next: nil, error: "the form could not be read", status: 400)
      }
      let secret = (form["token"] ?? "").trimmingWhitespace()
      let next = Self.safeNext(form["next"])
      guard !secret.isEmpty else {
        return Self.loginPage(next: next, error: "give a token", status: 401)
      }
      guard secret.unicodeScalars.allSatisfy(Self.isCookieCharacter) else {
        return Self.loginPage(next: next, error: "the token is not known", status: 401)
      }
      switch tokens.verdict(String(secret)) {
      case .token(let token):
        logger.info(
          "logged in to the dashboard", metadata: ["token": "\(token.name)", "peer": "\(request.peer)"])
        var response = Self.redirect(next ?? "/")
        response.headers.append(("Set-Cookie", Self.cookie(String(secret), maxAge: nil, request)))
        return response
      case .unknown:
        logger.warning("refused a login with an unknown token", metadata: ["peer": "\(request.peer)"])
        return Self.loginPage(next: next, error: "the token is not known", status: 401)
      case .unusable(let problem):
        logger.error("the token file cannot be used", metadata: ["problem": "\(problem)"])
        return Self.loginPage(next: next, error: "the gateway's token file cannot be used", status: 503)
      }
    default:
      return Self.methodNotAllowed("GET, HEAD, POST")
    }
  }

  private static func loginPage(next: String?, error: String?, status: Int) -> HTTPResponse {
    var body = PageMarkup()
    if let error { body.element("p", [("class", "error"), ("id", "login-error")], error) }
    body.raw("<form id=\"login\" method=\"post\" action=\"/login\">\n")
    body.raw("<label for=\"token\">Token</label>\n")
    body.raw(
      "<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required>\n")
    body.raw("<input type=\"hidden\" name=\"next\" value=\"\(MarkupText.escaped(safeNext(next) ?? "/"))\">\n")
    body.raw("<button type=\"submit\">Log in</button>\n</form>\n")
    body.raw(
      "<p class=\"note\">A token of the gateway: <code>trialwatchctl http token add NAME --scope read</code>")
    body.raw(" prints a new one.</p>\n")
    return PageMarkup.response(status, title: "Log in", body: body.html, navigation: false)
  }

  /// `next` when it is a path of this gateway (so that a login cannot send its user elsewhere).
  static func safeNext(_ next: String?) -> String? {
    guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
      next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
    else { return nil }
    return next
  }

  /// A character a cookie's value may hold as it is (RFC 6265, cookie-octet).
  static func isCookieCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value > 0x20 && scalar.value < 0x7F && !"\",;\\".unicodeScalars.contains(scalar)
  }

  // MARK: - Cross-site requests

  /// The `csrf` field of the forms of a page asked for by `request`: empty without a cookie (a
  /// client with a bearer token posts no form).
  func csrf(for request: HTTPRequest) -> String {
    guard let secret = request.cookies[Self.tokenCookie] else { return "" }
    return HTTPTokenFile.hex(tokens.crypto.sha256(Array("trialwatch-csrf\0".utf8) + Array(secret.utf8)))
  }

  /// Why a posted change is refused as coming from elsewhere, or nil.
  func crossSiteProblem(_ request: HTTPRequest, form: [String: String]) -> String? {
    if let origin = request.headers["origin"] {
      // The host of the origin (scheme://host[:port]) is the gateway's, as the request names
      // it, or as a proxy in front says the client named it.
      let host = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(
        String.init)
      let own = [request.headers["host"], request.headers["x-forwarded-host"]].compactMap { $0 }
      guard origin != "null", let host, own.contains(host) else { return "the request came from \(origin)" }
    }
    let expected = csrf(for: request)
    guard !expected.isEmpty, let given = form["csrf"],
      tokens.crypto.equalInConstantTime(Array(given.utf8), Array(expected.utf8))
    else { return "the form did not come from this gateway (its csrf field is missing or wrong)" }
    return nil
  }

  // MARK: - Changes

  /// `POST /trials/ID/end|extend|pause|resume|cancel|uncancel`: the change made (`cancel`: at
  /// the end), the trial's page again.
  func change(_ request: HTTPRequest, token: HTTPTokenFile.Token) -> HTTPResponse {
    let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[1] == "trials" else {
      return Self.problem(404, "io.trialwatch.http.NotFound", "no such path: \(request.path)")
    }
    let id = String(parts[2])
    guard let form = FormData.decode(request.body) else {
      return PageFailure(status: 400, title: "Bad form", message: "the form could not be read").response
    }
    if let problem = crossSiteProblem(request, form: form) {
      logger.warning(
        "refused a change from a page",
        metadata: ["token": "\(token.name)", "peer": "\(request.peer)", "why": "\(problem)"])
      return PageFailure(status: 403, title: "Refused", message: problem).response
    }
    var parameters: [String: PageParameter] = ["id": .text(id)]
    let method: String
    switch parts[3] {
    case "end":
      method = Trials.endTrial.qualifiedName
      parameters["outcome"] = .text(form["outcome"] ?? "")
    case "extend":
      method = Trials.extendTrial.qualifiedName
      parameters["by"] = .text((form["by"] ?? "").trimmingWhitespace().description)
    case "pause": method = Trials.pauseTrial.qualifiedName
    case "resume": method = Trials.resumeTrial.qualifiedName
    case "cancel":
      method = Trials.cancelTrial.qualifiedName
      parameters["atEnd"] = .flag(true)
    case "uncancel": method = Trials.uncancelTrial.qualifiedName
    default: return Self.problem(404, "io.trialwatch.http.NotFound", "no such change: \(parts[3])")
    }
    guard Self.allows(token, .change) else {
      logger.warning(
        "refused a change to a read token",
        metadata: ["token": "\(token.name)", "method": "\(method)", "peer": "\(request.peer)"])
      return PageFailure(
        status: 403, title: "Refused",
        message: "token \"\(token.name)\" may only read; changes need a change token"
      ).response
    }
    let response: HTTPResponse
    do {
      _ = try fetch(method, parameters, as: TrialReply.self)
      response = Self.redirect("/trials/\(FormData.encode(id))")
    } catch {
      response = error.response
    }
    logger.notice(
      "change called",
      metadata: [
        "token": "\(token.name)", "method": "\(method)", "peer": "\(request.peer)",
        "status": "\(response.status)",
        "from": "dashboard",
      ])
    return response
  }
}
