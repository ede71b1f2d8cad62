import FoundationEssentials
import Glibc
import Synchronization
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

// The store's directory and files as the operating system sees them, before and around
// LMDB: the directory, its lock, the data file's first checks, and mapped pages.

extension LMDBEnvironment {
  convenience init(
    directory: String, initialMapSize: Int, maximumMapSize: Int, maxDatabases: Int, create: Bool
  )
    throws
  {
    try self.init(
      directory, mode: .writer(create: create), initialMapSize: initialMapSize,
      maximumMapSize: maximumMapSize,
      maxDatabases: maxDatabases)
  }

  static let storeLockFileName = "store.lock"

  /// The writer: finds or creates the directory, locks it exclusively, then checks the store
  /// file. A reader: finds the directory and checks the store file, then makes sure LMDB's
  /// lock file exists without ever leaving it to root (see `StoreFiles.open`). A store file:
  /// checks it. (See `checkDataFileBeforeOpening`.)
  func prepareDirectory() throws {
    switch mode {
    case .file:
      try checkDataFileBeforeOpening()
    case .reader:
      try findDirectory(create: false)
      try checkDataFileBeforeOpening()
      try register()
      // LMDB would create a missing lock file itself, owned by whoever runs this.
      let lockPath = FilePaths.join(directory, Self.lockFileName)
      do {
        Glibc.close(try StoreFiles.open(lockPath, creatingIn: directory))
      } catch let error as StoreError where error.kind == .accessDenied && access(directory, W_OK) != 0 {
        // A read-only directory: LMDB reads without a lock file.
      }
    case .writer(let create):
      try findDirectory(create: create)
      try register()
      let lockPath = FilePaths.join(directory, Self.storeLockFileName)
      lockFD = try StoreFiles.open(lockPath, creatingIn: directory)
      guard try StoreFiles.lock(lockFD, exclusive: true, path: lockPath) else { throw inUse() }
      try checkDataFileBeforeOpening()
    }
  }

  private func inUse() -> StoreError {
    StoreError(
      .inUse, path: directory,
      problem: "the store is already open (by another process, or another repository in this one)")
  }

  private func findDirectory(create: Bool) throws {
    var st = stat()
    if stat(directory, &st) != 0 {
      guard errno == ENOENT else {
        throw storeError(errno, "looking for the store directory", path: directory)
      }
      guard create else {
        throw StoreError(.notFound, path: directory, problem: "no store here: the directory does not exist")
      }
      do {
        try FileManager.default.createDirectory(
          atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      } catch {
        throw StoreError(.failure, path: directory, problem: "could not create the store directory: \(error)")
      }
    } else if st.st_mode & S_IFMT != S_IFDIR {
      throw StoreError(.failure, path: directory, problem: "is not a directory (a store is a directory)")
    }
  }

  /// Enters the directory in this process's registry: LMDB must not have one environment
  /// open twice in a process (closing the second would drop the first one's locks).
  private func register() throws {
    guard let identity = try OpenStores.shared.enter(directory) else { throw inUse() }
    directoryIdentity = identity
  }

  /// Releases the directory lock and the registry entry. Idempotent.
  func releaseDirectory() {
    if lockFD >= 0 {
      Glibc.close(lockFD)
      lockFD = -1
    }
    if let directoryIdentity {
      OpenStores.shared.remove(directoryIdentity)
      self.directoryIdentity = nil
    }
  }

  func checkDataFileBeforeOpening() throws {
    var st = stat()
    guard stat(dataPath, &st) == 0 else {
      guard errno == ENOENT else { throw storeError(errno, "examining the store file", path: dataPath) }
      guard mode == .writer(create: true) else {
        throw StoreError(
          .notFound, path: dataPath,
          problem: mode == .file ? "no such file" : "no store here: the store file does not exist")
      }
      return
    }
    guard st.st_mode & S_IFMT == S_IFREG else {
      throw StoreError(.damaged, path: dataPath, problem: "is not a regular file")
    }
    guard st.st_size > 0 else {
      throw StoreError(
        .damaged, path: dataPath,
        problem: "the store file is empty (0 bytes), so it is truncated or was never written; "
          + "it was left untouched (move it away to start a new store)")
    }
  }

  func checkDataFileAfterOpening() throws {
    let info = try self.info()
    pageSize = info.pageSize
    mapSize = info.mapSize
    let (pages, overflow) = (info.lastPage + 1).multipliedReportingOverflow(by: info.pageSize)
    guard !overflow, info.fileSize >= pages else {
      throw StoreError(
        .damaged, path: dataPath,
        problem: "the store file is truncated: it has \(info.fileSize) bytes but its pages in use "
          + "end at \(overflow ? "more" : "\(pages)") bytes; it was left untouched")
    }
  }

  static func roundUp(_ value: Int, to unit: Int) -> Int {
    (value + unit - 1) / unit * unit
  }

  /// Whether more than three quarters of the map are in use: a write grows it first, so
  /// that most transactions never meet a full map.
  func isNearlyFull() throws -> Bool {
    let info = try self.info()
    return (info.lastPage + 1) * info.pageSize > mapSize / 4 * 3
  }

  /// Drops the pages of the store file mapped into this process (after a full scan, they
  /// count in its resident size). They stay in the page cache; a later read maps them
  /// again. Returns the number of bytes of mapping advised.
  @discardableResult
  func releaseMappedPages() -> Int {
    guard isOpen else { return 0 }
    var st = stat()
    guard stat(dataPath, &st) == 0 else { return 0 }
    let inode = UInt64(st.st_ino)
    var released = 0
    let maps = Self.readProcFile("/proc/self/maps")
    let suffix = Array("/\(Self.dataFileName)".utf8)
    var lineStart = maps.startIndex
    while lineStart < maps.endIndex {
      let end = maps[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? maps.endIndex
      defer { lineStart = end + 1 }
      // Most lines (every one of a sanitizer's many) are not the store file's: only lines that
      // end with its name are parsed.
      guard end - lineStart > suffix.count, maps[(end - suffix.count)..<end].elementsEqual(suffix) else {
        continue
      }
      // start-end perms offset dev inode path
      let line = String(decoding: maps[lineStart..<end], as: UTF8.self)
      let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
      guard fields.count == 6, UInt64(fields[4]) == inode else { continue }
      let range = fields[0].split(separator: "-")
      guard range.count == 2, let first = UInt(range[0], radix: 16), let last = UInt(range[1], radix: 16),
        last > first, let address = UnsafeMutableRawPointer(bitPattern: first)
      else { continue }
      if madvise(address, Int(last - first), MADV_DONTNEED) == 0 { released += Int(last - first) }
    }
    return released
  }

  private static func readProcFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { Glibc.close(fd) }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      data.append(contentsOf: chunk[0..<count])
    }
    return data
  }
}

