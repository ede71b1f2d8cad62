import Logging
import Synchronization
import TrialConfiguration
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The endpoints' secret files as last read, by path: a file is read again when its device,
/// inode, size, modification or change time differ from the read before (a rotation with
/// `trialwatchctl webhooks secret`, an editor's rename, a chmod), so that a new secret signs the
/// next attempt without a restart. A file that cannot be used is tried again at each attempt;
/// its problem names the file (and line), never a secret, and is logged when it first appears
/// (and when it is gone).
final class SecretCache: Sendable {
  /// What identifies one version of a file.
  struct Version: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    /// Seconds and nanoseconds.
    var modified: [Int]
    var changed: [Int]
  }

  private struct Entry {
    var version: Version
    var secrets: [WebhookSecret]
  }

  private let entries = Mutex<[String: Entry]>([:])
  /// The problem of each file that has one now, as last logged.
  private let problems = Mutex<[String: String]>([:])
  /// How many times a file was read, for tests.
  private let readCount = Atomic<Int>(0)
  private let logger: Logger

  init(logger: Logger = Logger(label: "trialwatch-webhooks")) {
    self.logger = logger
  }

  /// The secrets of the file at `path`, read again only if it changed since the last read.
  func secrets(_ path: String) throws(WebhookSecretFile.Problem) -> [WebhookSecret] {
    // Stated before it is read: a change during the read shows at the next look.
    let version = Self.version(path)
    if let version, let entry = entries.withLock({ $0[path] }), entry.version == version {
      return entry.secrets
    }
    readCount.add(1, ordering: .relaxed)
    let secrets: [WebhookSecret]
    do {
      secrets = try WebhookSecretFile.read(path)
    } catch {
      entries.withLock { $0[path] = nil }
      let new = problems.withLock { $0.updateValue(error.description, forKey: path) != error.description }
      if new {
        logger.warning(
          "a secret file cannot be used; attempts signed with it fail", metadata: ["problem": "\(error)"])
      }
      throw error
    }
    entries.withLock { $0[path] = version.map { Entry(version: $0, secrets: secrets) } }
    if problems.withLock({ $0.removeValue(forKey: path) }) != nil {
      logger.notice("a secret file can be used again", metadata: ["file": "\(path)"])
    }
    return secrets
  }

  /// How many times a file was read since the start.
  var reads: Int { readCount.load(ordering: .relaxed) }

  private static func version(_ path: String) -> Version? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Version(
      device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
      modified: [info.st_mtim.tv_sec, info.st_mtim.tv_nsec],
      changed: [info.st_ctim.tv_sec, info.st_ctim.tv_nsec])
  }
}
