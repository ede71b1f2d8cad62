import FoundationEssentials
import Glibc
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// What a restore did.
public struct RestoreReport: Hashable, Sendable {
  /// The backup file put in place.
  public var backup: String
  /// The store directory.
  public var directory: String
  /// The store file now holding the backup.
  public var dataFile: String
  /// Where the store file it replaced was kept; nil when there was none.
  public var keptAside: String?
  /// The counts of the restored store.
  public var statistics: StoreStatistics
  /// The wall time of the last commit in the backup.
  public var lastSeen: Date?
  /// The store directory did not exist and was created.
  public var createdDirectory: Bool
  /// Records of subjects granted a trial once that the store it replaced held and the backup
  /// did not: written into the restored store, which keeps them.
  public var keptUses = 0
  /// The generation the restored event log goes on in (nil for a backup of schema 1, which has
  /// no log): cursors handed out by the store it replaced, or after the backup was taken, are
  /// refused (`LogGeneration`).
  public var generation: LogGeneration?
  /// The owner and group the store file was given (run as root): the store directory's.
  public var ownerID: UInt32?
  public var groupID: UInt32?

  init(
    backup: String, directory: String, dataFile: String, statistics: StoreStatistics, createdDirectory: Bool
  ) {
    self.backup = backup
    self.directory = directory
    self.dataFile = dataFile
    self.statistics = statistics
    self.createdDirectory = createdDirectory
  }
}

/// Puts a backup in place of a store, while no process has the store open.
public enum StoreRestore {
  /// Checks the copy of the backup about to be put in place; throws when it must be refused.
  public typealias Check = (_ file: String) throws -> Void

  /// The check in this process: the file must open as a trialwatch store of a schema this
  /// version reads, and verify without problems. (trialwatchd runs it in a child process, so
  /// that a damaged file cannot crash the restore.)
  public static func verifyInProcess(_ file: String) throws {
    let reader = try LMDBStoreReader(file: file)
    defer { reader.close() }
    let report = try reader.verify()
    guard report.isClean else { throw inconsistent(report, path: file) }
  }

  /// The error that refuses a file whose verification found problems, naming the first ones.
  public static func inconsistent(_ report: StoreCheckReport, path: String) -> StoreError {
    let first = report.problems.prefix(3).map(\.description).joined(separator: "; ")
    let count = "\(report.problemCount) problem\(report.problemCount == 1 ? "" : "s")"
    return StoreError(
      .inconsistent, path: path,
      problem:
        "not a consistent trialwatch store (\(count): \(first)); trialwatchd --verify-store FILE lists them")
  }

