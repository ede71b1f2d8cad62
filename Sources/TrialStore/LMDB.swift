import CLMDB
import FoundationEssentials
import Synchronization
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

// The one file that speaks to LMDB. Everything above it sees environments, transactions,
// cursors and `StoreError`s, never LMDB's return codes or C types.

/// A named database (an ordered key-value table) inside an environment.
struct LMDBDatabase: Sendable {
  let handle: UInt32
  let name: String
}

/// Turns an LMDB or errno return code into a typed error. Success passes; `MDB_MAP_FULL`
/// becomes `MapFullSignal`, for the write loop to handle.
private func checkError(_ rc: Int32, _ operation: @autoclosure () -> String, path: String) throws {
  guard rc != MDB_SUCCESS else { return }
  if rc == MDB_MAP_FULL { throw MapFullSignal() }
  throw storeError(rc, operation(), path: path)
}

func storeError(_ rc: Int32, _ operation: String, path: String) -> StoreError {
  let message = String(cString: mdb_strerror(rc))
  switch rc {
  // LMDB reports a short write as EIO: a write the full file system cut short.
  case EIO where StoreFiles.fileSystemIsFull(path): fallthrough
  case ENOSPC, EDQUOT:
    return StoreError(
      .noSpace, path: path,
      problem: "no space left on the device while \(operation); the store keeps its last committed state")
  case EIO:
    let problem = "an I/O error while \(operation): the disk failed to write or sync"
    return StoreError(.ioError, path: path, problem: problem + "; the store keeps its last durable state")
  case EACCES, EPERM, EROFS:
    return StoreError(.accessDenied, path: path, problem: "access denied while \(operation) (\(message))")
  case MDB_INVALID:
    return StoreError(
      .damaged, path: path,
      problem:
        "not a readable store file: its header is invalid (not an LMDB file, overwritten, or truncated)")
  case MDB_VERSION_MISMATCH:
    return StoreError(
      .damaged, path: path, problem: "written by an incompatible LMDB version; the file was left untouched")
  case MDB_CORRUPTED, MDB_PAGE_NOTFOUND:
    return StoreError(.damaged, path: path, problem: "the file is corrupted (\(message)) while \(operation)")
  case MDB_PANIC:
    return StoreError(.ioError, path: path, problem: "an earlier write failed fatally (\(message))")
  case MDB_TXN_FULL:
    return StoreError(
      .tooLarge, path: path, problem: "the transaction has too many changes while \(operation)")
  case MDB_BAD_VALSIZE:
    return StoreError(.tooLarge, path: path, problem: "a key or value of unsupported size while \(operation)")
  case MDB_READERS_FULL:
    return StoreError(.failure, path: path, problem: "too many concurrent readers while \(operation)")
  default:
    return StoreError(.failure, path: path, problem: "\(operation) failed: \(message)")
  }
}

private func value(_ buffer: UnsafeRawBufferPointer) -> MDB_val {
  MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
}

private func buffer(_ value: MDB_val) -> UnsafeRawBufferPointer {
  UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
}

/// An LMDB environment: a store directory holding `data.mdb` (the store, mode 0600),
/// `lock.mdb` (LMDB's reader table) and `store.lock`, or a single store file (a backup).
///
/// The one writer takes an exclusive lock: a POSIX record lock on `store.lock` against other
/// processes (not inherited by child processes), and a registry of the directories this
/// process has open against a second environment in the same process. A reader (backup,
/// verification) never touches `store.lock`: it shares LMDB's lock file with the writer, as
/// LMDB allows. A store file is read without any lock file.
///
/// Read transactions may begin on any thread, many at once, alongside a write (`MDB_NOTLS`:
/// a read transaction holds a reader slot of its own, not its thread's). Everything else
/// (writes, growing the map, closing) needs the caller's exclusion: `LMDBTrialRepository`
/// keeps it with a `StoreGate`; the other users are single-threaded.
final class LMDBEnvironment: @unchecked Sendable {
  // @unchecked: see above; `env` changes only in `close`, which no read may overlap.

  let directory: String
  let dataPath: String
  let mode: Mode
  let maximumMapSize: Int
  var mapSize: Int
  var pageSize: Int
  /// How many times the map has grown since opening.
  private(set) var growthCount = 0
  private var env: OpaquePointer?
  var lockFD: Int32 = -1
  var directoryIdentity: OpenStores.Identity?
  private let openTransactions = Atomic<Int>(0)
  /// The reader slots of the lock file as opened (another process may have made it smaller).
  private(set) var readerSlots = Int(LMDBEnvironment.readerSlots)

