import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: the daemon under test sends
/// its sd_notify messages here, and the test reads them in order.
final class NotifyListener {
  let path: String
  private let fd: Int32

  init(directory: URL) throws {
    path = directory.appendingPathComponent("notify.sock").path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard result == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
  }

  deinit {
    close(fd)
    unlink(path)
  }

  /// The next message, or nil when none arrives within `timeout` seconds.
  func next(timeout: TimeInterval = 30) -> String? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let count = recv(fd, &buffer, buffer.count, 0)
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count], as: UTF8.self)
  }

  /// Reads messages until one satisfies `match`; returns it and every message before it.
  func waitFor(timeout: TimeInterval = 30, _ match: (String) -> Bool) -> (found: String?, seen: [String]) {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
    var seen: [String] = []
    while DispatchTime.now().uptimeNanoseconds < deadline {
      let left = Double(deadline - DispatchTime.now().uptimeNanoseconds) / 1e9
      guard let message = next(timeout: left) else { break }
      seen.append(message)
      if match(message) { return (message, seen) }
    }
    return (nil, seen)
  }
}

/// The products of this package's build, next to the test bundle.
enum BuiltProducts {
  static var directory: URL {
    // The test bundle lives in .build/<config>/; the executables sit beside it.
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.pathComponents.count > 1 && url.pathExtension != "xctest" {
      url.deleteLastPathComponent()
    }
    if url.pathExtension == "xctest" { return url.deletingLastPathComponent() }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  }

  static func path(_ name: String) -> String {
    directory.appendingPathComponent(name).path
  }
}
