import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A process started by a test or a benchmark: a product of this package's build or a system
/// command, run as another user through `setpriv` if asked, with its standard streams on
/// pipes. Its output is read line by line while it runs, each read with a deadline; it is
/// signalled by the caller, and waited for with a deadline. Letting it go kills it (SIGKILL)
/// if it still runs.
///
/// Built on Foundation's `Process`, which is synchronous, so tests stay synchronous, and
/// which hands the child the signal mask of the thread that starts it (a test depends on
/// that). Every launch in the tests and the benchmarks goes through this type.
public final class ChildProcess {
  /// What to run.
  public enum Executable: Sendable, CustomStringConvertible {
    /// A product of this package's build, found beside the running executable.
    case product(String)
    /// The executable at a path.
    case path(String)

    public var path: String {
      switch self {
      case .product(let name): BuiltProducts.path(name)
      case .path(let path): path
      }
    }

    public var description: String { path }
  }

  /// Another user to run as: `setpriv` changes the real and effective user and group before
  /// it runs the executable (only root can).
  public struct User: Sendable {
    public var name: String
    public var group: String
    /// None: the process has no supplementary groups.
    public var supplementaryGroups: [String]

    public init(_ name: String, group: String = "nogroup", supplementaryGroups: [String] = []) {
      self.name = name
      self.group = group
      self.supplementaryGroups = supplementaryGroups
    }

    /// `nobody`, in group `nogroup` and in no other.
    public static let nobody = User("nobody")

    var setprivArguments: [String] {
      ["--reuid=\(name)", "--regid=\(group)"]
        + (supplementaryGroups.isEmpty
          ? ["--clear-groups"] : ["--groups=" + supplementaryGroups.joined(separator: ",")])
    }
  }

  /// Where the child's standard input comes from.
  public enum Input: Sendable {
    /// `/dev/null`.
    case none
    /// A pipe the caller writes to (`write(_:)`) and closes (`closeInput()`).
    case pipe
  }

  /// Where the child's standard output or error goes.
  public enum Output: Sendable {
    /// A pipe the caller reads.
    case pipe
    /// `/dev/null`.
    case discard
    /// Appended to the file at a path (created if missing).
    case file(String)
  }

  /// One of the child's output streams.
  public enum Stream: Sendable {
    case output
    case errors
  }

  /// What a read of one line found.
  public enum Read: Equatable, Sendable {
    /// A line, without its newline.
    case line(String)
    /// No whole line before the deadline.
    case timedOut
    /// The stream ended (what followed the last newline, if anything, is left unread).
    case endOfFile

    /// The line read, if one was.
    public var line: String? {
      guard case .line(let line) = self else { return nil }
      return line
    }
  }

  /// How the child ended.
  public enum Status: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    /// The exit status as a shell gives it: the code, or 128 plus the signal.
    public var code: Int32 {
      switch self {
      case .exited(let code): code
      case .signalled(let signal): 128 + signal
      }
    }

