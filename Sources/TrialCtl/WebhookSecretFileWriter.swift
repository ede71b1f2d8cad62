import TrialConfiguration
import TrialCore

/// A webhook endpoint's secret file (`SecretFile=`) as `webhooks secret` finds it and writes it
/// again: one secret a line, in the text `WebhookSecret` reads, replaced whole
/// (`FileReplacement`).
enum WebhookSecretFileWriter {
  /// The group a new secret file is given when it exists: the webhook sender's, which reads
  /// the file (`trialwatch-webhooks.service`).
  static let senderGroup = "trialwatch-webhooks"
  static let file = FileReplacement(kind: "secret file")

  /// A secret file as found.
  struct Found {
    /// The file itself, a symbolic link followed: where the new one goes.
    var path: String
    var secrets: [WebhookSecret]
    var ownership: FileReplacement.Ownership
  }

  /// The file at `path` and its secrets; nil when there is no file.
  static func find(_ path: String) throws(CtlFailure) -> Found? {
    guard let existing = try file.find(path) else { return nil }
    let secrets: [WebhookSecret]
    do {
      secrets = try WebhookSecretFile.read(path)
    } catch {
      throw FileReplacement.unreadable(error.description)
    }
    return Found(path: existing.path, secrets: secrets, ownership: existing.ownership)
  }

  /// The ownership of a new file: the writer's, in `senderGroup` when it exists; mode 0640.
  static func newFileOwnership() -> (FileReplacement.Ownership, groupName: String?) {
    FileReplacement.newFileOwnership(group: senderGroup)
  }

  /// Replaces the file at `path` with `secrets`, one a line, under `ownership`.
  static func write(_ secrets: [WebhookSecret], to path: String, ownership: FileReplacement.Ownership)
    throws(CtlFailure)
  {
    try file.write(secrets.map { $0.text + "\n" }.joined(), to: path, ownership: ownership)
  }
}