  /// Opens (or, with `.writer(create: true)`, creates) the environment at `path`: the store
  /// directory, or for `.file` the store file itself.
  ///
  /// Before LMDB reads anything, the data file is checked: an empty one is refused (LMDB
  /// would silently initialise it). After LMDB has read the header, the file must hold every
  /// page the header says is in use. Opening never writes to the data file.
  init(_ path: String, mode: Mode, initialMapSize: Int, maximumMapSize: Int, maxDatabases: Int) throws {
    self.mode = mode
    self.directory = mode == .file ? FilePaths.parent(path) : path
    self.dataPath = mode == .file ? path : FilePaths.join(path, Self.dataFileName)
    self.maximumMapSize = max(maximumMapSize, initialMapSize)
    self.pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    self.mapSize = Self.roundUp(max(initialMapSize, 16 * pageSize), to: pageSize)
    do {
      try prepareDirectory()
      try openEnvironment(maxDatabases: maxDatabases)
      try checkDataFileAfterOpening()
    } catch {
      close()
      throw error
    }
  }

  deinit {
    close()
  }

  var isOpen: Bool { env != nil }

  /// Closes the environment and releases the directory lock. Idempotent.
  func close() {
    if let env {
      mdb_env_close(env)
      self.env = nil
    }
    releaseDirectory()
  }

  private func openEnvironment(maxDatabases: Int) throws {
    var handle: OpaquePointer?
    try checkError(mdb_env_create(&handle), "creating the environment", path: dataPath)
    env = handle
    try checkError(
      mdb_env_set_maxdbs(handle, UInt32(maxDatabases)), "setting the database count", path: dataPath)
    try checkError(mdb_env_set_mapsize(handle, mapSize), "setting the map size", path: dataPath)
    try checkError(
      mdb_env_set_maxreaders(handle, Self.readerSlots), "setting the reader slots", path: dataPath)
    // MDB_NOTLS: read transactions belong to the transaction object, not the thread, since
    // a serial dispatch queue may run on any thread.
    var flags = UInt32(MDB_NOTLS)
    if mode == .reader { flags |= UInt32(MDB_RDONLY) }
    if mode == .file { flags |= UInt32(MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR) }
    let target = mode == .file ? dataPath : directory
    try checkError(mdb_env_open(handle, target, flags, 0o600), "opening the store", path: dataPath)
    // This LMDB opens the data file without O_CLOEXEC: keep it out of child processes.
    var fd: Int32 = -1
    if mdb_env_get_fd(handle, &fd) == MDB_SUCCESS, fd >= 0 {
      _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }
    // Reader slots of processes that died (a backup killed midway) would keep the writer from
    // reusing pages: clear them.
    if mode != .file {
      var dead: Int32 = 0
      _ = mdb_reader_check(handle, &dead)
      var slots: UInt32 = 0
      if mdb_env_get_maxreaders(handle, &slots) == MDB_SUCCESS { readerSlots = Int(slots) }
    }
  }

  /// Map size, page size, pages in use and file size.
  func info() throws -> LMDBFileInfo {
    guard let env else { throw closedError() }
    var envInfo = MDB_envinfo()
    try checkError(mdb_env_info(env, &envInfo), "reading the environment", path: dataPath)
    var envStat = MDB_stat()
    try checkError(mdb_env_stat(env, &envStat), "reading the environment", path: dataPath)
    var st = stat()
    guard stat(dataPath, &st) == 0 else {
      throw storeError(errno, "examining the store file", path: dataPath)
    }
    return LMDBFileInfo(
      mapSize: envInfo.me_mapsize, pageSize: Int(envStat.ms_psize), lastPage: envInfo.me_last_pgno,
      fileSize: Int(st.st_size), lastTransaction: envInfo.me_last_txnid)
  }

  // MARK: Transactions

  /// Runs `body` in a read-only snapshot. With `keepDatabases`, the transaction is committed
  /// so that databases opened inside it stay open.
  func read<R>(keepDatabases: Bool = false, _ body: (LMDBTransaction) throws -> R) throws -> R {
    let txn = try begin(readOnly: true)
    do {
      let result = try body(txn)
      if keepDatabases { try txn.commit() } else { txn.abort() }
      return result
    } catch {
      txn.abort()
      throw error
    }
  }

