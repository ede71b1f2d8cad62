import Foundation

#if canImport(Glibc)
  import Glibc
#endif

// The store's directory and files as the operating system sees them, before and around
// LMDB: the directory, its lock, the data file's first checks, and mapped pages.

extension LMDBEnvironment {
  func prepareDirectory(create: Bool) throws {
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
    guard stat(directory, &st) == 0 else {
      throw storeError(errno, "examining the store directory", path: directory)
    }
    let identity = OpenStores.Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    let inUse = StoreError(
      .inUse, path: directory,
      problem: "the store is already open (by another process, or another repository in this one)")
    guard OpenStores.shared.insert(identity) else { throw inUse }
    directoryIdentity = identity
    let lockPath = (directory as NSString).appendingPathComponent("store.lock")
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw storeError(errno, "opening the store's lock file", path: lockPath) }
    lockFD = fd
    var lock = Glibc.flock()
    lock.l_type = Int16(F_WRLCK)
    lock.l_whence = Int16(SEEK_SET)
    guard fcntl(fd, F_SETLK, &lock) == 0 else {
      let code = errno
      if code == EAGAIN || code == EACCES { throw inUse }
      throw storeError(code, "locking the store", path: lockPath)
    }
  }

  func checkDataFileBeforeOpening(create: Bool) throws {
    var st = stat()
    guard stat(dataPath, &st) == 0 else {
      guard errno == ENOENT else { throw storeError(errno, "examining the store file", path: dataPath) }
      guard create else {
        throw StoreError(.notFound, path: dataPath, problem: "no store here: the store file does not exist")
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
    for line in Self.readProcFile("/proc/self/maps").split(separator: "\n") {
      // start-end perms offset dev inode path
      let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
      guard fields.count == 6, UInt64(fields[4]) == inode,
        fields[5].hasSuffix("/" + Self.dataFileName)
      else { continue }
      let range = fields[0].split(separator: "-")
      guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
        end > start, let address = UnsafeMutableRawPointer(bitPattern: start)
      else { continue }
      if madvise(address, Int(end - start), MADV_DONTNEED) == 0 { released += Int(end - start) }
    }
    return released
  }

  private static func readProcFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { Glibc.close(fd) }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      data.append(contentsOf: chunk[0..<count])
    }
    return String(decoding: data, as: UTF8.self)
  }
}

/// The store directories open in this process. POSIX record locks belong to the process,
/// so they cannot tell two environments of one process apart: this registry does.
final class OpenStores: @unchecked Sendable {
  struct Identity: Hashable {
    var device: UInt64
    var inode: UInt64
  }

  static let shared = OpenStores()
  private let lock = NSLock()
  private var open: Set<Identity> = []

  /// False when the directory is already open.
  func insert(_ identity: Identity) -> Bool {
    lock.withLock { open.insert(identity).inserted }
  }

  func remove(_ identity: Identity) {
    _ = lock.withLock { open.remove(identity) }
  }
}
