import Dispatch
import Foundation
import TestSupport
import TrialControl
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// Waits until `condition` holds, checking again every 2 ms, for at most `timeout` seconds.
/// For conditions the server reaches on its own queue.
func eventually(timeout: TimeInterval = patience, _ condition: () throws -> Bool) rethrows -> Bool {
  let deadline = DispatchTime.now() + timeout
  while DispatchTime.now() < deadline {
    if try condition() { return true }
    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(2))
  }
  return try condition()
}

/// Waits until the descriptor is readable or at end of stream (poll), at most `timeout`.
func waitReadable(_ fd: Int32, timeout: TimeInterval = patience) -> Bool {
  var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
  return poll(&entry, 1, Int32(timeout * 1000)) == 1
}

/// Reads until end of stream; returns what arrived, or nil if the stream did not end in time.
func readToEnd(_ fd: Int32, timeout: TimeInterval = patience) -> [UInt8]? {
  var collected: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65_536)
  while true {
    guard waitReadable(fd, timeout: timeout) else { return nil }
    let count = recv(fd, &buffer, buffer.count, 0)
    if count == 0 { return collected }
    if count < 0 {
      if errno == EINTR || errno == EAGAIN { continue }
      if errno == ECONNRESET { return collected }
      return nil
    }
    collected.append(contentsOf: buffer[0..<count])
  }
}

/// Splits NUL-terminated messages into replies.
func replies(in bytes: [UInt8]) throws -> [VarlinkReply] {
  try bytes.split(separator: 0, omittingEmptySubsequences: true).map { try VarlinkReply(Array($0)) }
}

/// The remote error a throwing call ends with.
func remoteError(_ body: () throws -> Void) -> ControlError? {
  do {
    try body()
    return nil
  } catch let error as VarlinkClientError {
    return error.remoteError
  } catch {
    return nil
  }
}

extension VarlinkReply {
  /// The parameters of an error reply.
  var errorParameters: ControlError.Parameters { controlError?.parameters ?? .init() }
}
