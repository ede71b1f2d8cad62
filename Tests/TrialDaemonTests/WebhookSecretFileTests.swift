import Foundation
import Testing
import TrialCore
import TrialDaemonTesting

@testable import TrialConfiguration

#if canImport(Glibc)
  import Glibc
#endif

/// A webhook endpoint's `SecretFile=`, read by `--check-config` (and the sender of webhooks),
/// never by the daemon's start.
@Suite struct WebhookSecretFileTests {
  static let secret = "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()
  static let other = "whsec_" + Data(repeating: 9, count: 24).base64EncodedString()

  @Test func secretFile_WithOneOrTwoSecrets_IsTheirKeysInOrder() throws {
    let fixture = ConfigurationFixture()
    let one = fixture.write("one.secret", Self.secret + "\n")
    let two = fixture.write(
      "two.secret", "# rotated on 1 December\n\n  \(Self.other)  \r\n# the old one\n\(Self.secret)")
    #expect(try WebhookSecretFile.read(one).map(\.key) == [Array(repeating: 7, count: 32)])
    #expect(
      try WebhookSecretFile.read(two).map(\.key) == [
        Array(repeating: 9, count: 24), Array(repeating: 7, count: 32),
      ])
  }

  @Test func secretFile_ThatCannotBeUsed_NamesItsFileAndLineButNeverItsText() throws {
    let fixture = ConfigurationFixture()
    let cases: [(name: String, text: String, problem: String)] = [
      ("prefix", "# the key\nsecret-of-billing\n", ":2: not a webhook secret: a secret starts with whsec_"),
      (
        "base64", "whsec_not*base64\n",
        ":1: not a webhook secret: a secret is whsec_ followed by base64 (A-Z, a-z, 0-9, + and /, = padding)"
      ),
      (
        "short", "whsec_" + Data(repeating: 1, count: 8).base64EncodedString() + "\n",
        ":1: not a webhook secret: a secret's key has 24 to 64 bytes, not 8"
      ),
      (
        "three", "\(Self.secret)\n\(Self.other)\n\(Self.secret)\n",
        ":3: a third secret: a secret file holds one, or two while one is rotated"
      ),
      ("empty", "# nothing yet\n\n", ": holds no secret (whsec_ and base64, one a line)"),
    ]
    for (name, text, problem) in cases {
      let file = fixture.write(name + ".secret", text)
      #expect(throws: WebhookSecretFile.Problem.self) { try WebhookSecretFile.read(file) }
      do {
        _ = try WebhookSecretFile.read(file)
      } catch {
        #expect(error.description == file + problem)
        #expect(!error.description.contains("secret-of-billing") && !error.description.contains("not*base64"))
      }
    }
    let missing = fixture.directory + "/missing.secret"
    #expect(
      throws: WebhookSecretFile.Problem(
        file: missing, line: nil, reason: "cannot read: No such file or directory")
    ) {
      try WebhookSecretFile.read(missing)
    }
    #expect(
      throws: WebhookSecretFile.Problem(file: fixture.directory, line: nil, reason: "not a regular file")
    ) {
      try WebhookSecretFile.read(fixture.directory)
    }
  }

  @Test func checkSecretFiles_OfEachEndpoint_ReportsThoseThatCannotBeUsed() {
    let fixture = ConfigurationFixture()
    let good = fixture.write("webhooks/good.secret", Self.secret + "\n")
    let bad = fixture.write("webhooks/bad.secret", "\n\nwhsec_\n")
    let missing = fixture.directory + "/webhooks/missing.secret"
    for (name, secret) in [("good", good), ("bad", bad), ("gone", missing)] {
      fixture.write("webhooks/\(name).conf", "[Webhook]\nURL=https://example.com/\nSecretFile=\(secret)\n")
    }
    var loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "the loader does not read them")
    loaded.checkSecretFiles()
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(bad):3: error: not a webhook secret: a secret's key has 24 to 64 bytes, not 0 (SecretFile= of webhook "
          + "endpoint bad)",
        "\(missing): error: cannot read: No such file or directory (SecretFile= of webhook endpoint gone)",
      ])
    #expect(loaded.checkReport.exitCode == 1)
  }
}

/// `trialwatchd --check-config` on the endpoints' files and their secrets, and the daemon that
/// starts without reading the secrets.
@Suite struct WebhookCheckConfigTests {
  /// Writes `text` to `name` in the configuration folder of `daemon`; returns its path.
  @discardableResult
  func write(_ daemon: DaemonProcess, _ name: String, _ text: String) throws -> String {
    let url = daemon.directory.url.appendingPathComponent(name)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: url)
    return url.path
  }

  @Test func checkConfig_WithABadEndpointFile_FailsNamingFileAndLine() throws {
    let daemon = try DaemonProcess(arguments: ["--check-config"])
    let file = try write(
      daemon, "webhooks/billing.conf",
      "[Webhook]\nURL=ftp://app.example.com/\nSecretFile=/nowhere\nTimeout=soon\n")
    let (status, text) = try daemon.run()
    #expect(status == 1)
    #expect(text.contains("\(file):2: error: URL=ftp://app.example.com/ is not an http:// or https:// URL"))
    #expect(text.contains("\(file):4: error: invalid value \"soon\" for Timeout= in [Webhook]"))
    #expect(!text.contains("configuration OK"))
  }

  @Test func checkConfig_WithABadSecretFile_FailsNamingIt() throws {
    let secret = "whsec_" + Data(repeating: 3, count: 32).base64EncodedString()
    let daemon = try DaemonProcess(arguments: ["--check-config"])
    let secretFile = try write(daemon, "webhooks/billing.secret", "# rotated\n\(secret)\nwhsec_short\n")
    try write(
      daemon, "webhooks/billing.conf", "[Webhook]\nURL=https://app.example.com/\nSecretFile=\(secretFile)\n")
    let (status, text) = try daemon.run()
    #expect(status == 1)
    #expect(
      text.contains(
        "\(secretFile):3: error: not a webhook secret: a secret is whsec_ followed by base64 (A-Z, a-z, 0-9, + "
          + "and /, = padding) (SecretFile= of webhook endpoint billing)"), "\(text)")
    #expect(!text.contains(secret) && !text.contains("configuration OK"))

    try write(daemon, "webhooks/billing.secret", "# rotated\n\(secret)\n")
    let fixed = try DaemonProcess(arguments: ["--check-config"], directory: daemon.directory)
    let (fixedStatus, fixedText) = try fixed.run()
    #expect(fixedStatus == 0)
    #expect(fixedText == "configuration OK\n\n", "\(fixedText)")
  }

  @Test func daemon_WithAnUnreadableSecretFile_StartsAndReloadsItsEndpoints() throws {
    let daemon = try DaemonProcess()
    let file = try write(
      daemon, "webhooks/billing.conf",
      "[Webhook]\nURL=https://app.example.com/\nSecretFile=/nonexistent/secret\n")
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil, "the secret is not read at start")
    // An endpoint file with an error keeps the running configuration at a reload, as a plan's does.
    try write(
      daemon, "webhooks/billing.conf", "[Webhook]\nURL=https://app.example.com/\nSecretFile=relative\n")
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("RELOADING=1") }.found != nil)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    let log = daemon.standardError
    #expect(
      log.contains("\(file):3: error: invalid value \"relative\" for SecretFile= in [Webhook]"), "\(log)")
    #expect(log.contains("configuration not reloaded"))
  }
}
