import Dispatch
import ErrnoText
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// An AF_UNIX datagram socket bound to a path, read with a deadline: systemd's notify socket
/// or journald's socket as a test or a benchmark stands in for them. Closing it (or letting
/// it go) removes its path.
///
/// By default a datagram stays in the socket until `receive` reads it. After
/// `readInBackground()`, a thread reads each one as it arrives, as systemd reads its notify
/// socket, so that a sender never blocks on a full socket, and `receive` takes them in order.
public final class UnixDatagramSocket: @unchecked Sendable {
  // @unchecked: `closed` and `inbox` are set once under `lock`; the inbox has a lock of its own.
  public let path: String
  public let fileDescriptor: Int32
  private let directory: TemporaryDirectory?
  private let lock = NSLock()
  private var closed = false
  private var inbox: Inbox?

  /// Binds a socket at `path`, which must not exist.
  public convenience init(path: String) throws {
    try self.init(path: path, directory: nil)
  }

  private init(path: String, directory: TemporaryDirectory?) throws {
    self.path = path
    self.directory = directory
    fileDescriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fileDescriptor >= 0 else { throw TestSupportError.systemCall("socket", path) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      Glibc.close(fileDescriptor)
      throw TestSupportError("socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fileDescriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0 else {
      let failure = TestSupportError.systemCall("bind", path)
      Glibc.close(fileDescriptor)
      throw failure
    }
  }

  /// A socket named `name` in a fresh temporary directory, removed with it.
  public static func temporary(name: String = "notify.sock") throws -> UnixDatagramSocket {
    let directory = try TemporaryDirectory("socket")
    return try UnixDatagramSocket(path: directory.appending(name), directory: directory)
  }

  deinit {
    close()
  }

  /// Closes the socket and removes its path (and its temporary directory, if it has one).
  public func close() {
    let (first, inbox) = lock.withLock { () -> (Bool, Inbox?) in
      defer { closed = true }
      return (!closed, self.inbox)
    }
    guard first else { return }
    inbox?.stop()
    Glibc.close(fileDescriptor)
    unlink(path)
  }

  /// From now on, reads every datagram as it arrives on a thread of its own and keeps the
  /// latest `limit` for `receive`.
  public func readInBackground(keeping limit: Int = 10_000) {
    lock.withLock {
      guard !closed, inbox == nil else { return }
      inbox = Inbox(fileDescriptor: fileDescriptor, limit: limit)
    }
  }

  /// The next datagram, waiting at most `timeout` seconds; nil when none arrives in time.
  public func receive(timeout: TimeInterval = 5) throws -> [UInt8]? {
    if let inbox = lock.withLock({ inbox }) { return inbox.next(timeout: timeout) }
    var poller = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, milliseconds(timeout))
    if ready < 0 { throw TestSupportError.systemCall("poll", path) }
    if ready == 0 { return nil }
    var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    let count = recv(fileDescriptor, &buffer, buffer.count, 0)
    guard count >= 0 else { throw TestSupportError.systemCall("recv", path) }
    return Array(buffer[0..<count])
  }

  /// The next datagram as text.
  public func receiveText(timeout: TimeInterval = 5) throws -> String? {
    try receive(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Reads datagrams as text until one satisfies `match`, for at most `timeout` seconds;
  /// returns it (nil if none did) and every one read, itself included.
  public func waitFor(timeout: TimeInterval = patience, _ match: (String) -> Bool) -> (
    found: String?, seen: [String]
  ) {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(timeout, 0) * 1e9)
    var seen: [String] = []
    // Reads what is waiting even when the time is up.
    while case let now = DispatchTime.now().uptimeNanoseconds,
      let message = try? receiveText(timeout: Double(deadline - min(now, deadline)) / 1e9)
    {
      seen.append(message)
      if match(message) { return (message, seen) }
    }
    return (nil, seen)
  }

  /// True when no datagram is waiting to be read.
  public func isDrained() -> Bool {
    if let inbox = lock.withLock({ inbox }) { return inbox.isEmpty }
    var poller = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
    return poll(&poller, 1, 0) == 0
  }

  /// Datagrams read by a thread of its own as they arrive, until `stop()`.
  private final class Inbox: @unchecked Sendable {
    // @unchecked: `messages` is guarded by `lock`; the descriptors are fixed.
    private let fileDescriptor: Int32
    private let limit: Int
    private let lock = NSLock()
    private var messages: [[UInt8]] = []
    /// Signalled once for each datagram read.
    private let arrived = DispatchSemaphore(value: 0)
    /// Written to by `stop()`: wakes the reader, which then ends.
    private let wake: (read: Int32, write: Int32)
    private let ended = DispatchSemaphore(value: 0)

    init(fileDescriptor: Int32, limit: Int) {
      self.fileDescriptor = fileDescriptor
      self.limit = limit
      var ends: [Int32] = [0, 0]
      precondition(pipe(&ends) == 0, "pipe: \(errnoText(errno))")
      for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
      wake = (ends[0], ends[1])
      Thread { [self] in
        readUntilStopped()
        ended.signal()
      }.start()
    }

    private func readUntilStopped() {
      var buffer = [UInt8](repeating: 0, count: 256 * 1024)
      while true {
        var pollers = [
          pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0),
          pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&pollers, 2, -1) > 0 else {
          if errno == EINTR { continue }
          return
        }
        if pollers[1].revents != 0 { return }
        let count = recv(fileDescriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count >= 0 else { continue }
        lock.withLock {
          messages.append(Array(buffer[0..<count]))
          if messages.count > limit { messages.removeFirst(messages.count - limit) }
        }
        arrived.signal()
      }
    }

    func stop() {
      var byte: UInt8 = 1
      _ = write(wake.write, &byte, 1)
      ended.wait()
      Glibc.close(wake.read)
      Glibc.close(wake.write)
    }

    var isEmpty: Bool { lock.withLock { messages.isEmpty } }

    func next(timeout: TimeInterval) -> [UInt8]? {
      let deadline = DispatchTime.now() + max(timeout, 0)
      while true {
        if let message = lock.withLock({ messages.isEmpty ? nil : messages.removeFirst() }) {
          return message
        }
        if arrived.wait(timeout: deadline) == .timedOut {
          return lock.withLock { messages.isEmpty ? nil : messages.removeFirst() }
        }
      }
    }
  }
}

/// A timeout in seconds as poll's milliseconds, rounded up, so that a wait is never shorter.
func milliseconds(_ timeout: TimeInterval) -> Int32 {
  Int32(min(max((timeout * 1000).rounded(.up), 0), Double(Int32.max)))
}