    public var description: String {
      switch self {
      case .exited(let code): "exited with status \(code)"
      case .signalled(let signal): "killed by signal \(signal)"
      }
    }
  }

  /// The output of a child run to its end.
  public struct Completion: Sendable {
    public var status: Status
    public var output: String
    public var errors: String
  }

  public let pid: Int32
  /// The command as started, for messages.
  public let commandLine: String
  private let process: Process
  private let input: Pipe?
  private var pipes: [Stream: PipeReader] = [:]
  private let exited = DispatchGroup()

  /// Starts `executable` with `arguments`.
  ///
  /// - Parameter environment: the child's whole environment; nil: this process's (see
  ///   `environment(adding:removing:)`).
  public init(
    _ executable: Executable, _ arguments: [String] = [], environment: [String: String]? = nil,
    as user: User? = nil, input: Input = .none, output: Output = .pipe, errors: Output = .pipe
  ) throws {
    let path = executable.path
    process = Process()
    if let user {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
      process.arguments = user.setprivArguments + [path] + arguments
    } else {
      process.executableURL = URL(fileURLWithPath: path)
      process.arguments = arguments
    }
    commandLine = ([process.executableURL!.path] + (process.arguments ?? [])).joined(separator: " ")
    if let environment { process.environment = environment }
    switch input {
    case .none:
      self.input = nil
      process.standardInput = FileHandle.nullDevice
    case .pipe:
      let pipe = Pipe()
      self.input = pipe
      process.standardInput = pipe
    }
    for (stream, destination) in [(Stream.output, output), (.errors, errors)] {
      let handle: Any
      switch destination {
      case .pipe:
        let pipe = Pipe()
        pipes[stream] = PipeReader(pipe)
        handle = pipe
      case .discard:
        handle = FileHandle.nullDevice
      case .file(let file):
        let fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestSupportError.systemCall("open", file) }
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
      }
      if stream == .output { process.standardOutput = handle } else { process.standardError = handle }
    }
    let exited = exited
    exited.enter()
    process.terminationHandler = { _ in exited.leave() }
    do {
      try process.run()
    } catch {
      exited.leave()
      throw TestSupportError("cannot start \(commandLine): \(error)")
    }
    pid = process.processIdentifier
  }

  deinit {
    if status == nil {
      Glibc.kill(pid, SIGKILL)
      _ = wait(timeout: 10)
    }
    try? input?.fileHandleForWriting.close()
  }

  /// This process's environment with `adding` set and `removing` unset.
  public static func environment(adding: [String: String] = [:], removing: [String] = []) -> [String: String]
  {
    var environment = ProcessInfo.processInfo.environment
    for key in removing { environment.removeValue(forKey: key) }
    environment.merge(adding) { $1 }
    return environment
  }

  // MARK: Running to the end

  /// Runs `executable` to its end, at most `timeout` seconds (then kills it and throws), and
  /// returns its status and everything it wrote. `input`, if given, is its standard input.
  public static func run(
    _ executable: Executable, _ arguments: [String] = [], environment: [String: String]? = nil,
    as user: User? = nil, input: String? = nil, timeout: TimeInterval = 60
  ) throws -> Completion {
    let child = try ChildProcess(
      executable, arguments, environment: environment, as: user, input: input == nil ? .none : .pipe)
    if let input {
      child.write(input)
      child.closeInput()
    }
    let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
    let output = child.readToEnd(.output, until: deadline)
    let errors = child.readToEnd(.errors, until: deadline)
    let left = max(ContinuousClock.now.duration(to: deadline), .zero)
    guard let output, let errors, let status = child.wait(timeout: left.seconds) else {
      child.kill()
      throw TestSupportError("\(child.commandLine) did not finish within \(timeout) s; killed it")
    }
    return Completion(status: status, output: output, errors: errors)
  }

  // MARK: Input

  /// Writes `text` to the child's standard input (which must be a pipe).
  public func write(_ text: String) {
    try? input?.fileHandleForWriting.write(contentsOf: Data(text.utf8))
  }

  /// Closes the child's standard input: it reads its end.
  public func closeInput() {
    try? input?.fileHandleForWriting.close()
  }

  // MARK: Output

  /// The next line of `stream`, waiting at most `timeout` seconds for it.
  public func readLine(_ stream: Stream = .output, timeout: TimeInterval) -> Read {
    readLine(stream, until: ContinuousClock.now.advanced(by: .seconds(max(timeout, 0))))
  }

  /// The next line of `stream`, waiting until `deadline` at most. While it waits, the other
  /// stream is read too (into its own buffer), so that a child never blocks writing it.
  public func readLine(_ stream: Stream = .output, until deadline: ContinuousClock.Instant) -> Read {
    guard let reader = pipes[stream] else { return .endOfFile }
    while true {
      if let line = reader.takeLine() { return .line(line) }
      if reader.ended { return .endOfFile }
      guard pump(until: deadline) else { return .timedOut }
    }
  }

  /// Everything not yet read from `stream`, up to its end: nil if it does not end before
  /// `deadline`.
  public func readToEnd(_ stream: Stream = .output, until deadline: ContinuousClock.Instant) -> String? {
    guard let reader = pipes[stream] else { return "" }
    while !reader.ended {
      guard pump(until: deadline) else { return nil }
    }
    return reader.takeAll()
  }

  /// Everything not yet read from `stream`, up to its end or for at most `timeout` seconds;
  /// what arrived meanwhile if it did not end. For messages about a child that failed.
  public func readRest(_ stream: Stream = .errors, timeout: TimeInterval = 5) -> String {
    let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
    return readToEnd(stream, until: deadline) ?? pipes[stream]?.takeAll() ?? ""
  }

  /// Waits until a pipe that has not ended can be read, then reads each such pipe once.
  /// False when the deadline came first.
  private func pump(until deadline: ContinuousClock.Instant) -> Bool {
    let open = pipes.values.filter { !$0.ended }
    guard !open.isEmpty else { return false }
    let ready = waitReadable(open.map(\.fileDescriptor), until: deadline)
    guard !ready.isEmpty else { return false }
    for reader in open where ready.contains(reader.fileDescriptor) { reader.fill() }
    return true
  }

  // MARK: Signals and the end

  /// Sends `signal` to the child, unless it has already ended and been reaped.
  public func signal(_ signal: Int32) {
    guard status == nil else { return }
    Glibc.kill(pid, signal)
  }

  /// SIGKILL.
  public func kill() {
    signal(SIGKILL)
  }

  /// How the child ended; nil while it runs.
  public var status: Status? {
    guard exited.wait(timeout: .now()) == .success else { return nil }
    return process.terminationReason == .exit
      ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
  }

  /// Waits at most `timeout` seconds for the child to end; how it ended, or nil if it still runs.
  @discardableResult
  public func wait(timeout: TimeInterval = patience) -> Status? {
    guard exited.wait(timeout: .now() + max(timeout, 0)) == .success else { return nil }
    return status
  }
}

