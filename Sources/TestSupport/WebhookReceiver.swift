import Foundation

/// A receiver of webhooks in Python (`Tests/webhooks/receiver.py`) that checks each message with
/// the reference verifiers of Standard Webhooks and Svix, over http or over https with a CA of
/// the test's own; each request it got is read back as a line of JSON.
public final class WebhookReceiver {
  static let script = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Tests/webhooks/receiver.py").path

  /// One request as the receiver saw it.
  public struct Request: @unchecked Sendable {
    public var path: String
    /// Lower-cased names.
    public var headers: [String: String]
    public var body: String
    /// By secret (its position, "0", "1"...) and verifier: "ok" or the verifier's error.
    public var checks: [String: [String: String]]

    /// `webhook-id`.
    public var id: String? { headers["webhook-id"] }

    /// Whether every secret's check passed with both verifiers.
    public var verified: Bool {
      !checks.isEmpty && checks.values.allSatisfy { $0.values.allSatisfy { $0 == "ok" } }
    }

    /// The body as JSON.
    public var json: [String: Any]? {
      (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
    }
  }

  let scratch: TemporaryDirectory
  let process: ChildProcess
  /// `http(s)://127.0.0.1:PORT/hooks/trials`.
  public let url: String
  /// The CA that signed the receiver's certificate, for https.
  public let caFile: String?

  /// A receiver checking each message against each of `secrets` (`whsec_...`).
  public init(secrets: [String], tls: Bool) throws {
    let check = try ChildProcess.run(
      .path("/usr/bin/env"), ["python3", "-c", "import standardwebhooks, svix"])
    guard check.status == .exited(0) else {
      throw TestSupportError(
        "the reference verifiers are missing: run `python3 -m pip install standardwebhooks svix` (make test does)"
      )
    }
    scratch = try TemporaryDirectory("webhooks")
    let secretsFile = scratch.appending("secrets")
    try secrets.joined(separator: "\n").write(toFile: secretsFile, atomically: true, encoding: .utf8)
    var arguments = ["python3", Self.script, secretsFile]
    if tls {
      let (ca, certificate, key) = try Self.makeCertificates(in: scratch)
      arguments += ["--tls", certificate, key]
      caFile = ca
    } else {
      caFile = nil
    }
    process = try ChildProcess(.path("/usr/bin/env"), arguments)
    guard let first = process.readLine(timeout: 60).line,
      let port = try Self.object(first)["listening"] as? Int
    else {
      throw TestSupportError("the receiver did not start: \(process.readRest(.errors))")
    }
    url = "\(tls ? "https" : "http")://127.0.0.1:\(port)/hooks/trials"
  }

  deinit { process.kill() }

  /// A CA, and a certificate for 127.0.0.1 it signed, made with openssl.
  public static func makeCertificates(in scratch: TemporaryDirectory) throws -> (
    ca: String, certificate: String, key: String
  ) {
    let ca = scratch.appending("ca.pem")
    let caKey = scratch.appending("ca.key")
    let key = scratch.appending("server.key")
    let request = scratch.appending("server.csr")
    let certificate = scratch.appending("server.pem")
    let extensions = scratch.appending("server.ext")
    try "subjectAltName=IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
    for arguments in [
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
        caKey,
        "-out", ca, "-days", "2", "-subj", "/CN=trialwatch test CA",
      ],
      [
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
        request, "-subj", "/CN=127.0.0.1",
      ],
      [
        "x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", certificate,
        "-days", "2", "-extfile", extensions,
      ],
    ] {
      let made = try ChildProcess.run(.path("/usr/bin/openssl"), arguments)
      guard made.status == .exited(0) else {
        throw TestSupportError("openssl \(arguments[0]): \(made.errors)")
      }
    }
    return (ca, certificate, key)
  }

  static func object(_ line: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
      throw TestSupportError("the receiver wrote a line that is not a JSON object: \(line)")
    }
    return object
  }

  /// The `webhook-id` of the next request that arrived with `sleep=S` in its query, announced
  /// before it is answered; nil if none came within `timeout` seconds.
  public func nextArrival(timeout: TimeInterval = patience) throws -> String? {
    guard let line = process.readLine(timeout: timeout).line else { return nil }
    guard let id = try Self.object(line)["arrived"] as? String else {
      throw TestSupportError("the receiver answered a request before it said it arrived: \(line)")
    }
    return id
  }

  /// The next request the receiver got, waiting at most `timeout` seconds for it; nil if none
  /// came.
  public func nextRequest(timeout: TimeInterval = patience) throws -> Request? {
    guard let line = process.readLine(timeout: timeout).line else { return nil }
    let object = try Self.object(line)
    return Request(
      path: object["path"] as? String ?? "", headers: object["headers"] as? [String: String] ?? [:],
      body: object["body"] as? String ?? "", checks: object["checks"] as? [String: [String: String]] ?? [:])
  }

  /// What the receiver made of the next request: its checks, by secret and verifier.
  public func nextChecks() throws -> [String: [String: String]] {
    guard let request = try nextRequest(timeout: 60) else {
      throw TestSupportError("the receiver got nothing")
    }
    return request.checks
  }
}
