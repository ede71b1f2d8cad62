import Foundation
import TestSupport
import Testing
import TrialConfiguration
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchctl http token of the real binary, without a daemon: the gateway's token file in a
/// fresh directory, written again whole, keeping its owner, group, mode and other lines.
@Suite struct HTTPTokenTests {
  func token(_ arguments: [String], file: String) throws -> Run {
    try Ctl.run(["http", "token"] + arguments + ["--tokens", file])
  }

  func content(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
  }

  func status(_ path: String) -> stat {
    var info = stat()
    #expect(stat(path, &info) == 0, "\(path)")
    return info
  }

  /// The names in `directory`, to see that no temporary file was left.
  func names(_ directory: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
  }

  /// The 32 bytes a secret's text stands for: base64url without padding after `twh_`.
  func secretBytes(_ secret: String) -> Data? {
    guard secret.hasPrefix("twh_"), secret.count == 47 else { return nil }
    let encoded = secret.dropFirst(4)
    guard encoded.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
      return nil
    }
    let base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    return Data(base64Encoded: base64 + "=")
  }

  func hash(_ secret: String) throws -> [UInt8] {
    try Crypto.shared().sha256(Array(secret.utf8))
  }

  @Test func add_WithAFreshFile_WritesTheLineAndPrintsTheSecret() throws {
    let scratch = try TemporaryDirectory("http-token")
    let directory = scratch.appending("http")
    let file = directory + "/tokens"

    let added = try token(["add", "billing-app", "--scope", "change"], file: file)
    #expect(added.status == 0, "\(added.errors)")
    #expect(added.lines.count == 1, "the secret alone: \(added.output)")
    let secret = try #require(added.lines.first)
    #expect(secretBytes(secret)?.count == 32, "\(secret)")
    let line = HTTPTokenFile.Token(name: "billing-app", scope: .change, hash: try hash(secret)).line
    #expect(try content(file).split(separator: "\n").last.map(String.init) == line)
    #expect(try HTTPTokenFile.read(file).map(\.name) == ["billing-app"])
    #expect(added.errors.contains("shown this once"), "\(added.errors)")
    #expect(added.errors.contains("Authorization: Bearer SECRET"))
    #expect(added.errors.contains("(a new file, mode 640"), "\(added.errors)")

    let info = status(file)
    #expect(info.st_mode & 0o7777 == 0o640)
    #expect(info.st_uid == getuid())
    #expect(info.st_gid == (getgrnam("trialwatch-http")?.pointee.gr_gid ?? getgid()))
    #expect(status(directory).st_mode & 0o7777 == 0o755)

    // A second token: its own secret, its line after the first's.
    let again = try token(["add", "dashboard", "--scope", "read"], file: file)
    #expect(again.status == 0, "\(again.errors)")
    let other = try #require(again.lines.first)
    #expect(other != secret && secretBytes(other)?.count == 32)
    let lines = try content(file).split(separator: "\n").map(String.init)
    #expect(
      lines.suffix(2) == [
        line, HTTPTokenFile.Token(name: "dashboard", scope: .read, hash: try hash(other)).line,
      ])
    #expect(try names(directory) == ["tokens"])
  }

  @Test func add_OnAnExistingFile_KeepsItsOwnershipAndOtherLines() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    let first = HTTPTokenFile.Token(name: "ops", scope: .read, hash: Array(repeating: 0xab, count: 32)).line
    try "# the operators'\n\n\(first)".write(toFile: file, atomically: false, encoding: .utf8)
    chmod(file, 0o604)
    let root = getuid() == 0
    if root { #expect(chown(file, 1234, 5678) == 0) }

    let added = try token(["add", "shop", "--scope", "read"], file: file)
    #expect(added.status == 0, "\(added.errors)")
    let secret = try #require(added.lines.first)
    let line = HTTPTokenFile.Token(name: "shop", scope: .read, hash: try hash(secret)).line
    #expect(try content(file) == "# the operators'\n\n\(first)\n\(line)\n")
    var info = status(file)
    #expect(info.st_mode & 0o7777 == 0o604)
    if root { #expect(info.st_uid == 1234 && info.st_gid == 5678) }
    #expect(!added.errors.contains("a new file"))

    let removed = try token(["remove", "ops"], file: file)
    #expect(removed.status == 0, "\(removed.errors)")
    #expect(removed.output.isEmpty)
    #expect(removed.errors.contains("Removed token ops from \(file)"), "\(removed.errors)")
    #expect(try content(file) == "# the operators'\n\n\(line)\n")
    info = status(file)
    #expect(info.st_mode & 0o7777 == 0o604)
    if root { #expect(info.st_uid == 1234 && info.st_gid == 5678) }
    #expect(try names(scratch.path) == ["tokens"])
  }

  @Test func add_OfANameInTheFileOrABadOne_IsRefused() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    #expect(try token(["add", "ops", "--scope", "change"], file: file).status == 0)
    let before = try content(file)

    let duplicate = try token(["add", "ops", "--scope", "read"], file: file)
    #expect(duplicate.status == 1)
    #expect(duplicate.output.isEmpty)
    #expect(duplicate.errors.hasPrefix("trialwatchctl: \(file) has a token named \"ops\" already"))
    #expect(try content(file) == before)

    let badName = try token(["add", "ops team", "--scope", "read"], file: file)
    #expect(badName.status == 2)
    #expect(badName.errors.contains("may hold only A-Z, a-z, 0-9"), "\(badName.errors)")
    let badScope = try token(["add", "ci", "--scope", "admin"], file: file)
    #expect(badScope.status == 2)
    #expect(badScope.errors.contains("--scope: \"admin\" is not one of: read, change"), "\(badScope.errors)")
    #expect(try token(["add", "ci"], file: file).status == 2)
    #expect(try content(file) == before)
    #expect(try names(scratch.path) == ["tokens"])
  }

  @Test func commands_WithADamagedFile_FailNamingTheLineAndWriteNothing() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    let good = HTTPTokenFile.Token(name: "ops", scope: .read, hash: Array(repeating: 1, count: 32)).line
    let damaged = "\(good)\nci admin sha256:00\n"
    try damaged.write(toFile: file, atomically: false, encoding: .utf8)
    chmod(file, 0o600)

    for arguments in [["add", "shop", "--scope", "read"], ["remove", "ops"], ["list"]] {
      let refused = try token(arguments, file: file)
      #expect(refused.status == 1, "\(arguments)")
      #expect(refused.output.isEmpty)
      #expect(
        refused.errors.hasPrefix(
          "trialwatchctl: \(file):2: the scope is read or change, not \"admin\"\nNothing was written."),
        "\(refused.errors)")
      #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(damaged.utf8))
    }
    #expect(status(file).st_mode & 0o7777 == 0o600)
    #expect(try names(scratch.path) == ["tokens"])
  }

  @Test func list_OfTheFile_ShowsNamesAndScopesOnly() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    let missing = try token(["list"], file: file)
    #expect(missing.status == 0)
    #expect(missing.output == "No tokens: \(file) does not exist.\n")
    #expect(try token([], file: file).output == missing.output)

    #expect(try token(["add", "billing-app", "--scope", "change"], file: file).status == 0)
    #expect(try token(["add", "ro", "--scope", "read"], file: file).status == 0)
    let listed = try token(["list"], file: file)
    #expect(listed.status == 0, "\(listed.errors)")
    #expect(listed.lines == ["NAME         SCOPE", "billing-app  change", "ro           read"])
    let json = try token(["list", "--json"], file: file).json()
    let tokens = try #require(json["tokens"] as? [[String: Any]])
    #expect(tokens.map { $0["name"] as? String } == ["billing-app", "ro"])
    #expect(tokens.map { $0["scope"] as? String } == ["change", "read"])
    #expect(tokens.allSatisfy { $0.count == 2 })

    #expect(try token(["remove", "billing-app"], file: file).status == 0)
    #expect(try token(["remove", "ro"], file: file).status == 0)
    #expect(try token(["list"], file: file).output == "No tokens in \(file).\n")
  }

  @Test func remove_OfAnUnknownName_FailsNamingIt() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    let nothing = try token(["remove", "ops"], file: file)
    #expect(nothing.status == 3)
    #expect(
      nothing.errors.hasPrefix("trialwatchctl: \(file) has no token named \"ops\""), "\(nothing.errors)")
    #expect(try names(scratch.path).isEmpty)

    #expect(try token(["add", "ci", "--scope", "read"], file: file).status == 0)
    let before = try content(file)
    let unknown = try token(["remove", "ops"], file: file)
    #expect(unknown.status == 3)
    #expect(unknown.errors.contains("no token named \"ops\""))
    #expect(try content(file) == before)
  }

  @Test func jsonOption_OfAddAndRemove_PrintsTheTokenAndHowManyAreLeft() throws {
    let scratch = try TemporaryDirectory("http-token")
    let file = scratch.appending("tokens")
    let added = try token(["add", "ops", "--scope", "change", "--json"], file: file)
    #expect(added.status == 0, "\(added.errors)")
    #expect(added.lines.count == 1)
    let reply = try added.json()
    #expect(Set(reply.keys) == ["name", "scope", "secret", "tokens"])
    #expect(reply["name"] as? String == "ops" && reply["scope"] as? String == "change")
    #expect(reply["tokens"] as? Int == 1)
    let secret = try #require(reply["secret"] as? String)
    #expect(try HTTPTokenFile.read(file).first?.hash == hash(secret))

    let removed = try token(["remove", "ops", "--json"], file: file).json()
    #expect(removed["name"] as? String == "ops" && removed["scope"] as? String == "change")
    #expect(removed["tokens"] as? Int == 0)
  }
}