/// The read end of one of the child's output pipes and what was read from it but not taken.
private final class PipeReader {
  let pipe: Pipe
  let fileDescriptor: Int32
  private var buffer: [UInt8] = []
  private(set) var ended = false

  init(_ pipe: Pipe) {
    self.pipe = pipe
    fileDescriptor = pipe.fileHandleForReading.fileDescriptor
  }

  /// Reads what is there (the descriptor is readable: this does not block).
  func fill() {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 {
        ended = true
      } else {
        buffer += chunk[0..<count]
      }
      return
    }
  }

  func takeLine() -> String? {
    guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
    let line = String(decoding: buffer[..<newline], as: UTF8.self)
    buffer.removeSubrange(...newline)
    return line
  }

  func takeAll() -> String {
    defer { buffer.removeAll() }
    return String(decoding: buffer, as: UTF8.self)
  }
}

/// The descriptors among `descriptors` that can be read (or are at their end) before
/// `deadline`: empty when none is by then. With select, for its microsecond timeout (poll
/// counts in milliseconds), unless a descriptor is too large for it.
func waitReadable(_ descriptors: [Int32], until deadline: ContinuousClock.Instant) -> [Int32] {
  while true {
    let left = max(ContinuousClock.now.duration(to: deadline), .zero)
    guard let highest = descriptors.max(), highest < FD_SETSIZE else {
      var pollers = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
      let ready = poll(&pollers, nfds_t(pollers.count), milliseconds(left.seconds))
      if ready < 0 && errno == EINTR { continue }
      return pollers.filter { $0.revents != 0 }.map(\.fd)
    }
    var readable = fd_set()
    withUnsafeMutableBytes(of: &readable) { bits in
      for fd in descriptors {
        let offset = Int(fd / 64) * 8
        let word = bits.load(fromByteOffset: offset, as: UInt64.self)
        bits.storeBytes(of: word | UInt64(1) << UInt64(fd % 64), toByteOffset: offset, as: UInt64.self)
      }
    }
    var timeout = timeval(
      tv_sec: Int(left.components.seconds), tv_usec: Int(left.components.attoseconds / 1_000_000_000_000))
    let ready = select(highest + 1, &readable, nil, nil, &timeout)
    if ready < 0 && errno == EINTR { continue }
    guard ready > 0 else { return [] }
    return withUnsafeBytes(of: &readable) { bits in
      descriptors.filter { fd in
        bits.load(fromByteOffset: Int(fd / 64) * 8, as: UInt64.self) & (UInt64(1) << UInt64(fd % 64)) != 0
      }
    }
  }
}

extension Duration {
  /// The duration in seconds.
  var seconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }
}

/// The products of this package's build: the executables beside the running one (a test
/// bundle or the bench).
public enum BuiltProducts {
  /// The directory of the running executable.
  public static let directory: String = {
    let executable =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? CommandLine.arguments[0]
    return (executable as NSString).deletingLastPathComponent
  }()

  /// The product named `name`: beside the running executable, or in the nearest directory
  /// above it (inside the build folder) that has it.
  public static func path(_ name: String) -> String {
    var folder = directory
    while !folder.isEmpty && folder != "/" {
      let candidate = folder + "/" + name
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
      if (folder as NSString).lastPathComponent.hasPrefix(".build") { break }
      folder = (folder as NSString).deletingLastPathComponent
    }
    return directory + "/" + name
  }
}
