import FoundationEssentials
import TrialConfiguration
import TrialCore
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// The HTTP gateway's token file as `http token` finds it and writes it again, replaced whole
/// (`FileReplacement`). A token added is a line after the file's others; a token removed is its
/// line taken out: the other lines, comments and blank ones included, stay as they are. A new
/// file starts with `HTTPTokenFile.text`'s heading.
enum HTTPTokenFileWriter {
  /// The group a new token file is given when it exists: the gateway's, which reads the file
  /// (`trialwatch-http.service`).
  static let gatewayGroup = "trialwatch-http"
  /// The mode of the file's directory when it has to be made.
  static let directoryMode: mode_t = 0o755
  /// The random bytes of a new secret.
  static let secretBytes = 32
  static let file = FileReplacement(kind: "token file")

  /// A token file as found.
  struct Found {
    /// As given (`--tokens`), for messages.
    var path: String
    /// The file itself, a symbolic link followed, and its ownership; nil when there is no file.
    var existing: FileReplacement.Existing?
    var text: String
    var tokens: [HTTPTokenFile.Token]

    /// The token named `name`, if there is one.
    func token(named name: String) -> HTTPTokenFile.Token? {
      tokens.first { $0.name == name }
    }
  }

  /// The file at `path` and its tokens; none when there is no file. A file that cannot be read
  /// as tokens is a failure naming it and the line.
  static func find(_ path: String) throws(CtlFailure) -> Found {
    guard let existing = try file.find(path) else { return Found(path: path, text: "", tokens: []) }
    let bytes: [UInt8]
    switch readFile(path) {
    case .success(let read): bytes = read
    case .failure(let error):
      throw CtlFailure("cannot read the token file \(path): \(error)", exitCode: .failure)
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw FileReplacement.unreadable("\(path): not valid UTF-8 text")
    }
    do {
      return Found(
        path: path, existing: existing, text: text, tokens: try HTTPTokenFile.tokens(in: text, file: path))
    } catch {
      throw FileReplacement.unreadable(error.description)
    }
  }

  /// Writes `found`'s file again with `text`: under its own ownership, or as a new file (and
  /// directory). Returns the ownership of a new file and its group's name, nil for a file that
  /// was there.
  @discardableResult
  static func write(_ text: String, over found: Found) throws(CtlFailure) -> (
    FileReplacement.Ownership, groupName: String?
  )? {
    if let existing = found.existing {
      try file.write(text, to: existing.path, ownership: existing.ownership)
      return nil
    }
    let new = FileReplacement.newFileOwnership(group: gatewayGroup)
    try file.write(text, to: found.path, ownership: new.0, directoryMode: directoryMode)
    return new
  }

  /// The file's text with `token` added: its line after the others, or the heading and the line
  /// for a file that holds nothing yet.
  static func adding(_ token: HTTPTokenFile.Token, to found: Found) -> String {
    if found.tokens.isEmpty && found.text.trimmingWhitespace().isEmpty { return HTTPTokenFile.text([token]) }
    let text = found.text
    return text + (text.isEmpty || text.hasSuffix("\n") ? "" : "\n") + token.line + "\n"
  }

  /// The file's text without the line of the token named `name` (a file read without a problem:
  /// every line that is not blank or a comment is a token's).
  static func removing(_ name: String, from found: Found) -> String {
    var lines = found.text.split(
      omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    lines.removeAll { line in
      let trimmed = line.trimmingWhitespace()
      return !trimmed.hasPrefix("#")
        && trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) == name
    }
    return lines.joined(separator: "\n")
  }

  /// A new secret and its token: `twh_` and the base64url, without padding, of `secretBytes`
  /// random bytes from libcrypto (43 characters); the token holds the SHA-256 of the whole text.
  static func newSecret(name: String, scope: HTTPTokenFile.Scope) throws(CtlFailure) -> (
    secret: String, token: HTTPTokenFile.Token
  ) {
    do {
      let crypto = try Crypto.shared()
      let secret = HTTPTokenFile.secretPrefix + base64URL(try crypto.randomBytes(secretBytes))
      return (secret, HTTPTokenFile.Token(name: name, scope: scope, hash: crypto.sha256(Array(secret.utf8))))
    } catch {
      throw CtlFailure("cannot make a new secret: \(error.description)", exitCode: .failure)
    }
  }

  /// `bytes` in base64url (RFC 4648, section 5), without padding.
  static func base64URL(_ bytes: [UInt8]) -> String {
    String(
      Data(bytes).base64EncodedString().compactMap { character -> Character? in
        switch character {
        case "+": "-"
        case "/": "_"
        case "=": nil
        default: character
        }
      })
  }
}