/// The store directories open in this process. POSIX record locks belong to the process,
/// so they cannot tell two environments of one process apart: this registry does, by device
/// and inode. Each entry holds a descriptor of its directory, which keeps the inode allocated
/// while the entry lives: a store directory removed while open cannot hand its inode to a new
/// directory, so no other directory is ever taken for one that is open, and one renamed while
/// open is still known under its new name.
final class OpenStores: Sendable {
  struct Identity: Hashable {
    var device: UInt64
    var inode: UInt64
  }

  static let shared = OpenStores()
  /// The open directories: the descriptor that holds each one.
  private let open = Mutex<[Identity: Int32]>([:])

  /// Enters `directory`; nil when it is already open in this process.
  func enter(_ directory: String) throws -> Identity? {
    let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw storeError(errno, "examining the store directory", path: directory) }
    var st = stat()
    guard fstat(fd, &st) == 0 else {
      let code = errno
      Glibc.close(fd)
      throw storeError(code, "examining the store directory", path: directory)
    }
    let identity = Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    let entered = open.withLock { open in
      guard open[identity] == nil else { return false }
      open[identity] = fd
      return true
    }
    guard entered else {
      Glibc.close(fd)
      return nil
    }
    return identity
  }

  /// Whether a directory of this identity is open.
  func contains(_ identity: Identity) -> Bool {
    open.withLock { $0[identity] != nil }
  }

  func remove(_ identity: Identity) {
    if let fd = open.withLock({ $0.removeValue(forKey: identity) }) { Glibc.close(fd) }
  }
}

/// The files of a store directory as the system sees them: opened and created so that none is
/// ever left to root, locked with POSIX record locks.
enum StoreFiles {
  /// Opens `path` read-write and close-on-exec, creating it (mode 0600) when missing. A file
  /// root creates gets the owner and group of `directory`: the store's files must stay
  /// openable by the store's user (the daemon runs as `trialwatch`, a backup may run as root).
  static func open(_ path: String, creatingIn directory: String) throws -> Int32 {
    while true {
      let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
      if fd >= 0 { return fd }
      guard errno == ENOENT else { throw storeError(errno, "opening the file", path: path) }
      let created = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      guard created >= 0 else {
        if errno == EEXIST { continue }
        throw storeError(errno, "creating the file", path: path)
      }
      do {
        try giveToDirectoryOwner(created, directory: directory, path: path)
      } catch {
        unlink(path)
        Glibc.close(created)
        throw error
      }
      return created
    }
  }

