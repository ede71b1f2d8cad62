import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialCtl

#if canImport(Glibc)
  import Glibc
#endif

/// The command consume runs per event, as a real child process: its environment, its input,
/// its outcomes, its time-out and a stop request.
@Suite struct CommandRunnerTests {
  static func event() -> EventObject {
    let end = Date(timeIntervalSince1970: 1_750_000_000)
    var event = EventObject(
      id: EventID(trialID: TrialID(0xABC), revision: 2, kind: .reminder(before: .days(1))),
      subject: "acme 42", labels: try! TrialLabels(["customer": "c-991", "email": "ada@example.com"]),
      state: .delivered, due: end.addingTimeInterval(-86_400), takenAt: end.addingTimeInterval(-86_400 + 125),
      lateness: .seconds(125))
    event.cursor = EventCursor(0x2A)
    return event
  }

  static func runner(
    _ script: String, timeout: Duration = .seconds(60), grace: Duration = .seconds(10),
    environment: [String: String] = ["PATH": "/usr/bin:/bin"]
  ) -> SpawnedCommandRunner {
    SpawnedCommandRunner(
      arguments: ["/bin/sh", "-c", script], environment: environment, consumer: "mailer", timeout: timeout,
      grace: grace)
  }

  @Test func spawnedCommand_ForAnEvent_GetsItsVariablesAndTheEventOnStandardInput() throws {
    let scratch = try TemporaryDirectory("runner")
    let runner = Self.runner(
      "env > '\(scratch.appending("env"))' && cat > '\(scratch.appending("input"))'",
      environment: [
        "PATH": "/usr/bin:/bin", "FROM_CONSUME": "kept", "EVENT_REASON": "inherited",
        "TRIAL_LABEL_TIER": "inherited", "TRIAL_LABEL_CUSTOMER": "inherited",
      ])
    #expect(runner.run(Self.event(), attempt: 3) == .succeeded)
    let lines = try String(contentsOfFile: scratch.appending("env"), encoding: .utf8).split(separator: "\n")
    var variables: [String: String] = [:]
    for line in lines {
      guard let equals = line.firstIndex(of: "=") else { continue }
      variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    #expect(variables["EVENT_ID"] == "0000000000000abc-r2-reminder-86400000ms")
    #expect(variables["EVENT_KIND"] == "reminder")
    #expect(variables["EVENT_STATE"] == "fired")
    #expect(variables["EVENT_CURSOR"] == "000000000000002a")
    #expect(variables["EVENT_DUE"] == "2025-06-14T15:06:40Z")
    #expect(variables["EVENT_TAKEN"] == "2025-06-14T15:08:45Z")
    #expect(variables["EVENT_LATENESS"] == "2min 5s")
    #expect(variables["EVENT_LATENESS_USEC"] == "125000000")
    #expect(variables["EVENT_OFFSET"] == "1d")
    #expect(variables["EVENT_REASON"] == "", "set empty, not inherited")
    #expect(variables["EVENT_ATTEMPT"] == "3")
    #expect(variables["TRIAL_ID"] == "0000000000000abc")
    #expect(variables["TRIAL_SUBJECT"] == "acme 42")
    #expect(variables["TRIAL_REVISION"] == "2")
    #expect(variables["TRIAL_END"] == "2025-06-15T15:06:40Z")
    #expect(variables["TRIALWATCH_CONSUMER"] == "mailer")
    #expect(variables["FROM_CONSUME"] == "kept")
    #expect(
      variables["TRIAL_LABEL_CUSTOMER"] == "c-991" && variables["TRIAL_LABEL_EMAIL"] == "ada@example.com")
    #expect(variables["TRIAL_LABEL_TIER"] == nil, "a label of consume's own environment is not passed on")
    let input = try String(contentsOfFile: scratch.appending("input"), encoding: .utf8)
    #expect(input.hasSuffix("}\n") && input.dropLast().contains("\n") == false, "one line")
    #expect(try decode(EventObject.self, input) == Self.event())
  }

  @Test func spawnedCommand_ThatIgnoresItsInput_Succeeds() {
    #expect(Self.runner("exec </dev/null; true").run(Self.event(), attempt: 1) == .succeeded)
  }

  @Test func spawnedCommand_StatusOrSignal_IsItsOutcome() {
    let event = Self.event()
    #expect(Self.runner("exit 3").run(event, attempt: 1) == .exited(3))
    #expect(Self.runner("kill -KILL $$").run(event, attempt: 1) == .killed(signal: SIGKILL))
    let missing = SpawnedCommandRunner(
      arguments: ["/nonexistent/notify"], environment: [:], consumer: "mailer", timeout: .seconds(60),
      grace: .seconds(1))
    #expect(
      missing.run(event, attempt: 1) == .couldNotStart("/nonexistent/notify: No such file or directory"))
    let searched = SpawnedCommandRunner(
      arguments: ["true"], environment: [:], consumer: "mailer", timeout: .seconds(60), grace: .seconds(1))
    #expect(searched.run(event, attempt: 1) == .succeeded, "looked up in PATH")
  }

  @Test func spawnedCommand_RunningPastTheTimeout_IsStopped() {
    let event = Self.event()
    // The shell and its sleep, a process group: both are stopped.
    #expect(
      Self.runner("sleep 30; true", timeout: .milliseconds(100)).run(event, attempt: 1)
        == .timedOut(.milliseconds(100)))
    // One that ignores SIGTERM gets SIGKILL after the grace period (else it would succeed).
    #expect(
      Self.runner("trap '' TERM; sleep 30; true", timeout: .milliseconds(100), grace: .milliseconds(100)).run(
        event, attempt: 1) == .timedOut(.milliseconds(100)))
  }

  @Test func terminate_OfTheRunner_StopsItsCommandsWithSIGTERM() {
    let runner = Self.runner("exec sleep 30")
    runner.terminate()
    #expect(runner.run(Self.event(), attempt: 1) == .killed(signal: SIGTERM))
    #expect(runner.run(Self.event(), attempt: 2) == .killed(signal: SIGTERM), "and every later one")
  }

  @Test func outcome_InWords_NamesStatusSignalOrTimeout() {
    #expect(CommandOutcome.exited(2).description == "exited with status 2")
    #expect(CommandOutcome.killed(signal: SIGTERM).description == "was killed by signal 15 (SIGTERM)")
    #expect(CommandOutcome.timedOut(.seconds(300)).description == "timed out after 5min and was stopped")
  }
}
