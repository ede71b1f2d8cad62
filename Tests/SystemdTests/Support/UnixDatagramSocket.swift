import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A real AF_UNIX datagram socket bound to a path, read with a bounded wait.
final class UnixDatagramSocket {
  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  let fd: Int32
  let path: String

  /// Binds a socket at `path`, which must not exist.
  init(path: String) throws {
    self.path = path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      Glibc.close(fd)
      throw Failure(description: "socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard result == 0 else {
      let code = errno
      Glibc.close(fd)
      throw Failure(description: "bind \(path): \(String(cString: strerror(code)))")
    }
  }

  /// Binds a socket in a fresh temporary directory.
  static func temporary(name: String = "notify.sock") throws -> UnixDatagramSocket {
    var template = Array("/tmp/trialwatch-test-XXXXXX".utf8CString)
    guard let directory = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw Failure(description: "mkdtemp: \(String(cString: strerror(errno)))")
    }
    return try UnixDatagramSocket(path: String(cString: directory) + "/" + name)
  }

  /// The next datagram, waiting at most `timeout` seconds; nil when none arrives in time.
  func receive(timeout: Double = 5) throws -> [UInt8]? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, Int32(timeout * 1000))
    if ready < 0 { throw Failure(description: "poll: \(String(cString: strerror(errno)))") }
    if ready == 0 { return nil }
    var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    let count = recv(fd, &buffer, buffer.count, 0)
    guard count >= 0 else { throw Failure(description: "recv: \(String(cString: strerror(errno)))") }
    return Array(buffer[0..<count])
  }

  /// The next datagram as text.
  func receiveText(timeout: Double = 5) throws -> String? {
    try receive(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
  }

  /// True when no datagram is waiting.
  func isDrained() -> Bool {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&poller, 1, 0) == 0
  }

  /// Closes the socket and removes its path (and its directory when it is a temporary one).
  func close() {
    _ = Glibc.close(fd)
    unlink(path)
    let directory = (path as NSString).deletingLastPathComponent
    if directory.hasPrefix("/tmp/trialwatch-test-") { rmdir(directory) }
  }
}
