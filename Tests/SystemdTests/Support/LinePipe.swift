import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A pipe standing in for standard error: its write end has a real device and inode, and what
/// is written is read back with a bounded wait.
final class LinePipe {
  let read: Int32
  let write: Int32

  init() {
    var ends: [Int32] = [0, 0]
    precondition(pipe(&ends) == 0)
    read = ends[0]
    write = ends[1]
  }

  /// The write end as `JOURNAL_STREAM` names a stream: `device:inode`.
  var streamValue: String {
    var info = stat()
    precondition(fstat(write, &info) == 0)
    return "\(info.st_dev):\(info.st_ino)"
  }

  /// Everything written so far, once at least one line has arrived (waits at most 5 s).
  func readAvailable() -> String {
    var poller = pollfd(fd: read, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, 5_000) == 1 else { return "" }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let count = Glibc.read(read, &buffer, buffer.count)
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
  }

  deinit {
    close(read)
    close(write)
  }
}
