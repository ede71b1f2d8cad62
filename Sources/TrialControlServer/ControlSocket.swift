import ErrnoText
import Logging
import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// Why the control server could not set up its socket. Names the path or descriptor.
public struct ControlServerError: Error, Hashable, Sendable, CustomStringConvertible {
  public let description: String

  static func system(_ what: String, errno: Int32) -> Self {
    Self(description: "\(what): \(errnoText(errno))")
  }

  static func inUse(path: String) -> Self {
    Self(description: "another process is already listening on the control socket \(path)")
  }

  static func notASocket(path: String) -> Self {
    Self(description: "\(path) exists and is not a socket; not removing it")
  }

  static func notListening(fd: Int32, _ problem: String) -> Self {
    Self(description: "file descriptor \(fd) is not a listening stream socket: \(problem)")
  }
}

/// The credentials of the process at the other end of a connection, from `SO_PEERCRED`.
public struct PeerCredentials: Hashable, Sendable, CustomStringConvertible {
  public var pid: Int32
  public var uid: UInt32
  public var gid: UInt32

  public var description: String { "pid \(pid) uid \(uid) gid \(gid)" }
}

/// The system calls of the control server. Every socket is non-blocking and close-on-exec.
public enum ControlSocket {
  enum ReadResult {
    case bytes(Int)
    case wouldBlock
    case endOfStream
    case failed(Int32)
  }

  enum WriteResult {
    case wrote(Int)
    case wouldBlock
    case failed(Int32)
  }

  static let listenBacklog: Int32 = 128

  /// Binds and listens on `path`: a stale socket left by an earlier run is removed only when
  /// nothing answers on it; the socket is made under a restrictive umask, then given mode
  /// `mode` and, when set, the group `group`.
  static func bind(path: String, group: UInt32?, mode: UInt32) throws(ControlServerError) -> Int32 {
    try removeStaleSocket(at: path)
    let fd: Int32
    do {
      fd = try UnixSocket.makeStreamSocket(nonBlocking: true)
    } catch {
      throw .system("cannot create the control socket", errno: error.errno)
    }
    let previousMask = umask(0o177)
    let bindResult: Int32
    do {
      bindResult = try UnixSocket.withAddress(path) { address, length in
        Glibc.bind(fd, address, length) == 0 ? 0 : errno
      }
    } catch {
      umask(previousMask)
      close(fd)
      throw .system("cannot use \(path) as the control socket (\(error.operation))", errno: error.errno)
    }
    umask(previousMask)
    guard bindResult == 0 else {
      close(fd)
      throw .system("cannot bind the control socket \(path)", errno: bindResult)
    }
    // chown only when the group differs: a socket made by a daemon whose own group it is
    // needs no chown(2), which a system-call filter may refuse.
    var made = stat()
    let hasGroup = group.map { group in stat(path, &made) == 0 && made.st_gid == group } ?? true
    if let group, !hasGroup, chown(path, UInt32.max, group) != 0 {
      let failure = errno
      close(fd)
      unlink(path)
      throw .system("cannot give the control socket \(path) group \(group)", errno: failure)
    }
    if chmod(path, mode_t(mode)) != 0 {
      let failure = errno
      close(fd)
      unlink(path)
      throw .system("cannot set the mode of the control socket \(path)", errno: failure)
    }
    guard listen(fd, listenBacklog) == 0 else {
      let failure = errno
      close(fd)
      unlink(path)
      throw .system("cannot listen on the control socket \(path)", errno: failure)
    }
    return fd
  }

