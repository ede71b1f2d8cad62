import Foundation
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One TCP connection to the gateway with nothing of HTTP but what the test writes: the bytes a
/// hostile client sends, request lines and headers that curl would never send. Every read and
/// write waits at most `patience` (SO_RCVTIMEO, SO_SNDTIMEO): a guard against a hang, never a
/// bound the test measures.
final class RawHTTPClient {
  /// What the connection gave back.
  struct Answer: CustomStringConvertible {
    /// The status of the answer's status line; nil when none came.
    var status: Int?
    /// The header lines, lowercased names.
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    /// Whether the gateway closed the connection (end of file or a reset) once it had answered.
    var closed = false

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    var description: String {
      "status \(status.map(String.init) ?? "none"), closed \(closed), \(headers), "
        + String(decoding: body.prefix(300), as: UTF8.self).debugDescription
    }
  }

  private(set) var fd: Int32
  /// Bytes read but not yet taken as an answer.
  private var buffered: [UInt8] = []
  /// Whether a read waited `patience` for nothing: the connection is open still.
  private var timedOut = false

  /// Connects to 127.0.0.1:`port`.
  init(port: UInt16) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPError("socket: \(String(cString: strerror(errno)))") }
    var wait = timeval(tv_sec: Int(patience), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      let reason = String(cString: strerror(errno))
      close()
      throw RawHTTPError("connect to port \(port): \(reason)")
    }
  }

  deinit { close() }

  func close() {
    if fd >= 0 { _ = Glibc.close(fd) }
    fd = -1
  }

  /// Sends all of `bytes`; false when the connection refused them (closed or reset by the
  /// gateway), which a client sending past an early answer may meet.
  @discardableResult
  func send(_ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
      let count = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
      }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return false }
      sent += count
    }
    return true
  }

  @discardableResult
  func send(_ text: String) -> Bool { send(Array(text.utf8)) }

  /// Reads one answer: the status line, the headers, and the body its Content-Length frames (or
  /// all that comes before the end of the connection); then whether the connection is closed.
  /// The status is nil when the connection ended, was reset, or stayed silent past `patience`
  /// before a whole head came (`closed` tells which).
  func readAnswer() -> Answer {
    var answer = Answer()
    var end: Int? = headEnd()
    while end == nil {
      guard fill() else {
        answer.closed = !timedOut
        return answer
      }
      end = headEnd()
    }
    let head = String(decoding: buffered[..<end!], as: UTF8.self)
    buffered.removeFirst(end! + 4)
    let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
    answer.status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) }
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      answer.headers.append(
        (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
    }
    if let length = answer.header("content-length").flatMap({ Int($0) }) {
      while buffered.count < length && fill() {}
      answer.body = Array(buffered.prefix(length))
      buffered.removeFirst(answer.body.count)
    } else {
      while fill() {}
      answer.body = buffered
      buffered = []
    }
    if answer.header("connection")?.lowercased() == "close" || answer.header("content-length") == nil {
      answer.closed = isClosed()
    }
    return answer
  }

  /// Whether the gateway closes the connection: waits for the end of file (or a reset), at most
  /// `patience`; bytes that come before it are dropped.
  func isClosed() -> Bool {
    while true {
      var chunk = [UInt8](repeating: 0, count: 64 * 1024)
      let count = recv(fd, &chunk, chunk.count, 0)
      if count > 0 { continue }
      if count == 0 { return true }
      if errno == EINTR { continue }
      return errno == ECONNRESET || errno == EPIPE
    }
  }

  /// Reads more into `buffered`; false at the end of the connection, a reset, or a wait past
  /// `patience`.
  private func fill() -> Bool {
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = recv(fd, &chunk, chunk.count, 0)
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else {
        timedOut = count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        return false
      }
      buffered += chunk[..<count]
      return true
    }
  }

  private func headEnd() -> Int? {
    guard buffered.count >= 4 else { return nil }
    for index in 0...(buffered.count - 4)
    where buffered[index] == 13 && buffered[index + 1] == 10 && buffered[index + 2] == 13
      && buffered[index + 3] == 10
    {
      return index
    }
    return nil
  }
}

struct RawHTTPError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
