import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchctl webhooks secret of the real binary: the endpoint's secret file, named by the
/// daemon, written again whole with a new secret, keeping its owner, group and mode.
@Suite struct WebhookSecretTests {
  /// A fixture whose endpoints' secret files are in a fresh directory: NAME.secret each.
  func fixture(_ names: [String], in scratch: TemporaryDirectory) throws -> ControlFixture {
    let fixture = try ctlFixture()
    fixture.configure(
      webhooks: names.map { webhookEndpoint($0, secretFile: scratch.appending("\($0).secret")) })
    return fixture
  }

  func lines(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
  }

  func status(_ path: String) -> stat {
    var info = stat()
    #expect(stat(path, &info) == 0, "\(path)")
    return info
  }

  /// The names in `scratch`, to see that no temporary file was left.
  func names(_ scratch: TemporaryDirectory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted()
  }

  @Test func secretOfAnEndpoint_WithAFile_RotatesItKeepingItsOwnerAndMode() throws {
    let scratch = try TemporaryDirectory("webhook-secret")
    let fixture = try fixture(["shop"], in: scratch)
    let socket = ["--socket", fixture.socketPath]
    let file = scratch.appending("shop.secret")
    let first = "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()
    try "# the shop's\n\(first)\n".write(toFile: file, atomically: false, encoding: .utf8)
    chmod(file, 0o604)
    let root = getuid() == 0
    if root { #expect(chown(file, 1234, 5678) == 0) }

    let rotated = try Ctl.run(["webhooks", "secret", "shop"] + socket)
    #expect(rotated.status == 0, "\(rotated.errors)")
    #expect(rotated.lines.count == 1, "the new secret alone: \(rotated.output)")
    let new = try #require(rotated.lines.first)
    #expect(try WebhookSecret(new).key.count == 32)
    #expect(try lines(file) == [new, first])
    var info = status(file)
    #expect(info.st_mode & 0o7777 == 0o604)
    if root { #expect(info.st_uid == 1234 && info.st_gid == 5678) }
    #expect(
      rotated.errors.contains("Wrote a new secret to \(file), before the current one: messages to shop are "),
      "\(rotated.errors)")
    #expect(rotated.errors.contains("trialwatchctl webhooks secret shop --retire"))

    // A second rotation before the first ended: the oldest is dropped, and that is said.
    let again = try Ctl.run(["webhooks", "secret", "shop", "--json"] + socket)
    let reply = try again.json()
    let newer = try #require(reply["secret"] as? String)
    #expect(reply["secretFile"] as? String == file && reply["secrets"] as? Int == 2)
    #expect(try lines(file) == [newer, new])
    #expect(again.errors.contains("held two secrets (a rotation not ended): the second is no longer used"))

    let retired = try Ctl.run(["webhooks", "secret", "shop", "--retire"] + socket)
    #expect(retired.status == 0, "\(retired.errors)")
    #expect(retired.output.isEmpty)
    #expect(try lines(file) == [newer])
    info = status(file)
    #expect(info.st_mode & 0o7777 == 0o604)
    if root { #expect(info.st_uid == 1234 && info.st_gid == 5678) }
    let nothing = try Ctl.run(["webhooks", "secret", "shop", "--retire"] + socket)
    #expect(nothing.status == 0)
    #expect(nothing.errors.contains("holds one secret already: there is no rotation to end"))
    #expect(try names(scratch) == ["shop.secret"])
  }

  @Test func secretOfAnEndpoint_WithoutAFile_CreatesItForTheSender() throws {
    let scratch = try TemporaryDirectory("webhook-secret")
    let fixture = try fixture(["billing"], in: scratch)
    let file = scratch.appending("billing.secret")
    let run = try Ctl.run(["webhooks", "secret", "billing", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(try lines(file) == run.lines)
    let info = status(file)
    #expect(info.st_mode & 0o7777 == 0o640)
    #expect(info.st_uid == getuid())
    let group = getgrnam("trialwatch-webhooks")
    #expect(info.st_gid == (group?.pointee.gr_gid ?? getgid()))
    #expect(run.errors.contains("(a new file, mode 640"), "\(run.errors)")
    let retired = try Ctl.run(["webhooks", "secret", "billing", "--retire", "--socket", fixture.socketPath])
    #expect(retired.status == 0)
    #expect(try lines(file) == run.lines)
  }

  @Test func secretOfAnEndpoint_WithABadFileOrNoDirectory_FailsNamingItAndWritesNothing() throws {
    let scratch = try TemporaryDirectory("webhook-secret")
    let fixture = try ctlFixture()
    let bad = scratch.appending("bad.secret")
    let lost = scratch.appending("missing/lost.secret")
    fixture.configure(webhooks: [
      webhookEndpoint("bad", secretFile: bad), webhookEndpoint("lost", secretFile: lost),
    ])
    let socket = ["--socket", fixture.socketPath]
    let first = "whsec_" + Data(repeating: 1, count: 24).base64EncodedString()
    let content = "\(first)\nnot a secret\n"
    try content.write(toFile: bad, atomically: false, encoding: .utf8)

    let refused = try Ctl.run(["webhooks", "secret", "bad"] + socket)
    #expect(refused.status == 1)
    #expect(refused.output.isEmpty)
    #expect(
      refused.errors.hasPrefix(
        "trialwatchctl: \(bad):2: not a webhook secret: a secret starts with whsec_\nNothing was written."),
      "\(refused.errors)")
    #expect(try String(contentsOfFile: bad, encoding: .utf8) == content)
    #expect(try Ctl.run(["webhooks", "secret", "bad", "--retire"] + socket).status == 1)
    #expect(try String(contentsOfFile: bad, encoding: .utf8) == content)

    let nowhere = try Ctl.run(["webhooks", "secret", "lost"] + socket)
    #expect(nowhere.status == 1)
    #expect(nowhere.output.isEmpty)
    #expect(
      nowhere.errors
        == "trialwatchctl: cannot write the secret file \(lost): cannot create a file in "
        + "\(scratch.appending("missing")): No such file or directory; the file is as it was\n")
    let retire = try Ctl.run(["webhooks", "secret", "lost", "--retire"] + socket)
    #expect(retire.status == 1)
    #expect(retire.errors.contains("\(lost) of webhook endpoint lost does not exist: there is no rotation"))
    #expect(try names(scratch) == ["bad.secret"])
    #expect(try Ctl.run(["webhooks", "secret", "nobody"] + socket).status == 3)
  }
}
