import Glibc
import TrialCore

/// A webhook endpoint's `SecretFile=`: its signing secrets, one a line (`whsec_` and base64, as
/// `WebhookSecret` reads one), two while one is rotated. Blank lines and lines starting with `#`
/// are ignored, as is the space around a secret. Read by `--check-config` and by the sender of
/// webhooks; a problem names the file and, for a line that is not a secret, the line, never
/// what the line holds.
public enum WebhookSecretFile {
  /// At most two secrets: the new and the old while one is rotated.
  public static let maximumSecrets = 2

  /// Why a secret file (or another small file of lines, the HTTP gateway's token file) cannot be
  /// used.
  public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// 1-based; nil for a problem with the whole file.
    public var line: Int?
    public var reason: String

    public init(file: String, line: Int?, reason: String) {
      self.file = file
      self.line = line
      self.reason = reason
    }

    /// `FILE:LINE: reason`.
    public var description: String { "\(line.map { "\(file):\($0)" } ?? file): \(reason)" }
  }

  /// The secrets of the file at `path`, in the file's order: one or two.
  public static func read(_ path: String) throws(Problem) -> [WebhookSecret] {
    var info = stat()
    guard stat(path, &info) == 0 else {
      throw Problem(file: path, line: nil, reason: "cannot read: \(SystemError(code: errno))")
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw Problem(file: path, line: nil, reason: "not a regular file")
    }
    let bytes: [UInt8]
    switch readFile(path) {
    case .success(let read): bytes = read
    case .failure(let error): throw Problem(file: path, line: nil, reason: "cannot read: \(error)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw Problem(file: path, line: nil, reason: "not valid UTF-8 text")
    }
    return try secrets(in: text, file: path)
  }

  /// The secrets `text`, the content of `file`, holds.
  static func secrets(in text: String, file: String) throws(Problem) -> [WebhookSecret] {
    var secrets: [WebhookSecret] = []
    let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    for (index, line) in lines.enumerated() {
      let trimmed = line.trimmingWhitespace()
      guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
      guard secrets.count < maximumSecrets else {
        throw Problem(
          file: file, line: index + 1,
          reason: "a third secret: a secret file holds one, or two while one is rotated")
      }
      do {
        secrets.append(try WebhookSecret(trimmed))
      } catch {
        throw Problem(file: file, line: index + 1, reason: "not a webhook secret: \(error)")
      }
    }
    guard !secrets.isEmpty else {
      throw Problem(
        file: file, line: nil, reason: "holds no secret (\(WebhookSecret.prefix) and base64, one a line)")
    }
    return secrets
  }
}

extension LoadedConfiguration {
  /// Reads the secret file of each webhook endpoint, reporting each that cannot be used as an
  /// error naming it (and its line), with the endpoint whose `SecretFile=` it is: what
  /// `--check-config` does beyond loading. The daemon does not: run as its own user, it may not
  /// be allowed to read them at its start.
  public mutating func checkSecretFiles() {
    for endpoint in configuration.webhooks.values.sorted(by: { $0.name < $1.name }) {
      do {
        _ = try WebhookSecretFile.read(endpoint.secretFile)
      } catch {
        diagnostics.append(
          .init(
            .error, file: error.file, line: error.line,
            "\(error.reason) (SecretFile= of webhook endpoint \(endpoint.name))"))
      }
    }
  }
}
