import ErrnoText
import Glibc

/// Where the gateway listens when systemd did not hand it a socket: `HOST:PORT` (`127.0.0.1:8181`,
/// `[::1]:8181`, port 0 for one the kernel picks) or the path of a Unix socket (starting with `/`).
public enum ListenAddress: Hashable, Sendable, CustomStringConvertible {
  case tcp(host: String, port: UInt16)
  case unix(path: String)

  /// `text` read as an address, or why it is not one.
  public init(parsing text: String) throws(ListenAddressError) {
    if text.hasPrefix("/") {
      guard text.utf8.count < 108 else { throw .init(text, "a socket's path has at most 107 bytes") }
      self = .unix(path: text)
      return
    }
    guard let colon = text.lastIndex(of: ":") else {
      throw .init(text, "expected HOST:PORT or the absolute path of a Unix socket")
    }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw .init(text, "the host is missing") }
    guard let port = UInt16(text[text.index(after: colon)...]) else {
      throw .init(text, "the port is not a number from 0 to 65535")
    }
    self = .tcp(host: host, port: port)
  }

  public var description: String {
    switch self {
    case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    case .unix(let path): path
    }
  }

  /// A socket bound to the address and listening, close-on-exec.
  public func listen() throws(ListenAddressError) -> Int32 {
    switch self {
    case .unix(let path): return try listenUnix(path)
    case .tcp(let host, let port): return try listenTCP(host, port)
    }
  }

  private func listenTCP(_ host: String, _ port: UInt16) throws(ListenAddressError) -> Int32 {
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var found: UnsafeMutablePointer<addrinfo>?
    let looked = getaddrinfo(host, String(port), &hints, &found)
    guard looked == 0, let first = found else {
      throw .init(
        description,
        "not a numeric address: \(gai_strerror(looked).map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? "\(looked)")"
      )
    }
    defer { freeaddrinfo(found) }
    let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .init(description, "cannot make a socket: \(errnoText(errno))") }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
      let problem = errnoText(errno)
      close(fd)
      throw .init(description, "cannot bind: \(problem)")
    }
    return try listening(fd)
  }

  private func listenUnix(_ path: String) throws(ListenAddressError) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .init(path, "cannot make a socket: \(errnoText(errno))") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
    }
    unlink(path)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0 else {
      let problem = errnoText(errno)
      close(fd)
      throw .init(path, "cannot bind: \(problem)")
    }
    return try listening(fd)
  }

  private func listening(_ fd: Int32) throws(ListenAddressError) -> Int32 {
    guard Glibc.listen(fd, 1024) == 0 else {
      let problem = errnoText(errno)
      close(fd)
      throw .init(description, "cannot listen: \(problem)")
    }
    return fd
  }

  /// The port a TCP socket `fd` is bound to (the one the kernel picked for port 0), or nil.
  public static func boundPort(of fd: Int32) -> UInt16? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { return nil }
    let family = Int32(storage.ss_family)
    return withUnsafeBytes(of: &storage) { raw -> UInt16? in
      switch family {
      case AF_INET: UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
      case AF_INET6: UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
      default: nil
      }
    }
  }
}

/// An address that cannot be listened on, and why.
public struct ListenAddressError: Error, CustomStringConvertible, Sendable {
  public let address: String
  public let problem: String

  init(_ address: String, _ problem: String) {
    self.address = address
    self.problem = problem
  }

  public var description: String { "--listen \(address): \(problem)" }
}
