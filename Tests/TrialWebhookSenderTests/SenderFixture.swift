import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatch-webhooks as a process: a link by that name to the trialwatchd built beside the
/// test bundle (as installed), with a datagram socket standing in for systemd's notify socket.
final class SenderProcess {
  /// The link, in a folder of its own beside the build's products.
  static let binary: String = {
    let folder = BuiltProducts.path("trialwatch-webhooks-link")
    let link = folder + "/trialwatch-webhooks"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != "../trialwatchd" {
      try? FileManager.default.removeItem(atPath: link)
      try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../trialwatchd")
    }
    return link
  }()

  let notify: UnixDatagramSocket
  let arguments: [String]
  /// Where its standard error goes (a file: nothing blocks it when the test reads none).
  let log: String
  private(set) var child: ChildProcess?

  init(socket: String, caFile: String?, directory: TemporaryDirectory, workers: Int = 16) throws {
    let run = (1...).first {
      !FileManager.default.fileExists(atPath: directory.appending("sender-\($0).log"))
    }!
    notify = try UnixDatagramSocket(path: directory.appending("sender-notify-\(run).sock"))
    log = directory.appending("sender-\(run).log")
    arguments =
      ["--socket", socket, "--workers", "\(workers)", "--log-target", "console"]
      + (caFile.map { ["--ca-file", $0] } ?? [])
  }

  deinit {
    child?.kill()
    _ = child?.wait(timeout: 10)
  }

  func start() throws {
    child = try ChildProcess(
      .path(Self.binary), arguments,
      environment: ChildProcess.environment(
        adding: ["NOTIFY_SOCKET": notify.path], removing: ["JOURNAL_STREAM", "TRIALWATCH_SOCKET"]),
      errors: .file(log))
  }

  /// Starts the sender and waits for its READY=1 (once attached); the message it came in.
  @discardableResult
  func startAttached() throws -> String {
    try start()
    let ready = notify.waitFor { $0.contains("READY=1") }
    return try #require(ready.found, "the sender did not attach: \(ready.seen); \(standardError)")
  }

  func signal(_ signo: Int32) { child?.signal(signo) }

  /// The exit status (128 plus a signal's number), or nil if it did not exit in time.
  func waitForExit() -> Int32? { child?.wait(timeout: patience)?.code }

  /// What it wrote on standard error so far.
  var standardError: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

  /// The shared libraries it has mapped, by file name.
  var mappedLibraries: Set<String> {
    guard let pid = child?.pid, let maps = ProcFiles.read("/proc/\(pid)/maps") else { return [] }
    return Set(
      maps.split(separator: "\n").compactMap { line in
        ProcFiles.mappedPath(line).map { String($0.split(separator: "/").last ?? "") }
      }.filter { $0.contains(".so") })
  }

  /// Its resident set, in KiB (`VmRSS` of /proc/PID/status).
  var residentKiB: Int? {
    guard let pid = child?.pid, let status = ProcFiles.read("/proc/\(pid)/status") else { return nil }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
    return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
  }
}

/// A daemon with one webhook endpoint, `billing`, posting to a Python receiver that verifies
/// every message, and a sender between them.
final class DeliveryFixture {
  static let endpoint = "billing"

  let secret: WebhookSecret
  let receiver: WebhookReceiver
  let daemon: DaemonProcess
  let sender: SenderProcess
  let secretFile: String
  let client: VarlinkClient

  /// - Parameters:
  ///   - secretFileText: what the secret file holds (default: the receiver's secret).
  ///   - query: added to the receiver's URL (`?status=500&fail=1`).
  ///   - endpointKeys: more lines of the endpoint's `[Webhook]`.
  ///   - alsoChecked: secrets the receiver checks each message against after `secret`.
  init(
    tls: Bool = false, secretFileText: String? = nil, query: String = "", endpointKeys: String = "",
    alsoChecked: [WebhookSecret] = [], workers: Int = 16
  ) throws {
    secret = try Crypto.shared().newSecret()
    receiver = try WebhookReceiver(secrets: ([secret] + alsoChecked).map(\.text), tls: tls)
    daemon = try DaemonProcess()
    secretFile = daemon.directory.appending("\(Self.endpoint).secret")
    try (secretFileText ?? "\(secret.text)\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
    chmod(secretFile, 0o600)
    let folder = daemon.directory.appending("webhooks")
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try """
    [Webhook]
    URL=\(receiver.url)\(query)
    SecretFile=\(secretFile)
    Events=paused
    \(endpointKeys)
    """.write(toFile: folder + "/\(Self.endpoint).conf", atomically: true, encoding: .utf8)
    // Each event is a line of its standard error: a file, which never fills.
    try daemon.start(errors: .file(daemon.directory.appending("trialwatchd.log")))
    _ = try #require(daemon.notify.waitFor { $0.contains("READY=1") }.found, "the daemon did not start")
    // Read as they come: the daemon's status lines never wait for a full socket.
    daemon.notify.readInBackground()
    sender = try SenderProcess(
      socket: daemon.socketPath, caFile: receiver.caFile, directory: daemon.directory, workers: workers)
    client = try VarlinkClient(path: daemon.socketPath, timeout: patience)
  }

  /// Starts a trial of `subject` and pauses it: the pause logs a `paused` event at once.
  @discardableResult
  func pause(_ subject: String) throws -> TrialObject {
    let trial = try client.startTrial(subject, days: 5, reminders: [])
    return try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id))).trial
  }

  /// The attempts the daemon keeps for the endpoint.
  func attempts() throws -> [WebhookAttemptObject] {
    try client.call(Trials.getWebhookAttempts, GetWebhookAttemptsParameters(name: Self.endpoint)).attempts
  }

  /// Waits until the daemon's attempts satisfy `condition` (asked every 20 ms), at most `patience`;
  /// the attempts seen last.
  func waitForAttempts(_ condition: ([WebhookAttemptObject]) -> Bool) throws -> [WebhookAttemptObject] {
    var attempts = try attempts()
    _ = try waitUntil(interval: .milliseconds(20)) {
      attempts = try self.attempts()
      return condition(attempts)
    }
    return attempts
  }
}
