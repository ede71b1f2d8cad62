import Dispatch
import ErrnoText
import FoundationEssentials
import Synchronization
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The environment a consumer's command gets for an event, on top of consume's own.
public enum EventEnvironment {
  /// Every name set for an event; those that do not apply to it are set empty, so that none
  /// is inherited from consume's own environment.
  public static let names =
    [
      "EVENT_ID", "EVENT_KIND", "EVENT_STATE", "EVENT_CURSOR", "EVENT_DUE", "EVENT_TAKEN", "EVENT_LATENESS",
      "EVENT_LATENESS_USEC", "EVENT_OFFSET", "EVENT_LEFT", "EVENT_REASON", "EVENT_ATTEMPT", "TRIAL_ID",
      "TRIAL_REVISION",
      "TRIAL_END", "TRIALWATCH_CONSUMER",
    ] + TrialAttributes.named.map(\.variable)

  /// The variables for `event`, run by `consumer` for the `attempt`th time: `names`, and the
  /// trial's attributes as the event was taken under the names the journal gives them
  /// (`EventObject.attributeVariables`: each named one under its variable,
  /// `TrialAttributes.named`, and `TRIAL_LABEL_<KEY>` for each label).
  public static func variables(for event: EventObject, consumer: String, attempt: Int) -> [String: String] {
    var variables = Dictionary(uniqueKeysWithValues: names.map { ($0, "") })
    variables["EVENT_ID"] = event.id.description
    variables["EVENT_KIND"] = event.kind.name
    variables["EVENT_STATE"] =
      switch event.state {
      case .fired, .delivered: "fired"
      case .skipped: "skipped"
      case .pending: "pending"
      }
    variables["EVENT_CURSOR"] = event.cursor?.description ?? ""
    variables["EVENT_DUE"] = RFC3339.format(event.due)
    variables["EVENT_TAKEN"] = event.takenAt.map(RFC3339.format) ?? ""
    variables["EVENT_LATENESS"] = event.lateness?.description ?? ""
    variables["EVENT_LATENESS_USEC"] = String(event.lateness?.duration.roundedMicroseconds ?? 0)
    variables["EVENT_OFFSET"] = event.offset?.description ?? ""
    variables["EVENT_LEFT"] = event.left?.description ?? ""
    variables["EVENT_REASON"] = event.reason ?? ""
    variables["EVENT_ATTEMPT"] = String(attempt)
    variables["TRIAL_ID"] = event.trialId.description
    variables["TRIAL_REVISION"] = String(event.revision)
    variables["TRIAL_END"] = event.endsAt.map(RFC3339.format) ?? ""
    variables["TRIALWATCH_CONSUMER"] = consumer
    for (name, value) in event.attributeVariables { variables[name] = value }
    return variables
  }

  /// `environment` with the variables of an event: what consume had of its own, but any
  /// label variable, which only the event may set.
  public static func merged(_ environment: [String: String], _ variables: [String: String]) -> [String:
    String]
  {
    environment.filter { !$0.key.hasPrefix(TrialAttributes.labelVariablePrefix) }.merging(variables) { $1 }
  }

  /// What the command reads on standard input: the event as the Watch reply carries it, on
  /// one line.
  public static func input(for event: EventObject) -> String {
    WireCoding.text(event) + "\n"
  }
}

/// Runs a command per event with `posix_spawn(3)`: the event on standard input, its
/// variables in the environment, standard output and error shared with consume. The command
/// runs in a process group of its own, which is sent SIGTERM when it runs longer than the
/// time-out or a stop is asked for, then SIGKILL after the grace period. The time-out is
/// kept by a Dispatch timer (monotonic), not by reading a clock; every child is reaped.
public final class SpawnedCommandRunner: EventCommandRunner, Sendable {
  /// The command and its arguments; the first is looked up in `PATH` when it has no slash.
  public let arguments: [String]
  private let environment: [String: String]
  private let consumer: String
  private let timeout: Duration
  private let grace: Duration
  /// The command running now, if any.
  private let running = Mutex<RunningChild?>(nil)
  private let stopping = Atomic<Bool>(false)

  public init(
    arguments: [String], environment: [String: String], consumer: String, timeout: Duration, grace: Duration
  ) {
    self.arguments = arguments
    self.environment = environment
    self.consumer = consumer
    self.timeout = timeout
    self.grace = grace
  }