  /// Replaces the store in `directory` (created if missing) with the backup file `backup`.
  ///
  /// Refused while any process has the store open (trialwatchd, a backup, a verification).
  /// The backup is copied to a temporary file in the directory, synced and checked with
  /// `check` (a file that is not a trialwatch store, is damaged, inconsistent or of a newer
  /// schema is refused, and the store is left untouched). Run as root, the copy gets the
  /// store directory's owner and group; its mode is 0600. The store file it replaces stays
  /// beside it, as `data.mdb.replaced-<UTC time>` (a hard link made before the copy is renamed
  /// over `data.mdb`), so the store is whole at every moment; the directory is synced last.
  public static func restore(
    backup: String, into directory: String, now: Date, check: Check = verifyInProcess
  ) throws -> RestoreReport {
    let source = open(backup, O_RDONLY | O_CLOEXEC)
    guard source >= 0 else {
      if errno == ENOENT { throw StoreError(.notFound, path: backup, problem: "no such file") }
      throw storeError(errno, "opening the backup", path: backup)
    }
    defer { Glibc.close(source) }
    var sourceInfo = stat()
    guard fstat(source, &sourceInfo) == 0 else {
      throw storeError(errno, "examining the backup", path: backup)
    }
    guard sourceInfo.st_mode & S_IFMT == S_IFREG else {
      throw StoreError(
        .damaged, path: backup,
        problem: "is not a regular file; give a backup file (as trialwatchd --backup writes one)")
    }

    var created = false
    if !FileManager.default.fileExists(atPath: directory) {
      do {
        try FileManager.default.createDirectory(
          atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      } catch {
        throw StoreError(.failure, path: directory, problem: "could not create the store directory: \(error)")
      }
      created = true
    }
    let lock = try StoreExclusiveLock(directory: directory)
    defer { lock.release() }
    let dataFile = FilePaths.join(directory, LMDBEnvironment.dataFileName)
    var current = stat()
    let hasCurrent = stat(dataFile, &current) == 0
    if hasCurrent, current.st_dev == sourceInfo.st_dev, current.st_ino == sourceInfo.st_ino {
      throw StoreError(.misuse, path: backup, problem: "is the store's own file, not a backup of it")
    }
    removeStagedFiles(in: directory)

    let (staged, stagedPath) = try AtomicFile.temporaryFile(dataFile + ".restoring-", in: directory)
    var report: RestoreReport
    var backupLog: EventLogBounds?
    do {
      defer { Glibc.close(staged) }
      try copy(source, to: staged, from: backup, into: directory)
      guard fsync(staged) == 0 else { throw storeError(errno, "syncing the copy", path: stagedPath) }
      report = try naming(backup, for: stagedPath) {
        try check(stagedPath)
        let reader = try LMDBStoreReader(file: stagedPath)
        defer { reader.close() }
        var report = RestoreReport(
          backup: backup, directory: directory, dataFile: dataFile, statistics: try reader.statistics(),
          createdDirectory: created)
        report.lastSeen = try reader.read { try $0.lastSeenWallTime() }
        if report.statistics.schema >= 2 { backupLog = try reader.read { try $0.eventLogBounds() } }
        return report
      }
      let replaced = hasCurrent ? try replaced(storeFile: dataFile) : nil
      // A generation neither the backup's log nor the replaced store's has had.
      report.generation = backupLog.map {
        $0.generation.successor(
          began: $0.last.sequence, parent: $0.generation.number, other: replaced?.generation)
      }
      report.keptUses = try merge(
        replaced?.uses ?? [], generation: report.generation, into: stagedPath, in: directory)
      try StoreFiles.giveToDirectoryOwner(staged, directory: directory, path: stagedPath)
      guard fchmod(staged, 0o600) == 0 else { throw storeError(errno, "setting the mode", path: stagedPath) }
      if hasCurrent { report.keptAside = try keepAside(dataFile, now: now) }
      guard rename(stagedPath, dataFile) == 0 else {
        throw storeError(errno, "putting the copy in place", path: dataFile)
      }
    } catch {
      unlink(stagedPath)
      throw error
    }
    try AtomicFile.syncDirectory(directory)
    if geteuid() == 0 {
      var st = stat()
      if stat(directory, &st) == 0 {
        report.ownerID = st.st_uid
        report.groupID = st.st_gid
        // Files an earlier run as root may have left: the daemon's user must open them.
        for name in [LMDBEnvironment.lockFileName, LMDBEnvironment.storeLockFileName] {
          _ = chown(FilePaths.join(directory, name), st.st_uid, st.st_gid)
        }
      }
    }
    return report
  }

  /// Runs `body`, naming `backup` instead of the staged copy in the errors it throws.
  private static func naming<R>(_ backup: String, for staged: String, _ body: () throws -> R) throws -> R {
    do {
      return try body()
    } catch let error as StoreError where error.path == staged {
      throw StoreError(error.kind, path: backup, problem: error.problem)
    }
  }

  private static func copy(_ source: Int32, to target: Int32, from backup: String, into directory: String)
    throws
  {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count >= 0 else { throw storeError(errno, "reading the backup", path: backup) }
      if count == 0 { return }
      var written = 0
      while written < count {
        let done = buffer.withUnsafeBytes { Glibc.write(target, $0.baseAddress! + written, count - written) }
        if done < 0 && errno == EINTR { continue }
        guard done > 0 else {
          let code = errno
          if code == ENOSPC || code == EDQUOT {
            throw StoreError(
              .noSpace, path: directory,
              problem: "no space left on the device for a copy of the backup; the store was not changed")
          }
          throw storeError(code, "copying the backup into the store directory", path: directory)
        }
        written += done
      }
    }
  }

  /// Links the current store file to `data.mdb.replaced-<UTC time>` (with `-2`, `-3`… when
  /// taken); returns that path.
  private static func keepAside(_ dataFile: String, now: Date) throws -> String {
    let stamp = utcStamp(now)
    var attempt = 1
    while true {
      let aside = dataFile + ".replaced-" + stamp + (attempt == 1 ? "" : "-\(attempt)")
      if link(dataFile, aside) == 0 { return aside }
      guard errno == EEXIST else { throw storeError(errno, "keeping the replaced store file", path: aside) }
      attempt += 1
    }
  }

  /// `20250615T150640Z`: the UTC time in the names of the store files kept aside.
  static func utcStamp(_ now: Date) -> String {
    let time = CivilTime(now)
    return zeroPadded(time.year, width: 4) + zeroPadded(time.month, width: 2) + zeroPadded(time.day, width: 2)
      + "T" + zeroPadded(time.hour, width: 2) + zeroPadded(time.minute, width: 2)
      + zeroPadded(time.second, width: 2) + "Z"
  }

  /// Copies a restore killed midway left behind (the lock shows no restore is running), and the
  /// directories it merged in.
  private static func removeStagedFiles(in directory: String) {
    let prefix = LMDBEnvironment.dataFileName + ".restoring-"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
      if name.hasPrefix(prefix) { unlink(FilePaths.join(directory, name)) }
      if name.hasPrefix(mergingPrefix) { removeTree(FilePaths.join(directory, name)) }
    }
  }
}
