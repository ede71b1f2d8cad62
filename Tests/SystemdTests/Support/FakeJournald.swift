import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// journald's native socket, bound by the test where no journald runs, so that the real
/// `sd_journal_sendv` (which always writes to `/run/systemd/journal/socket`) can be read back.
/// Removes what it created when closed.
final class FakeJournald {
  static let directory = "/run/systemd/journal"

  let socket: UnixDatagramSocket
  private let createdDirectories: [String]

  private init(socket: UnixDatagramSocket, createdDirectories: [String]) {
    self.socket = socket
    self.createdDirectories = createdDirectories
  }

  /// Binds the socket, or cancels the calling test with the reason it cannot.
  static func start() throws -> FakeJournald {
    guard geteuid() == 0 else {
      try Test.cancel("binding \(directory)/socket needs root")
    }
    let path = directory + "/socket"
    if access(path, F_OK) == 0 {
      try Test.cancel("\(path) exists: a journald (or another test run) owns it")
    }
    var created: [String] = []
    for folder in ["/run/systemd", directory] where access(folder, F_OK) != 0 {
      guard mkdir(folder, 0o755) == 0 else {
        if errno == EEXIST { continue }
        let problem = String(cString: strerror(errno))
        removeDirectories(created)
        try Test.cancel("cannot create \(folder): \(problem)")
      }
      created.append(folder)
    }
    do {
      return FakeJournald(socket: try UnixDatagramSocket(path: path), createdDirectories: created)
    } catch {
      removeDirectories(created)
      try Test.cancel("cannot bind \(path): \(error)")
    }
  }

  /// The next entry carrying `marker` (other processes may log while the socket is bound),
  /// parsed from the native protocol; nil when none arrives within the bound.
  func receiveEntry(withMarker marker: JournalMarker, timeout: Double = 5) throws -> [(String, String)]? {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while case let remaining = deadline.timeIntervalSinceNow, remaining > 0 {
      guard let datagram = try socket.receive(timeout: remaining) else { return nil }
      let entry = try NativeJournalProtocol.parse(datagram)
      if entry.contains(where: { $0.0 == marker.name && $0.1 == marker.value }) { return entry }
    }
    return nil
  }

  func stop() {
    socket.close()
    Self.removeDirectories(createdDirectories)
  }

  private static func removeDirectories(_ folders: [String]) {
    for folder in folders.reversed() { rmdir(folder) }
  }
}

/// A field that tells this test's entries from any other.
struct JournalMarker {
  let name = "TEST_MARKER"
  let value = UUID().uuidString
}

/// journald's native datagram format: fields `NAME=value\n`, or, for values with line breaks,
/// `NAME\n` followed by the value's length as 64-bit little-endian, the value, and `\n`.
enum NativeJournalProtocol {
  struct Malformed: Error, CustomStringConvertible {
    var description: String
  }

  static func parse(_ bytes: [UInt8]) throws -> [(String, String)] {
    var fields: [(String, String)] = []
    var index = 0
    while index < bytes.count {
      guard let end = bytes[index...].firstIndex(where: { $0 == 0x0A || $0 == 0x3D }) else {
        throw Malformed(description: "field without terminator at byte \(index)")
      }
      let name = String(decoding: bytes[index..<end], as: UTF8.self)
      if bytes[end] == 0x3D {
        guard let lineEnd = bytes[end...].firstIndex(of: 0x0A) else {
          throw Malformed(description: "field \(name) not terminated")
        }
        fields.append((name, String(decoding: bytes[(end + 1)..<lineEnd], as: UTF8.self)))
        index = lineEnd + 1
      } else {
        let lengthStart = end + 1
        guard lengthStart + 8 <= bytes.count else { throw Malformed(description: "short length of \(name)") }
        var length = 0
        for offset in 0..<8 { length |= Int(bytes[lengthStart + offset]) << (8 * offset) }
        let valueStart = lengthStart + 8
        guard valueStart + length < bytes.count, bytes[valueStart + length] == 0x0A else {
          throw Malformed(description: "binary field \(name) overruns the datagram")
        }
        fields.append((name, String(decoding: bytes[valueStart..<(valueStart + length)], as: UTF8.self)))
        index = valueStart + length + 1
      }
    }
    return fields
  }
}
