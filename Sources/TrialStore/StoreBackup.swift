import FoundationEssentials
import Glibc
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// What a backup wrote, read back from the file it wrote.
public struct BackupReport: Hashable, Sendable {
  /// The backup file.
  public var file: String
  /// Its size in bytes.
  public var bytes: Int
  /// The counts of the copy.
  public var statistics: StoreStatistics
  /// The wall time of the last commit in the copy.
  public var lastSeen: Date?
}

enum StoreBackup {
  /// Copies the store open in `environment` to `target` atomically, compacted, from one
  /// snapshot (see `LMDBStoreReader.backup(to:)`).
  static func write(to target: String, from environment: LMDBEnvironment) throws -> BackupReport {
    if environment.mode != .file {
      let store = realpath(environment.directory)
      let targetDirectory = realpath(AtomicFile.directory(of: target))
      if store != nil, store == targetDirectory {
        throw StoreError(
          .misuse, path: target,
          problem: "is inside the store directory; write the backup somewhere else (another disk, ideally)")
      }
    }
    return try copy(to: target, from: environment)
  }

  /// Writes the compacted copy to `target` atomically, synced and read back, wherever
  /// `target` is (an upgrade keeps one inside the store directory).
  static func copy(to target: String, from environment: LMDBEnvironment) throws -> BackupReport {
    var report: BackupReport?
    try AtomicFile.write(target) { fd, temporary in
      do {
        try environment.copyCompacted(to: fd)
      } catch let error as StoreError where error.kind == .noSpace {
        throw StoreError(
          .noSpace, path: target,
          problem: "no space left on the device while writing the backup; nothing was written")
      }
      // Read back what was written: a store file this version opens, and its counts.
      let copy = try LMDBStoreReader(file: temporary)
      defer { copy.close() }
      let statistics = try copy.statistics()
      report = BackupReport(
        file: target, bytes: statistics.fileSize, statistics: statistics,
        lastSeen: try copy.read { try $0.lastSeenWallTime() })
    }
    return report!
  }

  private static func realpath(_ path: String) -> String? {
    guard let resolved = Glibc.realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}

/// A file written whole or not at all.
enum AtomicFile {
  /// The directory a path names a file in ("." for a bare name).
  static func directory(of path: String) -> String {
    let directory = FilePaths.parent(path)
    return directory.isEmpty ? "." : directory
  }

  /// Writes `path` through `body`, which writes the open descriptor of a temporary file (mode
  /// 0600) in the same directory, given with its path. Then the temporary file is synced and
  /// renamed to `path`, and the directory synced. On any failure the temporary file is removed
  /// and `path` is left as it was.
  static func write(_ path: String, _ body: (Int32, String) throws -> Void) throws {
    let directory = directory(of: path)
    var st = stat()
    if stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
      throw StoreError(.misuse, path: path, problem: "is a directory; give the path of a file to write")
    }
    guard stat(directory, &st) == 0 else {
      if errno == ENOENT {
        throw StoreError(.notFound, path: directory, problem: "the directory does not exist")
      }
      throw storeError(errno, "examining the directory", path: directory)
    }
    let (fd, temporary) = try temporaryFile(
      directory + "/." + FilePaths.lastComponent(path) + ".tmp-", in: directory)
    do {
      defer { Glibc.close(fd) }
      try body(fd, temporary)
      guard fsync(fd) == 0 else { throw storeError(errno, "syncing the file", path: temporary) }
    } catch {
      unlink(temporary)
      throw error
    }
    guard rename(temporary, path) == 0 else {
      let code = errno
      unlink(temporary)
      throw storeError(code, "putting the file in place", path: path)
    }
    try syncDirectory(directory)
  }

  /// Creates a new file (mode 0600, close-on-exec) named `prefix` and six random characters.
  static func temporaryFile(_ prefix: String, in directory: String) throws -> (Int32, String) {
    var template = Array((prefix + "XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw storeError(errno, "creating a file in the directory", path: directory) }
    _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    return (fd, template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
  }

  /// Makes a rename or link in `directory` durable.
  static func syncDirectory(_ directory: String) throws {
    let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw storeError(errno, "opening the directory to sync it", path: directory) }
    defer { Glibc.close(fd) }
    guard fsync(fd) == 0 else { throw storeError(errno, "syncing the directory", path: directory) }
  }
}
