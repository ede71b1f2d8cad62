import FoundationEssentials
import Glibc
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// Read-only access to a store from another process than trialwatchd, while it runs or while
/// it is stopped: `trialwatchd --backup` and `--verify-store`. It never takes the daemon's lock
/// (`store.lock`) and never writes to the store file: it shares LMDB's lock file with the
/// daemon and reads one consistent snapshot while the daemon goes on committing, as LMDB
/// allows. A lock file it has to create gets the store directory's owner, so that running it as
/// root leaves nothing in the directory the daemon's user cannot open. A backup file (a single
/// store file) is read without any lock file.
///
/// Not thread-safe: one operation at a time.
public final class LMDBStoreReader {
  /// The store directory, or the backup file.
  public let path: String
  private let environment: LMDBEnvironment
  private let databases: LMDBTrialRepository.Databases

  /// The address space reserved for reading: as much as the writer's map may ever grow to, so
  /// that a snapshot taken while the daemon grows its map still fits.
  static let mapSize = 1 << 40

  /// Opens the store in `directory`, read-only.
  /// - Throws: `StoreError` as `LMDBTrialRepository.init` does (`.notFound` for no store,
  ///   `.damaged`, `.newerSchema`), but never `.inUse`: the daemon may have it open.
  public convenience init(directory: String) throws {
    try self.init(directory, mode: .reader)
  }

  /// Opens a backup file (one store file, as `backup(to:)` writes it), read-only.
  public convenience init(file: String) throws {
    try self.init(file, mode: .file)
  }

  /// Opens `path`: a store directory; the `data.mdb` of one (opened as its directory, sharing
  /// the daemon's lock file, since the daemon may be writing to it); or any other file as a
  /// backup file.
  public static func open(_ path: String) throws -> LMDBStoreReader {
    var st = stat()
    guard stat(path, &st) == 0 else {
      if errno == ENOENT { throw StoreError(.notFound, path: path, problem: "no such file or directory") }
      throw storeError(errno, "examining the path", path: path)
    }
    if st.st_mode & S_IFMT == S_IFDIR { return try LMDBStoreReader(directory: path) }
    let directory = AtomicFile.directory(of: path)
    if FilePaths.lastComponent(path) == LMDBEnvironment.dataFileName,
      FileManager.default.fileExists(atPath: directory + "/" + LMDBEnvironment.storeLockFileName)
    {
      return try LMDBStoreReader(directory: directory)
    }
    return try LMDBStoreReader(file: path)
  }

  init(_ path: String, mode: LMDBEnvironment.Mode) throws {
    self.path = path
    environment = try LMDBEnvironment(
      path, mode: mode, initialMapSize: Self.mapSize, maximumMapSize: Self.mapSize,
      maxDatabases: LMDBTrialRepository.Databases.names.count)
    do {
      databases = try LMDBTrialRepository.openDatabases(environment, create: false)
    } catch {
      environment.close()
      throw error
    }
  }

  deinit {
    environment.close()
  }

  /// The store file read.
  public var dataFilePath: String { environment.dataPath }

  /// Closes the store; later calls throw `StoreError` `.closed`. Idempotent.
  public func close() {
    environment.close()
  }

  public func statistics() throws -> StoreStatistics {
    try LMDBTrialRepository.statistics(environment, databases)
  }

  /// Runs `body` in one read-only snapshot of the store.
  public func read<R>(_ body: (any TrialReadTransaction) throws -> R) throws -> R {
    try environment.read { txn in
      try body(StoreReadTransaction(txn, databases: databases, path: environment.dataPath))
    }
  }

  /// Checks every record in one snapshot (see `StoreCheckReport`); problems are in the report,
  /// not thrown. Throws only when the store cannot be read at all.
  public func verify() throws -> StoreCheckReport {
    try environment.read { txn in
      StoreVerifier(txn, databases: databases, path: environment.dataPath).run()
    }
  }

  /// Writes a consistent, compacted copy of the store to `file`, atomically: a temporary file
  /// in `file`'s directory is written, synced, read back and renamed to `file`, and the
  /// directory synced; `file` never holds half a copy. The copy is one store file (mode 0600),
  /// read back for the report.
  public func backup(to file: String) throws -> BackupReport {
    try StoreBackup.write(to: file, from: environment)
  }
}
