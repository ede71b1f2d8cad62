import ErrnoText

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The system calls on Unix stream sockets that the client and the server share, with
/// `EINTR` retried and errors as `errno` values.
public enum UnixSocket {
  public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done, e.g. `connect`.
    public var operation: String
    public var errno: Int32

    public init(_ operation: String, errno: Int32) {
      self.operation = operation
      self.errno = errno
    }

    public var reason: String { errnoText(errno) }
    public var description: String { "\(operation): \(reason)" }
  }

  /// The longest path a socket address holds (without its terminating NUL).
  public static var maximumPathLength: Int {
    MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
  }

  /// Calls `body` with the address of the socket at `path`.
  public static func withAddress<R>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
  ) throws(Failure) -> R {
    let bytes = Array(path.utf8)
    guard !bytes.isEmpty, bytes.count <= maximumPathLength else {
      throw Failure("socket path of \(bytes.count) bytes (at most \(maximumPathLength))", errno: ENAMETOOLONG)
    }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
    }
  }

  /// A new stream socket, close-on-exec, optionally non-blocking.
  public static func makeStreamSocket(nonBlocking: Bool = false) throws(Failure) -> Int32 {
    #if canImport(Glibc)
      var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
      if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
    #else
      let type = SOCK_STREAM
    #endif
    let fd = socket(AF_UNIX, type, 0)
    guard fd >= 0 else { throw Failure("socket", errno: errno) }
    return fd
  }

  /// Connects a blocking socket to `path`; returns the connected descriptor. With `timeout`
  /// (seconds), connecting to a listener whose backlog is full, and every later read and
  /// write, fail with `EAGAIN` once it passes instead of waiting on.
  public static func connect(to path: String, timeout: Double? = nil) throws(Failure) -> Int32 {
    let fd = try makeStreamSocket()
    if let timeout {
      setTimeout(fd, SO_SNDTIMEO, seconds: timeout)
      setTimeout(fd, SO_RCVTIMEO, seconds: timeout)
    }
    let result = try withAddress(path) { address, length in
      while true {
        let rc = systemConnect(fd, address, length)
        if rc == 0 { return Int32(0) }
        if errno != EINTR { return errno }
      }
    }
    guard result == 0 else {
      close(fd)
      throw Failure("connect", errno: result)
    }
    return fd
  }

  /// Writes all of `bytes`, blocking; never raises SIGPIPE.
  public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Failure) {
    var offset = 0
    while offset < bytes.count {
      let count = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
      if count < 0 {
        if errno == EINTR { continue }
        throw Failure("write", errno: errno)
      }
      offset += count
    }
  }

  /// Reads what is available (blocking until something is); 0 at end of stream.
  public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
    while true {
      let count = recv(fd, buffer.baseAddress, buffer.count, 0)
      if count >= 0 { return count }
      if errno == EINTR { continue }
      throw Failure("read", errno: errno)
    }
  }

  /// Sets a receive timeout; reads then fail with `EAGAIN` when it passes.
  public static func setReceiveTimeout(_ fd: Int32, seconds: Double) {
    setTimeout(fd, SO_RCVTIMEO, seconds: seconds)
  }

  private static func setTimeout(_ fd: Int32, _ option: Int32, seconds: Double) {
    var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
    _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
  }

  public static func closeSocket(_ fd: Int32) {
    _ = close(fd)
  }

  private static func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t)
    -> Int32
  {
    #if canImport(Glibc)
      Glibc.connect(fd, address, length)
    #else
      Darwin.connect(fd, address, length)
    #endif
  }
}