  /// Run as root, gives the file the owner and group of `directory` (as another user, a
  /// file it creates can only be its own).
  static func giveToDirectoryOwner(_ fd: Int32, directory: String, path: String) throws {
    guard geteuid() == 0 else { return }
    var st = stat()
    guard stat(directory, &st) == 0 else {
      throw storeError(errno, "examining the directory", path: directory)
    }
    guard fchown(fd, st.st_uid, st.st_gid) == 0 else {
      throw storeError(errno, "giving the file the directory's owner", path: path)
    }
  }

  /// No block of the file system holding `path` is left to write (the store directory's, when
  /// `path` is a store file).
  static func fileSystemIsFull(_ path: String) -> Bool {
    var info = statvfs()
    guard statvfs(path, &info) == 0 || statvfs(AtomicFile.directory(of: path), &info) == 0 else {
      return false
    }
    return info.f_bavail == 0
  }

  /// Takes a POSIX record lock on bytes `start..<start+length` of the file (0 bytes: all of
  /// it), without waiting: false when another process holds a conflicting lock.
  static func lock(_ fd: Int32, exclusive: Bool, start: Int = 0, length: Int = 0, path: String) throws -> Bool
  {
    var lock = Glibc.flock()
    lock.l_type = Int16(exclusive ? F_WRLCK : F_RDLCK)
    lock.l_whence = Int16(SEEK_SET)
    lock.l_start = start
    lock.l_len = length
    while fcntl(fd, F_SETLK, &lock) != 0 {
      let code = errno
      if code == EINTR { continue }
      if code == EAGAIN || code == EACCES { return false }
      throw storeError(code, "locking", path: path)
    }
    return true
  }
}

/// Held while a restore replaces the store file: no process has the store open (neither
/// trialwatchd, which holds `store.lock`, nor a backup or verification, which share LMDB's
/// `lock.mdb`), and none opens it until `release()`: trialwatchd then fails to start as in
/// use, and an LMDB reader waits.
final class StoreExclusiveLock {
  let directory: String
  private var identity: OpenStores.Identity?
  private var descriptors: [Int32] = []

  init(directory: String) throws {
    self.directory = directory
    do {
      guard let identity = try OpenStores.shared.enter(directory) else {
        throw StoreError(.inUse, path: directory, problem: "the store is open in this process")
      }
      self.identity = identity
      let storeLock = FilePaths.join(directory, LMDBEnvironment.storeLockFileName)
      descriptors.append(try StoreFiles.open(storeLock, creatingIn: directory))
      guard try StoreFiles.lock(descriptors[0], exclusive: true, path: storeLock) else {
        throw StoreError(
          .inUse, path: directory,
          problem: "trialwatchd has the store open; stop trialwatch.service first "
            + "(and trialwatch.socket and trialwatch-report.socket, which would start it again)")
      }
      // LMDB holds a shared lock on the first byte of its lock file while an environment is open.
      let lmdbLock = FilePaths.join(directory, LMDBEnvironment.lockFileName)
      let fd = Glibc.open(lmdbLock, O_RDWR | O_CLOEXEC)
      if fd < 0 && errno != ENOENT { throw storeError(errno, "opening LMDB's lock file", path: lmdbLock) }
      if fd >= 0 {
        descriptors.append(fd)
        guard try StoreFiles.lock(fd, exclusive: true, length: 1, path: lmdbLock) else {
          throw StoreError(
            .inUse, path: directory,
            problem: "another process is reading the store (a backup or a verification?); "
              + "try again when it has finished")
        }
      }
    } catch {
      release()
      throw error
    }
  }

  deinit {
    release()
  }

  func release() {
    for fd in descriptors { Glibc.close(fd) }
    descriptors = []
    if let identity { OpenStores.shared.remove(identity) }
    identity = nil
  }
}

// The environment's constants and the parts of it that need no LMDB call (LMDB.swift holds
// the rest).
extension LMDBEnvironment {
  static let dataFileName = "data.mdb"
  static let lockFileName = "lock.mdb"
  /// LMDB's reader slots (its default is 126): every read transaction open at once, in every
  /// process sharing the lock file, takes one. The lock file's creator decides the number.
  static let readerSlots: UInt32 = 510

  /// How the environment is opened.
  enum Mode: Equatable {
    /// The one writer; creates a missing store when asked.
    case writer(create: Bool)
    /// Read-only, alongside the writer or without one, through LMDB's shared lock file.
    case reader
    /// One store file (a backup), read-only, with no lock file at all.
    case file
  }

  func closedError() -> StoreError {
    StoreError(.closed, path: directory, problem: "the store has been closed")
  }
}
