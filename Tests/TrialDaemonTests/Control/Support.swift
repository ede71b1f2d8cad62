import Dispatch
import Foundation
import Logging
import Synchronization
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon

/// Log records kept for assertions; waits on them with a deadline.
final class CapturedLogs: @unchecked Sendable {
  struct Record: Sendable {
    var level: Logger.Level
    var message: String
    var metadata: [String: String]
  }

  private let condition = NSCondition()
  private var records: [Record] = []

  func append(_ record: Record) {
    condition.lock()
    records.append(record)
    condition.broadcast()
    condition.unlock()
  }

  var all: [Record] {
    condition.lock()
    defer { condition.unlock() }
    return records
  }

  /// Waits until a record satisfies `match`, at most `timeout` seconds.
  func waitFor(timeout: TimeInterval = 10, _ match: (Record) -> Bool) -> Record? {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let found = records.first(where: match) { return found }
      guard condition.wait(until: deadline) else { return records.first(where: match) }
    }
  }

  func makeLogger() -> Logger {
    Logger(label: "test") { _ in Handler(sink: self) }
  }

  struct Handler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
      get { metadata[key] }
      set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
      var merged = metadata
      for (key, value) in event.metadata ?? [:] { merged[key] = value }
      sink.append(
        Record(
          level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }
  }
}

/// A control server on a socket in a fresh temporary directory, with an in-memory backend
/// whose clock the test moves.
final class ServerFixture {
  static let start = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15T15:06:40Z

  let directory: String
  let socketPath: String
  let clock = ManualWallClock(ServerFixture.start)
  let backend: InMemoryTrialsBackend
  let logs = CapturedLogs()
  let server: ControlServer

  init(
    options: ControlServer.Options = ControlServer.Options(), group: UInt32? = nil,
    authorizer: ControlAuthorizer? = nil, ids: [UInt64] = [], answersInline: Bool = false
  ) throws {
    directory = try makeTemporaryDirectory()
    socketPath = directory + "/io.trialwatch"
    backend = InMemoryTrialsBackend(
      clock: clock, ids: SequenceTrialIDGenerator(ids), answersInline: answersInline)
    var options = options
    options.version = "1.2.3-test"
    server = try ControlServer(
      listener: .bind(path: socketPath, group: group), backend: backend, options: options,
      authorizer: authorizer,
      logger: logs.makeLogger())
    server.start()
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: directory)
  }

  func client() throws -> TrialsClient {
    let client = try TrialsClient(path: socketPath)
    client.connection.setReceiveTimeout(seconds: 10)
    return client
  }

  func raw() throws -> VarlinkClient {
    let client = try VarlinkClient(path: socketPath)
    client.setReceiveTimeout(seconds: 10)
    return client
  }

  /// Stops the server and waits (bounded) until every connection is closed.
  @discardableResult
  func stop() -> Bool {
    let done = DispatchSemaphore(value: 0)
    server.stop { done.signal() }
    return done.wait(timeout: .now() + 10) == .success
  }
}

func makeTemporaryDirectory() throws -> String {
  var template = Array("/tmp/trialwatch-test-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
  let path = String(cString: made)
  // Traversable by other users, for the tests that connect as nobody.
  chmod(path, 0o711)
  return path
}

/// Waits until `condition` holds, checking again whenever `interval` passes, for at most
/// `timeout` seconds. For conditions the server reaches on its own queue.
func eventually(timeout: TimeInterval = 10, _ condition: () throws -> Bool) rethrows -> Bool {
  let deadline = Date(timeIntervalSinceNow: timeout)
  while Date() < deadline {
    if try condition() { return true }
    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(2))
  }
  return try condition()
}

/// Waits until the descriptor is readable or at end of stream (poll), at most `timeout`.
func waitReadable(_ fd: Int32, timeout: TimeInterval = 10) -> Bool {
  var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
  return poll(&entry, 1, Int32(timeout * 1000)) == 1
}

/// Reads until end of stream; returns what arrived, or nil if the stream did not end in time.
func readToEnd(_ fd: Int32, timeout: TimeInterval = 10) -> [UInt8]? {
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
  try bytes.split(separator: 0, omittingEmptySubsequences: true).map { try VarlinkReply.decode($0) }
}

extension VarlinkClientError {
  var remoteName: String? { remoteError?.name }
}

/// The error name a throwing call ends with, or nil when it succeeds.
func errorName(_ body: () throws -> Void) -> String? {
  do {
    try body()
    return nil
  } catch let error as VarlinkClientError {
    return error.remoteError?.name ?? "client: \(error)"
  } catch {
    return "other: \(error)"
  }
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

extension JSONValue {
  var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }
}
