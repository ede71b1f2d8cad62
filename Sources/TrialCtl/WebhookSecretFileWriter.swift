import ErrnoText
import TrialConfiguration
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// A webhook endpoint's secret file (`SecretFile=`) as `webhooks secret` finds it and writes it
/// again: one secret a line, in the text `WebhookSecret` reads. The file is replaced whole,
/// never edited in place: the new content goes to a temporary file beside it (same directory,
/// so the same file system), which gets the file's owner, group and mode before a byte of a
/// secret is written, is flushed to the disk (`fsync`) and only then renamed over the file.
/// A reader sees the old file or the new one, never part of one; a failure removes the
/// temporary file and leaves the old one as it was.
enum WebhookSecretFileWriter {
  /// The group a new secret file is given when it exists: the webhook sender's, which reads
  /// the file (`trialwatch-webhooks.service`).
  static let senderGroup = "trialwatch-webhooks"
  /// The mode of a new secret file: read and write for its owner, read for its group.
  static let newFileMode: mode_t = 0o640

  /// A secret file as found.
  struct Found {
    /// The file itself, a symbolic link followed: where the new one goes.
    var path: String
    var secrets: [WebhookSecret]
    var owner: uid_t
    var group: gid_t
    var mode: mode_t
  }

  /// Who owns a file, and its mode.
  struct Ownership: Equatable {
    /// Nil: the writer's own (a new file).
    var owner: uid_t?
    var group: gid_t?
    var mode: mode_t
  }

  /// The file at `path` and its secrets; nil when there is no file.
  static func find(_ path: String) throws(CtlFailure) -> Found? {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let code = errno
      var link = stat()
      if code == ENOENT && lstat(path, &link) != 0 { return nil }
      throw CtlFailure("cannot read the secret file \(path): \(errnoText(code))", exitCode: .failure)
    }
    let secrets: [WebhookSecret]
    do {
      secrets = try WebhookSecretFile.read(path)
    } catch {
      throw CtlFailure(
        error.description + "\nNothing was written. Correct the file (or move it away to start anew), then "
          + "run this again.", exitCode: .failure)
    }
    guard let resolved = realpath(path, nil) else {
      throw CtlFailure("cannot resolve the secret file \(path): \(errnoText(errno))", exitCode: .failure)
    }
    defer { free(resolved) }
    return Found(
      path: String(cString: resolved), secrets: secrets, owner: info.st_uid, group: info.st_gid,
      mode: info.st_mode & 0o7777)
  }

  /// The ownership of a new file: the writer's, in `senderGroup` when it exists; mode 0640.
  static func newFileOwnership() -> (Ownership, groupName: String?) {
    guard let entry = getgrnam(senderGroup) else { return (Ownership(mode: newFileMode), nil) }
    return (Ownership(group: entry.pointee.gr_gid, mode: newFileMode), senderGroup)
  }

  /// Replaces the file at `path` with `secrets`, one a line, under `ownership`.
  static func write(_ secrets: [WebhookSecret], to path: String, ownership: Ownership) throws(CtlFailure) {
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    func failure(_ step: String, _ code: Int32) -> CtlFailure {
      CtlFailure(
        "cannot write the secret file \(path): \(step): \(errnoText(code)); the file is as it was",
        exitCode: .failure)
    }

    var template = Array("\(directory)/.\(name).XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw failure("cannot create a file in \(directory)", errno) }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    var isOpen = true
    var renamed = false
    defer {
      if isOpen { close(fd) }
      if !renamed { unlink(temporary) }
    }
    if ownership.owner != nil || ownership.group != nil {
      guard fchown(fd, ownership.owner ?? uid_t.max, ownership.group ?? gid_t.max) == 0 else {
        throw failure("cannot give it its owner and group", errno)
      }
    }
    guard fchmod(fd, ownership.mode) == 0 else { throw failure("cannot give it its mode", errno) }
    let text = secrets.map { $0.text + "\n" }.joined()
    guard writeAll(fd, Array(text.utf8)) else { throw failure("cannot write \(temporary)", errno) }
    guard fsync(fd) == 0 else { throw failure("cannot flush \(temporary) to the disk", errno) }
    isOpen = false
    guard close(fd) == 0 else { throw failure("cannot close \(temporary)", errno) }
    guard rename(temporary, path) == 0 else { throw failure("cannot rename \(temporary) to it", errno) }
    renamed = true
    // The rename itself made durable: the directory flushed too (at best: the file is whole
    // either way).
    let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if folder >= 0 {
      fsync(folder)
      close(folder)
    }
  }
}
