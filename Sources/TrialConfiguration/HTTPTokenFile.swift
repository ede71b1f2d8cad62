import Glibc
import TrialCore

/// The HTTP gateway's access tokens, `/etc/trialwatch/http/tokens`: one a line,
/// `NAME SCOPE sha256:HEX` — the token's name (journaled with every change it makes), its scope
/// (`read`: only calls that change nothing; `change`: any), and the SHA-256 of its secret in hex.
/// The secrets themselves are nowhere on the host: `trialwatchctl http token add` prints a new
/// one once. Blank lines and lines starting with `#` are ignored. A problem names the file and
/// the line, never a line's hash.
public enum HTTPTokenFile {
  /// The default path.
  public static let defaultPath = "/etc/trialwatch/http/tokens"
  /// What a secret starts with, so that one found in a log or a repository is recognised.
  public static let secretPrefix = "twh_"

  /// What a token may do.
  public enum Scope: String, CaseIterable, Hashable, Sendable {
    case read
    case change
  }

  /// One line of the file.
  public struct Token: Hashable, Sendable {
    public var name: String
    public var scope: Scope
    /// The SHA-256 of the secret: 32 bytes.
    public var hash: [UInt8]

    public init(name: String, scope: Scope, hash: [UInt8]) {
      self.name = name
      self.scope = scope
      self.hash = hash
    }

    /// The line that stands for it in the file.
    public var line: String {
      "\(name) \(scope.rawValue) sha256:\(HTTPTokenFile.hex(hash))"
    }
  }

  /// `bytes` as lower-case hexadecimal digits, two a byte.
  public static func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  /// Why a token file cannot be used: the file and, for a line that is not a token, the line
  /// (as a webhook secret file's problems say it).
  public typealias Problem = WebhookSecretFile.Problem

  /// The tokens of the file at `path`; none when there is no file.
  public static func read(_ path: String) throws(Problem) -> [Token] {
    switch readFile(path) {
    case .success(let bytes):
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw Problem(file: path, line: nil, reason: "not valid UTF-8 text")
      }
      return try tokens(in: text, file: path)
    case .failure(let error):
      if error.code == ENOENT { return [] }
      throw Problem(file: path, line: nil, reason: "cannot read: \(error)")
    }
  }

  /// The tokens `text`, the content of `file`, holds.
  public static func tokens(in text: String, file: String) throws(Problem) -> [Token] {
    var tokens: [Token] = []
    let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    for (index, line) in lines.enumerated() {
      let trimmed = line.trimmingWhitespace()
      guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
      func problem(_ reason: String) -> Problem { Problem(file: file, line: index + 1, reason: reason) }
      let fields = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count == 3 else {
        throw problem("expected three fields, NAME SCOPE sha256:HEX; found \(fields.count)")
      }
      if let reason = nameProblem(String(fields[0])) { throw problem(reason) }
      guard let scope = Scope(rawValue: String(fields[1])) else {
        throw problem("the scope is read or change, not \"\(fields[1])\"")
      }
      guard let hash = hashBytes(fields[2]) else {
        throw problem("the third field is sha256: and 64 hexadecimal digits")
      }
      guard !tokens.contains(where: { $0.name == fields[0] }) else {
        throw problem("a second token named \"\(fields[0])\"")
      }
      tokens.append(Token(name: String(fields[0]), scope: scope, hash: hash))
    }
    return tokens
  }

  /// What is wrong with `name` as a token's name, or nil: 1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `-`.
  public static func nameProblem(_ name: String) -> String? {
    guard (1...64).contains(name.utf8.count) else { return "a token's name has 1 to 64 characters" }
    let allowed = name.utf8.allSatisfy { byte in
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
        || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
    return allowed ? nil : "a token's name \"\(name)\" may hold only A-Z, a-z, 0-9, '.', '_' and '-'"
  }

  /// The file's text for `tokens`, with a heading that says what it is.
  public static func text(_ tokens: [Token]) -> String {
    var text = """
      # The HTTP gateway's access tokens (trialwatch-http(8)): NAME SCOPE sha256:HEX, one a line.
      # Written by trialwatchctl http token; the secrets are not kept here, only their SHA-256.

      """
    for token in tokens { text += token.line + "\n" }
    return text
  }

  private static func hashBytes(_ field: Substring) -> [UInt8]? {
    guard field.hasPrefix("sha256:") else { return nil }
    let hex = Array(field.dropFirst("sha256:".count).utf8)
    guard hex.count == 64 else { return nil }
    var bytes: [UInt8] = []
    for index in stride(from: 0, to: 64, by: 2) {
      guard let high = hexValue(hex[index]), let low = hexValue(hex[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
    }
    return bytes
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