  /// Runs `body` in a write transaction and commits it durably (LMDB syncs the data and the
  /// meta page before the commit returns). When the map fills, the transaction is aborted,
  /// the map grows and `body` runs again: `body` must act only through the transaction.
  /// `growing` runs each growth of the map: with no other transaction open in the process
  /// (readers on other threads shut out), as `mdb_env_set_mapsize` requires.
  func write<R>(
    growing: (() throws -> Void) throws -> Void = { try $0() }, _ body: (LMDBTransaction) throws -> R
  ) throws -> R {
    if try isNearlyFull() { try growing { try grow() } }
    while true {
      let txn = try begin(readOnly: false)
      do {
        let result = try body(txn)
        if txn.sawMapFull { throw MapFullSignal() }
        try txn.commit()
        return result
      } catch is MapFullSignal {
        txn.abort()
        try growing { try grow() }
      } catch {
        txn.abort()
        // A body that swallowed the map-full error still cannot commit: grow and run again.
        if txn.sawMapFull {
          try growing { try grow() }
          continue
        }
        throw error
      }
    }
  }

  private func begin(readOnly: Bool) throws -> LMDBTransaction {
    guard let env else { throw closedError() }
    var handle: OpaquePointer?
    let flags = readOnly ? UInt32(MDB_RDONLY) : 0
    var rc = mdb_txn_begin(env, nil, flags, &handle)
    if rc == MDB_MAP_RESIZED && openTransactions.load(ordering: .relaxed) == 0 {
      // Another process grew the map: adopt its size.
      try checkError(mdb_env_set_mapsize(env, 0), "adopting the new map size", path: dataPath)
      mapSize = try info().mapSize
      rc = mdb_txn_begin(env, nil, flags, &handle)
    }
    try checkError(rc, "beginning a transaction", path: dataPath)
    openTransactions.add(1, ordering: .relaxed)
    return LMDBTransaction(handle: handle!, readOnly: readOnly, environment: self)
  }

  fileprivate func transactionEnded() {
    openTransactions.subtract(1, ordering: .relaxed)
  }

  /// Doubles the map (up to `maximumMapSize`). Only with no transaction open in the process.
  func grow() throws {
    guard let env else { throw closedError() }
    guard openTransactions.load(ordering: .relaxed) == 0 else {
      throw StoreError(
        .misuse, path: directory, problem: "the map cannot grow while a transaction is open")
    }
    guard mapSize < maximumMapSize else {
      throw StoreError(
        .tooLarge, path: dataPath,
        problem: "the store has reached its maximum size of \(maximumMapSize) bytes")
    }
    let target = Self.roundUp(min(mapSize * 2, maximumMapSize), to: pageSize)
    try checkError(mdb_env_set_mapsize(env, target), "growing the map to \(target) bytes", path: dataPath)
    mapSize = try info().mapSize
    growthCount += 1
  }

  /// Writes a compacted copy of the store (free pages left out) to `fd`, from one read
  /// snapshot: consistent while a writer goes on committing.
  func copyCompacted(to fd: Int32) throws {
    guard let env else { throw closedError() }
    try checkError(mdb_env_copyfd2(env, fd, UInt32(MDB_CP_COMPACT)), "copying the store", path: dataPath)
  }
}

/// One LMDB transaction. Buffers it returns point into the map and stay valid until the
/// next change in this transaction or its end: decode them at once.
final class LMDBTransaction {
  private var handle: OpaquePointer?
  let isReadOnly: Bool
  // Unowned, unchecked: a transaction lives inside one call of its environment's `read` or
  // `write`, so the environment always outlives it (and the per-operation check is saved).
  private unowned(unsafe) let environment: LMDBEnvironment
  /// Set when an operation met a full map; such a transaction can only be aborted.
  fileprivate private(set) var sawMapFull = false

  fileprivate init(handle: OpaquePointer, readOnly: Bool, environment: LMDBEnvironment) {
    self.handle = handle
    self.isReadOnly = readOnly
    self.environment = environment
  }

  private var path: String { environment.dataPath }

  private func live() throws -> OpaquePointer {
    guard let handle else {
      throw StoreError(.misuse, path: environment.directory, problem: "the transaction has already ended")
    }
    return handle
  }

