import Foundation
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// A fixed instant the tests count from (tests never read the wall clock).
let origin = Date(timeIntervalSinceReferenceDate: 780_000_000)
let day: TimeInterval = 86_400

/// A fresh directory under the system's temporary directory, removed on deinit.
final class TemporaryDirectory {
  let path: String

  init(_ label: String = "store") throws {
    let base = FileManager.default.temporaryDirectory.path
    let template = (base as NSString).appendingPathComponent("trialwatch-\(label)-XXXXXX")
    var bytes = Array(template.utf8CString)
    guard mkdtemp(&bytes) != nil else {
      throw StoreError(.failure, path: template, problem: "mkdtemp failed: errno \(errno)")
    }
    path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  func appending(_ component: String) -> String {
    (path as NSString).appendingPathComponent(component)
  }

  deinit {
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// Everything a repository holds, for comparing two of them.
struct RepositorySnapshot: Equatable {
  var trials: [Trial] = []
  var ledger: [LedgerEntry] = []
  var outbox: [EventID] = []
  var lastSeen: Date?
  var activeByIndex: [String: TrialID] = [:]

  /// With `fromBatch`, only the trials of the crash workload's batches from that one on,
  /// and the whole outbox.
  init(_ repository: any TrialRepository, fromBatch: Int? = nil) throws {
    let after = fromBatch.map {
      TrialID(StoreCrashWorkload.trialID(batch: max($0, 1), index: 0).rawValue - 1)
    }
    try repository.read { txn in
      try txn.scanTrials(after: after) { trial in
        trials.append(trial)
        return true
      }
      for trial in trials {
        ledger += try txn.ledgerEntries(trial: trial.id)
        if trial.isActive, let id = try txn.activeTrialID(subject: trial.subject) {
          activeByIndex[trial.subject] = id
        }
      }
      try txn.scanOutbox {
        outbox.append($0.id)
        return true
      }
      lastSeen = try txn.lastSeenWallTime()
    }
  }
}

extension RepositorySnapshot {
  /// The first difference from `other`, in a line; nil when equal.
  func difference(from other: RepositorySnapshot) -> String? {
    func first<T: Equatable>(_ name: String, _ mine: [T], _ theirs: [T]) -> String? {
      guard mine != theirs else { return nil }
      if let index = mine.indices.first(where: { $0 < theirs.count && mine[$0] != theirs[$0] }) {
        return "\(name)[\(index)]: \(mine[index]) ≠ \(theirs[index])"
      }
      return "\(name): \(mine.count) ≠ \(theirs.count) items (first extra: "
        + "\(mine.count > theirs.count ? "\(mine[theirs.count])" : "\(theirs[mine.count])"))"
    }
    return first("trials", trials, other.trials) ?? first("ledger", ledger, other.ledger)
      ?? first("outbox", outbox, other.outbox)
      ?? (lastSeen != other.lastSeen
        ? "last seen: \(String(describing: lastSeen)) ≠ \(String(describing: other.lastSeen))" : nil)
      ?? (activeByIndex != other.activeByIndex ? "subject index differs" : nil)
  }
}

/// The bytes and modification time of a file, to show it was left untouched.
struct FileFingerprint: Equatable {
  var bytes: Data
  var modified: timespec
  var size: Int

  init(_ path: String) throws {
    bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    var st = stat()
    guard stat(path, &st) == 0 else {
      throw StoreError(.failure, path: path, problem: "stat failed: errno \(errno)")
    }
    modified = st.st_mtim
    size = Int(st.st_size)
  }

  static func == (lhs: FileFingerprint, rhs: FileFingerprint) -> Bool {
    lhs.bytes == rhs.bytes && lhs.size == rhs.size && lhs.modified.tv_sec == rhs.modified.tv_sec
      && lhs.modified.tv_nsec == rhs.modified.tv_nsec
  }
}

/// Starts `count` trials with ids counting from `firstID`, in one transaction.
@discardableResult
func startTrials(
  _ repository: any TrialRepository, count: Int, firstID: UInt64 = 1, subjectPrefix: String = "subject",
  now: Date = origin
) throws -> [Trial] {
  let ids = SequenceTrialIDGenerator(Array(firstID..<firstID + UInt64(count)))
  return try repository.write { txn in
    try (0..<count).map { index in
      try TrialBook.startTrial(
        in: txn, subject: "\(subjectPrefix)-\(firstID + UInt64(index))",
        endDate: now.addingTimeInterval(Double(2 + index % 9) * day), reminders: .default, now: now, ids: ids
      ).trial
    }
  }
}

/// The path of an executable built next to the test bundle.
func builtExecutable(_ name: String) throws -> String {
  let environment = ProcessInfo.processInfo.environment
  if let override = environment["TRIALWATCH_CRASHTEST_TOOL"], name == "trialwatch-crashtest" {
    return override
  }
  let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
  var directory = (me as NSString).deletingLastPathComponent
  // The test binary may sit inside a bundle directory.
  while !directory.isEmpty && directory != "/" {
    let candidate = (directory as NSString).appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    directory = (directory as NSString).deletingLastPathComponent
    if directory.hasSuffix("/.build") { break }
  }
  throw StoreError(
    .notFound, path: name, problem: "the executable was not found next to the tests (run `swift build` first)"
  )
}

/// A child process with its standard output and error on pipes, started with posix_spawn.
final class ChildProcess {
  enum Read: Equatable {
    case line(String)
    case timedOut
    case endOfFile
  }

  enum Status: Equatable {
    case exited(Int32)
    case signalled(Int32)
  }

  let pid: pid_t
  private let output: Int32
  private let errors: Int32
  private var pending: [UInt8] = []
  private var reaped: Status?

  init(_ path: String, _ arguments: [String]) throws {
    var out: [Int32] = [0, 0]
    var err: [Int32] = [0, 0]
    guard pipe(&out) == 0, pipe(&err) == 0 else {
      throw StoreError(.failure, path: path, problem: "pipe failed: errno \(errno)")
    }
    // Only the child's copies (made by dup2 below) stay open across exec.
    for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, out[1], 1)
    posix_spawn_file_actions_adddup2(&actions, err[1], 2)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var child = pid_t()
    let rc = posix_spawn(&child, path, &actions, nil, argv, environ)
    Glibc.close(out[1])
    Glibc.close(err[1])
    guard rc == 0 else {
      Glibc.close(out[0])
      Glibc.close(err[0])
      throw StoreError(.failure, path: path, problem: "posix_spawn failed: errno \(rc)")
    }
    pid = child
    output = out[0]
    errors = err[0]
  }

  deinit {
    if reaped == nil {
      Glibc.kill(pid, SIGKILL)
      _ = wait()
    }
    Glibc.close(output)
    Glibc.close(errors)
  }

  /// The next line of standard output, waiting at most `timeout` seconds for it.
  func readLine(timeout: TimeInterval) -> Read {
    let clock = ContinuousClock()
    return readLine(until: clock.now.advanced(by: .nanoseconds(Int64(timeout * 1e9))))
  }

  /// The next line of standard output, waiting until `deadline` at most.
  func readLine(until deadline: ContinuousClock.Instant) -> Read {
    let clock = ContinuousClock()
    while true {
      if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        return .line(line)
      }
      let left = max(clock.now.duration(to: deadline), .zero)
      // select, for its microsecond timeout (poll counts in milliseconds).
      precondition(output < FD_SETSIZE, "descriptor \(output) too large for select")
      var timeout = timeval(
        tv_sec: Int(left.components.seconds), tv_usec: Int(left.components.attoseconds / 1_000_000_000_000))
      var readable = fd_set()
      withUnsafeMutableBytes(of: &readable) { bits in
        bits.storeBytes(
          of: UInt64(1) << UInt64(output % 64), toByteOffset: Int(output / 64) * 8, as: UInt64.self)
      }
      let ready = select(output + 1, &readable, nil, nil, &timeout)
      if ready < 0 && errno == EINTR { continue }
      if ready == 0 { return .timedOut }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = chunk.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { return .endOfFile }
      pending += chunk[0..<count]
    }
  }

  func kill(_ signal: Int32) {
    Glibc.kill(pid, signal)
  }

  /// Waits for the child to end (it must be ending: killed, or done).
  @discardableResult
  func wait() -> Status {
    if let reaped { return reaped }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signal = status & 0x7f
    let result: Status = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    reaped = result
    return result
  }

  /// What the child wrote to standard error and is there to read now (call once it has
  /// ended).
  func errorOutput() -> String {
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      var descriptor = pollfd(fd: errors, events: Int16(POLLIN), revents: 0)
      guard poll(&descriptor, 1, 0) > 0 else { break }
      let count = chunk.withUnsafeMutableBytes { Glibc.read(errors, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      data += chunk[0..<count]
    }
    return String(decoding: data, as: UTF8.self)
  }
}

/// Runs a command to completion; returns its exit status and standard error.
func runCommand(_ path: String, _ arguments: [String]) throws -> (status: ChildProcess.Status, errors: String)
{
  let child = try ChildProcess(path, arguments)
  while case .line = child.readLine(timeout: 30) {}
  let status = child.wait()
  return (status, child.errorOutput())
}

/// Reads a /proc file (their size reads as zero, so read to the end).
func readProcFile(_ path: String) -> String {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return "" }
  defer { close(fd) }
  var data: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if count < 0 && errno == EINTR { continue }
    guard count > 0 else { break }
    data += chunk[0..<count]
  }
  return String(decoding: data, as: UTF8.self)
}
