import ErrnoText
import Glibc

/// An `errno` value as its message, e.g. "Permission denied".
struct SystemError: Error, CustomStringConvertible {
  var code: Int32
  var description: String { errnoText(code) }
}

/// The whole content of the file at `path`.
func readFile(_ path: String) -> Result<[UInt8], SystemError> {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return .failure(SystemError(code: errno)) }
  defer { close(fd) }
  return readToEnd(fd)
}

/// What `fd` gives until its end.
func readToEnd(_ fd: Int32) -> Result<[UInt8], SystemError> {
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = read(fd, &chunk, chunk.count)
    if count < 0 {
      if errno == EINTR { continue }
      return .failure(SystemError(code: errno))
    }
    if count == 0 { return .success(bytes) }
    bytes.append(contentsOf: chunk[0..<count])
  }
}

/// The names in the directory at `path`, without `.` and `..`.
func listDirectory(_ path: String) -> Result<[String], SystemError> {
  guard let directory = opendir(path) else { return .failure(SystemError(code: errno)) }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return .success(names)
}

/// How a child process ended, and what it wrote on standard error.
struct ChildOutcome {
  enum Ending: Equatable {
    case exited(Int32)
    case signalled(Int32)
  }
  var ending: Ending
  var standardError: [UInt8]
}

/// Runs `program` with `arguments` (the first is `argv[0]`), standard input and output on
/// /dev/null, and waits for it; its standard error is read whole.
func runChild(_ program: String, arguments: [String]) -> Result<ChildOutcome, SystemError> {
  var ends: [Int32] = [-1, -1]
  guard pipe(&ends) == 0 else { return .failure(SystemError(code: errno)) }
  for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
  let argv = arguments.map { strdup($0) } + [nil]
  defer {
    for pointer in argv { free(pointer) }
  }
  var pid: pid_t = 0
  let result = posix_spawn(&pid, program, &actions, nil, argv, environ)
  close(ends[1])
  defer { close(ends[0]) }
  guard result == 0 else { return .failure(SystemError(code: result)) }
  let text = (try? readToEnd(ends[0]).get()) ?? []
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    guard errno == EINTR else { return .failure(SystemError(code: errno)) }
  }
  let signal = status & 0x7f
  let ending: ChildOutcome.Ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
  return .success(ChildOutcome(ending: ending, standardError: text))
}