  private func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    if rc == MDB_MAP_FULL { sawMapFull = true }
    try checkError(rc, operation(), path: path)
  }

  fileprivate func commit() throws {
    let txn = try live()
    handle = nil
    environment.transactionEnded()
    let rc = mdb_txn_commit(txn)
    if rc == MDB_MAP_FULL { sawMapFull = true }
    try checkError(rc, "committing a transaction", path: path)
  }

  fileprivate func abort() {
    guard let txn = handle else { return }
    handle = nil
    environment.transactionEnded()
    mdb_txn_abort(txn)
  }

  /// Opens a named database; nil when it does not exist and `create` is false.
  func openDatabase(_ name: String, create: Bool) throws -> LMDBDatabase? {
    var dbi: MDB_dbi = 0
    let rc = mdb_dbi_open(try live(), name, create ? UInt32(MDB_CREATE) : 0, &dbi)
    if rc == MDB_NOTFOUND { return nil }
    if rc == MDB_INCOMPATIBLE {
      throw StoreError(.damaged, path: path, problem: "\"\(name)\" is not a database in this store file")
    }
    try check(rc, "opening the database \"\(name)\"")
    return LMDBDatabase(handle: dbi, name: name)
  }

  /// The main database, whose keys name the named databases.
  func mainDatabase() throws -> LMDBDatabase {
    var dbi: MDB_dbi = 0
    try check(mdb_dbi_open(try live(), nil, 0, &dbi), "opening the main database")
    return LMDBDatabase(handle: dbi, name: "main")
  }

  func get(_ db: LMDBDatabase, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
    var k = value(key)
    var v = MDB_val()
    let rc = mdb_get(try live(), db.handle, &k, &v)
    if rc == MDB_NOTFOUND { return nil }
    try check(rc, "reading from \"\(db.name)\"")
    return buffer(v)
  }

  /// Writes `data` under `key`; with `append`, a key after every key of `db` (else `.corruptRecord`).
  func put(
    _ db: LMDBDatabase, _ key: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer, append: Bool = false
  ) throws {
    var k = value(key)
    var v = value(data)
    let rc = mdb_put(try live(), db.handle, &k, &v, append ? UInt32(MDB_APPEND) : 0)
    if append && rc == MDB_KEYEXIST {
      throw StoreError(
        .corruptRecord, path: path,
        problem: "cannot append to \"\(db.name)\": a record at or after the new key is already there")
    }
    try check(rc, "writing to \"\(db.name)\"")
  }

  /// Removes the key; false when it was not there.
  @discardableResult
  func delete(_ db: LMDBDatabase, _ key: UnsafeRawBufferPointer) throws -> Bool {
    var k = value(key)
    let rc = mdb_del(try live(), db.handle, &k, nil)
    if rc == MDB_NOTFOUND { return false }
    try check(rc, "deleting from \"\(db.name)\"")
    return true
  }

  func entryCount(_ db: LMDBDatabase) throws -> Int {
    var st = MDB_stat()
    try check(mdb_stat(try live(), db.handle, &st), "counting \"\(db.name)\"")
    return st.ms_entries
  }

  /// Runs `body` with a cursor on `db`, closed when `body` returns.
  func withCursor<R>(_ db: LMDBDatabase, _ body: (LMDBCursor) throws -> R) throws -> R {
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(try live(), db.handle, &cursor), "opening a cursor on \"\(db.name)\"")
    let wrapper = LMDBCursor(handle: cursor!, database: db, transaction: self)
    defer { mdb_cursor_close(cursor) }
    return try body(wrapper)
  }

  /// Calls `body` with every record of `db`, in key order.
  func forEach(_ db: LMDBDatabase, _ body: (LMDBCursor.Item) throws -> Void) throws {
    try withCursor(db) { cursor in
      var item = try cursor.first()
      while let record = item {
        try body(record)
        item = try cursor.next()
      }
    }
  }

  fileprivate func cursorCheck(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    try check(rc, operation())
  }
}

/// A position in one database, moving in key order.
final class LMDBCursor {
  typealias Item = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

  private let handle: OpaquePointer
  private let database: LMDBDatabase
  // A cursor lives inside `withCursor`, within its transaction.
  private unowned(unsafe) let transaction: LMDBTransaction

  fileprivate init(handle: OpaquePointer, database: LMDBDatabase, transaction: LMDBTransaction) {
    self.handle = handle
    self.database = database
    self.transaction = transaction
  }

  private func move(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws -> Item? {
    var k = key.map(value) ?? MDB_val()
    var v = MDB_val()
    let rc = mdb_cursor_get(handle, &k, &v, op)
    if rc == MDB_NOTFOUND { return nil }
    try transaction.cursorCheck(rc, "reading \"\(database.name)\" in order")
    return (buffer(k), buffer(v))
  }

  /// The first entry.
  func first() throws -> Item? { try move(MDB_FIRST) }

  /// The entry after the current one.
  func next() throws -> Item? { try move(MDB_NEXT) }

  /// The first entry whose key is at or after `key`.
  func seek(_ key: UnsafeRawBufferPointer) throws -> Item? { try move(MDB_SET_RANGE, key: key) }

  /// Removes the entry the cursor is on; read on with `first()` or `seek(_:)`, not `next()`.
  func deleteCurrent() throws {
    try transaction.cursorCheck(mdb_cursor_del(handle, 0), "deleting from \"\(database.name)\"")
  }
}
