import ErrnoText
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// A small file trialwatchctl writes for the operator (a webhook endpoint's secret file, the HTTP
/// gateway's token file), found and replaced whole, never edited in place: the new content goes to
/// a temporary file beside it (same directory, so the same file system), which gets the file's
/// owner, group and mode before a byte is written, is flushed to the disk (`fsync`) and only then
/// renamed over the file. A reader sees the old file or the new one, never part of one; a failure
/// removes the temporary file and leaves the old one as it was.
struct FileReplacement {
  /// The mode of a new file: read and write for its owner, read for its group.
  static let newFileMode: mode_t = 0o640

  /// What the file is, in messages: `secret file`, `token file`.
  var kind: String

  /// Who owns a file, and its mode.
  struct Ownership: Equatable {
    /// Nil: the writer's own (a new file).
    var owner: uid_t?
    var group: gid_t?
    var mode: mode_t
  }

  /// A file as found.
  struct Existing {
    /// The file itself, a symbolic link followed: where the new one goes.
    var path: String
    var ownership: Ownership
  }

  /// The file at `path`, its owner, group and mode; nil when there is no file.
  func find(_ path: String) throws(CtlFailure) -> Existing? {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let code = errno
      var link = stat()
      if code == ENOENT && lstat(path, &link) != 0 { return nil }
      throw CtlFailure("cannot read the \(kind) \(path): \(errnoText(code))", exitCode: .failure)
    }
    guard let resolved = realpath(path, nil) else {
      throw CtlFailure("cannot resolve the \(kind) \(path): \(errnoText(errno))", exitCode: .failure)
    }
    defer { free(resolved) }
    return Existing(
      path: String(cString: resolved),
      ownership: Ownership(owner: info.st_uid, group: info.st_gid, mode: info.st_mode & 0o7777))
  }

  /// The failure for a file whose content cannot be read (`problem` names it and the line).
  static func unreadable(_ problem: String) -> CtlFailure {
    CtlFailure(
      problem + "\nNothing was written. Correct the file (or move it away to start anew), then "
        + "run this again.", exitCode: .failure)
  }

  /// The ownership of a new file: the writer's, in `group` when that group exists (then its name
  /// too); mode 0640.
  static func newFileOwnership(group: String) -> (Ownership, groupName: String?) {
    guard let entry = getgrnam(group) else { return (Ownership(mode: newFileMode), nil) }
    return (Ownership(group: entry.pointee.gr_gid, mode: newFileMode), group)
  }

  /// Replaces the file at `path` with `text`, under `ownership`. With `directoryMode`, the file's
  /// directory is made first when it does not exist (its parent must), with that mode.
  func write(_ text: String, to path: String, ownership: Ownership, directoryMode: mode_t? = nil)
    throws(CtlFailure)
  {
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    func failure(_ step: String, _ code: Int32) -> CtlFailure {
      CtlFailure(
        "cannot write the \(kind) \(path): \(step): \(errnoText(code)); the file is as it was",
        exitCode: .failure)
    }

    if let directoryMode {
      if mkdir(directory, directoryMode) == 0 {
        // The mode as asked, whatever the umask.
        guard chmod(directory, directoryMode) == 0 else {
          throw failure("cannot give the directory \(directory) its mode", errno)
        }
      } else if errno != EEXIST {
        throw failure("cannot create the directory \(directory)", errno)
      }
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