  private static func removeStaleSocket(at path: String) throws(ControlServerError) {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      if errno == ENOENT { return }
      throw .system("cannot inspect \(path)", errno: errno)
    }
    guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
    let probe: Int32
    do {
      probe = try UnixSocket.makeStreamSocket(nonBlocking: true)
    } catch {
      throw .system("cannot probe \(path)", errno: error.errno)
    }
    defer { close(probe) }
    let result = try? UnixSocket.withAddress(path) { address, length in
      Glibc.connect(probe, address, length) == 0 ? 0 : errno
    }
    switch result {
    case ECONNREFUSED?, ENOENT?:
      if unlink(path) != 0 && errno != ENOENT {
        throw .system("cannot remove the stale socket \(path)", errno: errno)
      }
    case 0?, EAGAIN?, EINPROGRESS?:
      throw .inUse(path: path)
    case let failure?:
      throw .system("cannot probe \(path)", errno: failure)
    case nil:
      throw .system("cannot probe \(path)", errno: ENAMETOOLONG)
    }
  }

  /// Takes over a listening socket handed in (socket activation): checks it is one, and makes
  /// it non-blocking and close-on-exec.
  static func adopt(_ fd: Int32) throws(ControlServerError) {
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) == 0 else {
      throw .notListening(fd: fd, errnoText(errno))
    }
    guard value == Int32(SOCK_STREAM.rawValue) else { throw .notListening(fd: fd, "not a stream socket") }
    length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0, value == 1 else {
      throw .notListening(fd: fd, "not listening")
    }
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
      throw .system("cannot make descriptor \(fd) non-blocking", errno: errno)
    }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
  }

  private typealias Accept4 =
    @convention(c) (
      Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32
    ) -> Int32

  /// `accept4`, which Glibc's module leaves out (it is a GNU extension): it makes the new
  /// descriptor close-on-exec atomically, so that no process spawned meanwhile inherits it.
  private static let accept4: Accept4? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4").map {
    unsafeBitCast($0, to: Accept4.self)
  }

  static var hasAccept4: Bool { accept4 != nil }

  /// Accepts one pending connection, non-blocking and close-on-exec; nil when none is pending.
  static func accept(_ listener: Int32) -> Result<Int32?, ControlServerError> {
    while true {
      let fd: Int32
      if let accept4 {
        fd = accept4(listener, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
      } else {
        fd = Glibc.accept(listener, nil, nil)
        if fd >= 0 {
          _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
          _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
      }
      if fd >= 0 { return .success(fd) }
      switch errno {
      case EINTR, ECONNABORTED: continue
      case EAGAIN: return .success(nil)
      default: return .failure(.system("cannot accept a control connection", errno: errno))
      }
    }
  }

  /// The layout of Linux's `struct ucred`, which Glibc's module does not export.
  private struct UCred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
  }

  static func peerCredentials(_ fd: Int32) -> PeerCredentials? {
    var credentials = UCred()
    var length = socklen_t(MemoryLayout<UCred>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
      length == socklen_t(MemoryLayout<UCred>.size)
    else { return nil }
    return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
  }

  /// The name of the user `uid` in the user database, or nil when it has no entry.
  static func userName(_ uid: UInt32) -> String? {
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 4096)
    while true {
      let status = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
      if status == ERANGE && buffer.count < 1 << 20 {
        buffer = [CChar](repeating: 0, count: buffer.count * 4)
        continue
      }
      guard status == 0, result != nil, let name = entry.pw_name else { return nil }
      return String(cString: name)
    }
  }

  /// Who made a call, as journal fields: `CALLER_UID`, `CALLER_PID` and `CALLER_USER`, where
  /// the socket gave them.
  public static func metadata(of caller: PeerCredentials?) -> Logger.Metadata {
    guard let caller else { return ["caller": "unknown"] }
    var metadata: Logger.Metadata = ["caller_uid": "\(caller.uid)", "caller_pid": "\(caller.pid)"]
    if let name = userName(caller.uid) { metadata["caller_user"] = "\(name)" }
    return metadata
  }

  /// The groups of the user `uid` from the user database (primary `gid` included), or nil
  /// when the user has no entry.
  static func groups(ofUser uid: UInt32, primaryGroup gid: UInt32) -> [UInt32]? {
    guard let name = userName(uid) else { return nil }
    var count: Int32 = 32
    while true {
      var groups = [gid_t](repeating: 0, count: Int(count))
      var wanted = count
      if getgrouplist(name, gid, &groups, &wanted) >= 0 {
        return Array(groups.prefix(Int(wanted)))
      }
      guard wanted > count, wanted < 1 << 16 else { return nil }
      count = wanted
    }
  }

  static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
    while true {
      let count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
      if count > 0 { return .bytes(count) }
      if count == 0 { return .endOfStream }
      switch errno {
      case EINTR: continue
      case EAGAIN: return .wouldBlock
      default: return .failed(errno)
      }
    }
  }

  static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> WriteResult {
    while true {
      let count = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
      if count >= 0 { return .wrote(count) }
      switch errno {
      case EINTR: continue
      case EAGAIN: return .wouldBlock
      default: return .failed(errno)
      }
    }
  }

  static func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
  }

  static func unlinkPath(_ path: String) {
    _ = unlink(path)
  }

  static func currentUID() -> UInt32 { geteuid() }
}
