import TrialCore

/// One HTTP request as the gateway's handlers see it: read whole (the body too) before they run.
public struct HTTPRequest: Sendable {
  public var method: String
  /// The path, without its query.
  public var path: String
  /// The arguments of the query, decoded.
  public var query: [String: String]
  /// The headers, by their names in lower case (the last of repeated ones).
  public var headers: [String: String]
  /// The cookies of the `Cookie` header.
  public var cookies: [String: String]
  public var body: [UInt8]
  /// The peer's address, numeric (`127.0.0.1:40312`), or "unknown".
  public var peer: String
  /// The connection's socket, for a handler that streams to notice the client going away; -1
  /// when there is none.
  public var socket: Int32 = -1

  public init(
    method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
    cookies: [String: String] = [:], body: [UInt8] = [], peer: String = "unknown"
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.cookies = cookies
    self.body = body
    self.peer = peer
  }
}

/// A body whose parts come as they are made (a Watch's events): `next()` blocks until there is
/// a part, and returns nil at the end. `close()` is called once, when the response is done
/// (finished, or its client gone).
public protocol HTTPBodyStream: AnyObject, Sendable {
  func next() -> [UInt8]?
  func close()
}

/// One HTTP response.
public struct HTTPResponse: Sendable {
  public enum Body: Sendable {
    case bytes([UInt8])
    case stream(any HTTPBodyStream)
  }

  public var status: Int
  public var headers: [(name: String, value: String)]
  public var body: Body

  public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .bytes([])) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// A response of `text` with its type.
  public static func text(_ status: Int, _ text: String, type: String = "text/plain; charset=utf-8") -> Self {
    HTTPResponse(status: status, headers: [("Content-Type", type)], body: .bytes(Array(text.utf8)))
  }

  /// A JSON response of `json`, already encoded.
  public static func json(_ status: Int, _ json: [UInt8]) -> Self {
    HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(json))
  }

  /// The value of header `name` (case ignored), or nil.
  public func header(_ name: String) -> String? {
    let wanted = name.lowercased()
    return headers.last { $0.name.lowercased() == wanted }?.value
  }
}

/// The `Cookie` header's pairs (`a=1; b=2`).
func parseCookies(_ header: String) -> [String: String] {
  var cookies: [String: String] = [:]
  for pair in header.split(separator: ";") {
    guard let equals = pair.firstIndex(of: "=") else { continue }
    let name = pair[..<equals].trimmingWhitespace()
    guard !name.isEmpty else { continue }
    cookies[String(name)] = String(pair[pair.index(after: equals)...].trimmingWhitespace())
  }
  return cookies
}
