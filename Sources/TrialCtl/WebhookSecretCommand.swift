import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore
import TrialWebhooks

struct WebhookSecretCommand: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "secret",
    abstract: "Rotate a webhook endpoint's signing secret; with --retire, end the rotation.",
    discussion: """
      Writes a new secret, from the system's random source through OpenSSL's libcrypto, into the \
      endpoint's SecretFile= (as the daemon names it), on the first line, and the file's current first \
      secret on the second: every message is signed with both while the receiver switches to the new \
      one. Prints the new secret on standard output, and nothing else there, so that it can be piped to \
      where the receiver reads it; what to do next goes to standard error. Once the receiver checks with \
      the new secret, --retire keeps the first line alone. A file that does not exist is created, holding \
      the new secret, mode 0640, group trialwatch-webhooks when that group exists.

      The file is replaced whole, keeping its owner, group and mode: the new content is written to a \
      temporary file in the same directory, flushed to the disk, then renamed over it, so that the \
      sender reads the old file or the new one, never part of one. A file that cannot be read as \
      secrets is left as it is, and the error names it and its line. Needs the right to write the \
      file's directory (root, usually); the daemon never reads the secrets. With --json, prints \
      {"name", "secretFile", "secret" (the new one; absent with --retire), "secrets" (how many the \
      file holds now)}.

      Example: trialwatchctl webhooks secret billing | ssh app 'cat > trialwatch.secret'
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var endpoint: WebhookName
  @Flag(help: "End a rotation: keep only the file's first secret, the newer.") var retire = false

  func run(_ session: Session) throws {
    let name = endpoint.name
    let path = try session.webhook(named: name).secretFile
    let found = try WebhookSecretFileWriter.find(path)
    let presenter = session.presenter
    var change = WebhookSecretChange(name: name, file: path)
    if retire {
      guard let found else {
        throw CtlFailure(
          "the secret file \(path) of webhook endpoint \(name) does not exist: there is no rotation to end",
          exitCode: .failure)
      }
      change.secrets = 1
      change.dropped = found.secrets.count > 1
      if change.dropped {
        try WebhookSecretFileWriter.write(
          [found.secrets[0]], to: found.path, ownership: found.ownership)
      }
    } else {
      let secret: WebhookSecret
      do {
        secret = try Crypto.shared().newSecret()
      } catch {
        throw CtlFailure("cannot make a new secret: \(error.description)", exitCode: .failure)
      }
      if let found {
        change.dropped = found.secrets.count > 1
        change.secrets = 2
        try WebhookSecretFileWriter.write(
          [secret, found.secrets[0]], to: found.path, ownership: found.ownership)
      } else {
        let (ownership, group) = WebhookSecretFileWriter.newFileOwnership()
        change.created = true
        change.group = group
        change.mode = ownership.mode
        try WebhookSecretFileWriter.write([secret], to: path, ownership: ownership)
      }
      change.secret = secret.text
    }
    if session.json {
      session.environment.output.write(line: WireCoding.text(change.reply))
    } else if let secret = change.secret {
      presenter.present(newSecret: secret)
    }
    presenter.present(secretChange: change)
  }
}

/// What `webhooks secret` did to an endpoint's secret file.
public struct WebhookSecretChange: Hashable, Sendable {
  public var name: String
  public var file: String
  /// The new secret's text; nil for `--retire`.
  public var secret: String?
  /// How many secrets the file holds now.
  public var secrets = 1
  /// Whether a secret the file held was left out: its second (an older rotation's, or the one
  /// `--retire` ends).
  public var dropped = false
  /// Whether the file was made, and then its group (when the sender's exists) and mode.
  public var created = false
  public var group: String?
  public var mode: UInt32 = 0

  public init(name: String, file: String) {
    self.name = name
    self.file = file
  }

  /// What `--json` prints.
  var reply: WebhookSecretReply {
    WebhookSecretReply(name: name, secretFile: file, secret: secret, secrets: secrets)
  }
}

/// `webhooks secret --json`: the endpoint, its file, the new secret and how many it holds now.
struct WebhookSecretReply: Codable, Hashable, Sendable {
  var name: String
  var secretFile: String
  var secret: String?
  var secrets: Int
}

extension TrialPresenter {
  /// What to do next, on standard error.
  public func present(secretChange change: WebhookSecretChange) {
    let file = change.file
    let name = change.name
    if change.created {
      let group = change.group.map { ", group \($0)" } ?? ""
      output.showNotice(
        "Wrote a new secret to \(file) (a new file, mode \(String(change.mode, radix: 8))\(group)). Give it "
          + "to the receiver of webhook endpoint \(name), which checks each message's signature with it.")
      return
    }
    guard change.secret != nil else {
      output.showNotice(
        change.dropped
          ? "\(file) now holds its first secret alone: messages to \(name) are signed with it only."
          : "\(file) holds one secret already: there is no rotation to end.")
      return
    }
    if change.dropped {
      output.showNotice(
        "\(file) held two secrets (a rotation not ended): the second is no longer used.")
    }
    output.showNotice(
      "Wrote a new secret to \(file), before the current one: messages to \(name) are signed with both. "
        + "Give the new secret to the receiver; once it checks with it, end the rotation: "
        + "trialwatchctl webhooks secret \(name) --retire")
  }
}