  /// A stop request: the running command (and each later one, at once) is sent SIGTERM, then
  /// SIGKILL after the grace period. Safe from any thread.
  public func terminate() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    running.withLock { $0 }?.terminate(grace: grace)
  }

  public func run(_ event: EventObject, attempt: Int) -> CommandOutcome {
    let variables = EventEnvironment.merged(
      environment, EventEnvironment.variables(for: event, consumer: consumer, attempt: attempt))
    let pid: pid_t
    do {
      pid = try spawn(input: Array(EventEnvironment.input(for: event).utf8), environment: variables)
    } catch {
      return .couldNotStart(error.reason)
    }
    let child = RunningChild(pid: pid)
    running.withLock { $0 = child }
    if stopping.load(ordering: .sequentiallyConsistent) { child.terminate(grace: grace) }
    let timer = DispatchSource.makeTimerSource(queue: .global())
    let grace = grace
    timer.setEventHandler { child.timeOut(grace: grace) }
    timer.schedule(deadline: .now() + Self.interval(timeout))
    timer.resume()
    let status = child.waitForEnd()
    timer.cancel()
    running.withLock { $0 = nil }
    let exited = status & 0x7f == 0
    if exited && (status >> 8) & 0xff == 0 { return .succeeded }
    if child.hasTimedOut { return .timedOut(timeout) }
    return exited ? .exited((status >> 8) & 0xff) : .killed(signal: status & 0x7f)
  }

  /// `Duration` as Dispatch counts time.
  static func interval(_ span: Duration) -> DispatchTimeInterval {
    let (seconds, attoseconds) = span.components
    guard seconds < Int64(Int.max / 1_000_000_000) - 1 else { return .never }
    return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
  }

  private struct SpawnError: Error {
    var reason: String
  }

  /// Starts the command with `input` on a pipe as its standard input.
  private func spawn(input: [UInt8], environment: [String: String]) throws(SpawnError) -> pid_t {
    guard let program = arguments.first else { throw SpawnError(reason: "no command given") }
    guard let ends = closeOnExecPipe() else { throw SpawnError(reason: errnoText(errno)) }
    let pipe = [ends.read, ends.write]
    // What fits in the pipe now (an event always does) is written before the command starts.
    _ = fcntl(pipe[1], F_SETFL, O_NONBLOCK)
    var written = 0
    while written < input.count {
      let count = input[written...].withUnsafeBytes { Glibc.write(pipe[1], $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      written += count
    }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe[0], 0)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signo in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signo) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
    close(pipe[0])
    guard result == 0 else {
      close(pipe[1])
      throw SpawnError(reason: "\(program): \(errnoText(result))")
    }
    if written < input.count {
      // The rest, blocking, beside the command (Dispatch's threads block SIGPIPE).
      let rest = Array(input[written...])
      let descriptor = pipe[1]
      _ = fcntl(descriptor, F_SETFL, 0)
      DispatchQueue.global().async {
        var offset = 0
        while offset < rest.count {
          let count = rest[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
          if count < 0 && errno == EINTR { continue }
          guard count > 0 else { break }
          offset += count
        }
        close(descriptor)
      }
    } else {
      close(pipe[1])
    }
    return pid
  }
}

/// A command's process while it runs: signalled from the timer's and the stop request's
/// threads, waited for by the consume loop's. It is reaped only once no signal can be sent
/// to it any more, so a signal never reaches a process that took over its id.
private final class RunningChild: Sendable {
  let pid: pid_t

  private struct State {
    var ended = false
    var timedOut = false
    var terminating = false
    var kill: (any DispatchSourceTimer)?
  }
  private let state = Mutex(State())

  init(pid: pid_t) {
    self.pid = pid
  }

  var hasTimedOut: Bool { state.withLock { $0.timedOut } }

  /// The time-out passed: SIGTERM now, SIGKILL after `grace`.
  func timeOut(grace: Duration) {
    state.withLock { state in
      guard !state.ended else { return }
      state.timedOut = true
      stop(&state, grace: grace)
    }
  }

  /// A stop request: SIGTERM now, SIGKILL after `grace`.
  func terminate(grace: Duration) {
    state.withLock { state in
      guard !state.ended else { return }
      stop(&state, grace: grace)
    }
  }

  private func stop(_ state: inout State, grace: Duration) {
    guard !state.terminating else { return }
    state.terminating = true
    send(SIGTERM)
    let timer = DispatchSource.makeTimerSource(queue: .global())
    timer.setEventHandler { [self] in
      self.state.withLock { state in
        if !state.ended { self.send(SIGKILL) }
      }
    }
    timer.schedule(deadline: .now() + SpawnedCommandRunner.interval(grace))
    timer.resume()
    state.kill = timer
  }

  /// To the command's process group; to the process alone if it left the group.
  private func send(_ signo: Int32) {
    if Glibc.kill(-pid, signo) != 0 { Glibc.kill(pid, signo) }
  }

  /// Waits for the process to end, then reaps it; its wait status.
  func waitForEnd() -> Int32 {
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
    state.withLock { state in
      state.ended = true
      state.kill?.cancel()
      state.kill = nil
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
  }
}
