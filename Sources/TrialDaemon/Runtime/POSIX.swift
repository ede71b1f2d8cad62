import Glibc
import TrialConfiguration

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
