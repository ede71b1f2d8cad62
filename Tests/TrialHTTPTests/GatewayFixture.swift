import Foundation
import TestSupport
import Testing
import TrialConfiguration
import TrialDaemonTesting
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd and trialwatch-http as processes (the gateway a link by that name to the
/// trialwatchd built beside the test bundle, as installed), with a token file of a read token and
/// a change token; requests made by curl, as an application without a Varlink client would.
final class GatewayFixture {
  static let binary: String = {
    let folder = BuiltProducts.path("trialwatch-http-link")
    let link = folder + "/trialwatch-http"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != "../trialwatchd" {
      try? FileManager.default.removeItem(atPath: link)
      try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../trialwatchd")
    }
    return link
  }()

  /// The secrets of the two tokens the file starts with.
  let readSecret = "twh_read-secret-of-the-tests-0123456789abcdef"
  let changeSecret = "twh_change-secret-of-the-tests-0123456789abcdef"

  let daemon: DaemonProcess
  let tokenFile: String
  let notify: UnixDatagramSocket
  let log: String
  private(set) var gateway: ChildProcess?
  /// `http://127.0.0.1:PORT`, once started.
  private(set) var base = ""

  /// `plans`: plan files to write before the daemon starts, by name.
  init(config: String = "", plans: [String: String] = [:]) throws {
    daemon = try DaemonProcess(config: config)
    if !plans.isEmpty {
      let folder = daemon.directory.appending("plans")
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      for (name, text) in plans {
        try text.write(toFile: folder + "/\(name).conf", atomically: true, encoding: .utf8)
      }
    }
    try daemon.start(errors: .file(daemon.directory.appending("trialwatchd.log")))
    _ = try #require(daemon.notify.waitFor { $0.contains("READY=1") }.found, "the daemon did not start")
    daemon.notify.readInBackground()
    tokenFile = daemon.directory.appending("tokens")
    notify = try UnixDatagramSocket(path: daemon.directory.appending("gateway-notify.sock"))
    log = daemon.directory.appending("gateway.log")
    try writeTokens([("reader", .read, readSecret), ("deployer", .change, changeSecret)])
  }

  deinit {
    gateway?.kill()
    _ = gateway?.wait(timeout: 10)
  }

  /// Writes the token file with these tokens.
  func writeTokens(_ tokens: [(String, HTTPTokenFile.Scope, String)]) throws {
    let crypto = try Crypto.shared()
    let text = HTTPTokenFile.text(
      tokens.map { HTTPTokenFile.Token(name: $0.0, scope: $0.1, hash: crypto.sha256(Array($0.2.utf8))) })
    try text.write(toFile: tokenFile, atomically: true, encoding: .utf8)
  }

  /// Starts the gateway on a port the kernel picks, with `arguments` besides the fixture's, and
  /// waits for its READY=1.
  func start(_ arguments: [String] = []) throws {
    gateway = try ChildProcess(
      .path(Self.binary),
      [
        "--socket", daemon.socketPath, "--listen", "127.0.0.1:0", "--tokens", tokenFile, "--log-target",
        "console",
      ] + arguments,
      environment: ChildProcess.environment(
        adding: ["NOTIFY_SOCKET": notify.path],
        removing: ["JOURNAL_STREAM", "TRIALWATCH_SOCKET", "LISTEN_FDS"]),
      errors: .file(log))
    let ready = notify.waitFor { $0.contains("READY=1") }
    let message = try #require(ready.found, "the gateway did not start: \(ready.seen); \(standardError)")
    let place = try #require(message.split(separator: "\n").first { $0.hasPrefix("STATUS=serving on ") })
    base = "http://" + place.dropFirst("STATUS=serving on ".count)
  }

  /// The port the gateway listens on, once started.
  var port: UInt16 { UInt16(base.split(separator: ":").last ?? "") ?? 0 }

  /// What the gateway wrote on standard error so far.
  var standardError: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

  /// One HTTP answer as curl got it.
  struct Answer {
    var status: Int
    var type: String
    var body: String

    var json: [String: Any]? {
      (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
    }

    /// The reply's `trial`, for the calls that answer with one.
    var trial: [String: Any]? { json?["trial"] as? [String: Any] }

    /// The `error` of an error's body.
    var error: String? { json?["error"] as? String }

    /// Whether the reply has member `name`.
    func has(_ name: String) -> Bool { json?[name] != nil }
  }

  /// `POST /call/METHOD` with `body`, with the secret `token` (nil: no Authorization header).
  func call(_ method: String, _ body: String = "{}", token: String?) throws -> Answer {
    try request("/call/\(method)", method: "POST", body: body, token: token)
  }

  func request(
    _ path: String, method: String = "GET", body: String? = nil, token: String?, headers: [String] = []
  ) throws -> Answer {
    var arguments = ["-sS", "-X", method, "-w", "\n%{http_code} %{content_type}", base + path]
    if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
    for header in headers { arguments += ["-H", header] }
    if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
    let done = try ChildProcess.run(.path("/usr/bin/curl"), arguments, input: body ?? "", timeout: patience)
    #expect(done.status == .exited(0), "curl: \(done.errors)")
    let text = done.output
    let cut = text.lastIndex(of: "\n") ?? text.startIndex
    let last = text[cut...].dropFirst().split(separator: " ", maxSplits: 1)
    return Answer(
      status: Int(last.first ?? "") ?? 0, type: last.count > 1 ? String(last[1]) : "",
      body: String(text[..<cut]))
  }
}
