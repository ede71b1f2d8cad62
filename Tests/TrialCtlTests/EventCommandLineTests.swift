import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// The event log's commands of the real trialwatchctl binary: watch --after, event-log,
/// consumers, consumer and consume, against a control server over a real engine.
@Suite struct EventCommandLineTests {
  @Test(arguments: [
    ["watch", "--after", "xyz"], ["watch", "--after", "2a"], ["event-log", "extra"],
    ["consumer", "create"], ["consumer", "create", "bad name"], ["consumer", "create", "-x"],
    ["consumer", "create", "x", "--after", "12345678901234567"],
    ["consumer", "create", "x", "--after", "0000000000000001", "--from-oldest"], ["consumer", "show"],
    ["consumer", "ack", "x"], ["consumer", "ack", "x", "zz"], ["consumer", "remove", "a/b"],
    ["consume", "x"],
    ["consume", "x", "--"], ["consume", "x", "true"], ["consume", "--", "true"],
    ["consume", "x", "--after", "0000000000000001", "--", "true"],
    ["consume", "x", "--from-oldest", "--", "true"],
    ["consume", "x", "--create", "--after", "0000000000000001", "--from-oldest", "--", "true"],
    ["consume", "x", "--timeout", "0", "--", "true"], ["consume", "x", "--kill-after", "soon", "--", "true"],
    ["consume", "x", "--retry-initial", "1min", "--retry-max", "1s", "--", "true"],
  ])
  func usage_OfEventCommandsWithInvalidArguments_ExitsWith2BeforeConnecting(arguments: [String]) throws {
    // Before `--`, after which every word is the command's.
    var words = arguments
    words.insert(
      contentsOf: ["--socket", "/nonexistent/socket"], at: words.firstIndex(of: "--") ?? words.count)
    let run = try Ctl.run(words)
    #expect(run.status == 2, "\(arguments): \(run.errors)")
    #expect(!run.errors.contains("cannot connect"), "\(arguments): \(run.errors)")
    #expect(run.output.isEmpty)
  }

  @Test func malformedCursor_IsRefused_NamingTheOptionAndTheForm() throws {
    let run = try Ctl.run(["watch", "--after", "tomorrow", "--socket", "/nonexistent/socket"])
    #expect(run.status == 2)
    #expect(
      run.errors.contains(
        "--after: \"tomorrow\" is not an event cursor (16 hexadecimal digits, then -GGGGGGGG after a restore, as watch and event-log print them)"
      ),
      "\(run.errors)")
    let name = try Ctl.run(["consumer", "show", "no way", "--socket", "/nonexistent/socket"])
    #expect(
      name.errors.contains("NAME: the consumer name \"no way\" may only contain letters, digits and -_.@:"))
    let command = try Ctl.run(["consume", "mailer", "--socket", "/nonexistent/socket"])
    #expect(
      command.errors.contains("give the command to run after --: trialwatchctl consume NAME -- COMMAND"))
  }

  @Test func consume_WhenTheDaemonIsUnreachable_KeepsTryingUntilStopped() throws {
    let scratch = try TemporaryDirectory("consume")
    let consume = try Ctl.start(
      [
        "consume", "mailer", "--retry-initial", "10ms", "--retry-max", "20ms", "--socket",
        scratch.appending("absent.sock"), "--", "true",
      ], environment: [:])
    let deadline = ContinuousClock.now.advanced(by: .seconds(30))
    // Three attempts, each logged; then SIGTERM ends it cleanly.
    var lines: [String] = []
    while lines.count < 3, let line = consume.readLine(.errors, until: deadline).line { lines.append(line) }
    #expect(lines.count == 3)
    #expect(
      lines.allSatisfy { $0.contains("cannot connect to \(scratch.appending("absent.sock"))") }, "\(lines)")
    #expect(lines.last?.hasSuffix("trying again in 20ms") == true, "\(lines)")
    consume.signal(SIGTERM)
    #expect(consume.wait(timeout: 30) == .exited(0))
  }
}
