import ErrnoText
import Glibc

/// Writes all of `bytes` to `fd`, whatever it is (a file, a pipe, a terminal), again after a
/// partial write or EINTR; false when another error stops it. Sockets: `UnixSocket.writeAll`,
/// which never raises SIGPIPE.
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
  Array(bytes).withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
      if written > 0 {
        offset += written
      } else if written < 0 && errno == EINTR {
        continue
      } else {
        return false
      }
    }
    return true
  }
}

/// Runs `body` on a detached thread of its own (`pthread_create`).
public func startThread(_ body: @escaping @Sendable () -> Void) {
  let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
  var thread = pthread_t()
  let result = pthread_create(
    &thread, nil,
    { context in
      Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
      return nil
    }, context)
  precondition(result == 0, "cannot start a thread: \(errnoText(result))")
  pthread_detach(thread)
}

private final class ThreadBody: Sendable {
  let run: @Sendable () -> Void
  init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
