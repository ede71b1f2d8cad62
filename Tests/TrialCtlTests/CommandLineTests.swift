import Foundation
import Logging
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialTesting

/// A control server over the daemon's handlers and a real engine, for the real
/// `trialwatchctl` binary to talk to. The binary reads the system clock; the engine's virtual
/// time starts from the same instant.
func ctlFixture(group: UInt32? = nil, ids: [UInt64] = Array(1...50)) throws -> ControlFixture {
  try ControlFixture(group: group, ids: ids, start: SystemWallClock().now())
}

struct Run {
  var status: Int32
  var output: String
  var errors: String
  var lines: [String] {
    output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
  }
}

enum Ctl {
  /// trialwatchctl as installed: a link named trialwatchctl to the trialwatchd built next to the
  /// test bundle (in a folder of its own there), which is the client when started by that name.
  static let binary: String = {
    let folder = BuiltProducts.path("trialwatchctl-link")
    let link = folder + "/trialwatchctl"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != "../trialwatchd" {
      try? FileManager.default.removeItem(atPath: link)
      try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../trialwatchd")
    }
    return link
  }()

  static let baseEnvironment = ["PATH": "/usr/bin:/bin", "TZ": "UTC", "LANG": "C"]

  /// Starts trialwatchctl, for a command that runs until it is stopped.
  static func start(_ arguments: [String], environment: [String: String], asNobody: Bool = false) throws
    -> ChildProcess
  {
    try ChildProcess(
      .path(binary), arguments, environment: baseEnvironment.merging(environment) { $1 },
      as: asNobody ? .nobody : nil)
  }

  static func run(_ arguments: [String], environment: [String: String] = [:], asNobody: Bool = false) throws
    -> Run
  {
    let done = try ChildProcess.run(
      .path(binary), arguments, environment: baseEnvironment.merging(environment) { $1 },
      as: asNobody ? .nobody : nil)
    return Run(status: done.status.code, output: done.output, errors: done.errors)
  }
}

@Suite struct CommandLineTests {
  @Test func binary_IsBuilt() {
    #expect(
      FileManager.default.isExecutableFile(atPath: Ctl.binary), "build it with swift build --build-tests")
  }

  @Test(arguments: [(Ctl.binary, "trialwatchctl"), (BuiltProducts.path("trialwatchd"), "trialwatchd")])
  func oneProgram_StartedByEitherName_IsThatCommand(path: String, command: String) throws {
    let run = try ChildProcess.run(.path(path), ["--help"], environment: Ctl.baseEnvironment)
    #expect(run.status.code == 0)
    #expect(
      run.output.split(separator: "\n").contains { $0.hasPrefix("USAGE: \(command) ") }, "\(run.output)")
  }

  @Test func start_OfATrial_ShowsTheNewTrial() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run([
      "start", "acme-42", "--duration", "3d", "--reminders", "2d,1d", "--socket", fixture.socketPath,
    ])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines.first?.hasPrefix("acme-42: 3 days left (ends ") == true, "\(run.output)")
    #expect(run.lines.contains("  ID         0000000000000001"))
    #expect(run.lines.contains("  Reminders  2d, 1d before the end"))
    #expect(run.errors.isEmpty)
    #expect(
      try fixture.client().getTrial(GetTrialParameters(subject: "acme-42")).reminders.map(\.duration) == [
        .days(2), .days(1),
      ])
  }

  @Test func jsonOption_OfACommand_PrintsTheReplyParameters() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run([
      "start", "acme-42", "--reminders", "none", "--json", "--socket", fixture.socketPath,
    ])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines.count == 1)
    let trial = try decode(TrialReply.self, run.output).trial
    #expect(trial.subject == "acme-42")
    #expect(trial.reminders.isEmpty)
    let status = try Ctl.run(["status", trial.id.description, "--json", "--socket", fixture.socketPath])
    var again = try decode(TrialReply.self, status.output).trial
    // daysLeft moves with the clock.
    again.daysLeft = trial.daysLeft
    #expect(again == trial)
  }

  @Test func exitCode_OfRefusalsAndMissingTrials_IsTheirOwn() throws {
    let fixture = try ctlFixture()
    _ = try fixture.client().startTrial(StartTrialParameters(subject: "acme-42"))
    let duplicate = try Ctl.run(["start", "acme-42", "--socket", fixture.socketPath])
    #expect(duplicate.status == 1)
    #expect(
      duplicate.errors
        == "trialwatchctl: subject \"acme-42\" already has an active trial (id 0000000000000001)\n")
    let missing = try Ctl.run(["status", "nobody-knows", "--socket", fixture.socketPath])
    #expect(missing.status == 3)
    #expect(missing.errors == "trialwatchctl: no active trial for subject \"nobody-knows\"\n")
    let missingID = try Ctl.run(["plan", "00000000000000ff", "--socket", fixture.socketPath])
    #expect(missingID.status == 3)
    let past = try Ctl.run([
      "start", "late", "--ends-at", "2001-01-01T00:00:00Z", "--socket", fixture.socketPath,
    ])
    #expect(past.status == 2)
    #expect(past.errors == "trialwatchctl: invalid parameter endsAt: the end must lie in the future\n")
  }

  @Test func exitCode_OfAStoreThatCannotWrite_IsItsOwn() throws {
    struct DiskFull: StoreFaultError, CustomStringConvertible {
      var storeFault: StoreFaultReason? { .diskFull }
      var description: String { "data.mdb: no space left on the device" }
    }
    let repository = InMemoryTrialRepository()
    let fixture = try ControlFixture(ids: [1], start: SystemWallClock().now(), repository: repository)
    repository.failNextCommit = DiskFull()
    let full = try Ctl.run(["start", "acme-42", "--socket", fixture.socketPath])
    #expect(full.status == 6)
    #expect(
      full.errors
        == "trialwatchctl: the store cannot take writes now (the disk is full); nothing was changed: "
        + "data.mdb: no space left on the device\nFree space on the state directory's file system; writes "
        + "resume by themselves (check: trialwatchctl daemon-status)\n")
    #expect(try Ctl.run(["start", "acme-42", "--socket", fixture.socketPath]).status == 0)
  }

  @Test(arguments: [
    ["start"], ["start", "x", "--duration", "5 parsecs"],
    ["start", "x", "--duration", "1d", "--ends-at", "2030-01-01T00:00:00Z"],
    ["start", "x", "--ends-at", "tomorrow"], ["status"], ["list", "--state", "frozen"],
    ["list", "--limit", "0"],
    ["extend", "1"], ["extend", "xyz", "--by", "1d", "--ends-at", "2030-01-01T00:00:00Z"], ["end", "1"],
    ["end", "1", "--outcome", "expired"], ["simulate", "soon"], ["plan"], ["frobnicate"],
    ["status", "--id", "acme"], ["status", "--id", "--subject", "1"], ["plan", "--id", "12345678901234567"],
  ])
  func usage_WithInvalidArguments_ExitsWith2(arguments: [String]) throws {
    let run = try Ctl.run(arguments + ["--socket", "/nonexistent/socket"])
    #expect(run.status == 2, "\(arguments): \(run.errors)")
    #expect(run.errors.contains("Error: "), "\(run.errors)")
    #expect(run.output.isEmpty)
  }

  @Test func command_WhenTheDaemonIsUnreachable_ExitsWith5NamingTheSocket() throws {
    let path = "/tmp/trialwatch-absent-\(getpid())/io.trialwatch"
    let run = try Ctl.run(["daemon-status", "--socket", path])
    #expect(run.status == 5)
    #expect(run.errors.contains("cannot connect to \(path): No such file or directory"))
    #expect(run.errors.contains("systemctl status trialwatch"))
    let fromEnvironment = try Ctl.run(["daemon-status"], environment: ["TRIALWATCH_SOCKET": path])
    #expect(fromEnvironment.status == 5)
    #expect(fromEnvironment.errors.contains(path))
    let byDefault = try Ctl.run(["daemon-status"])
    #expect(byDefault.errors.contains("/run/trialwatch/io.trialwatch") || byDefault.status == 0)
  }

  @Test func socket_FromTheEnvironment_IsUsed() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run(["daemon-status"], environment: ["TRIALWATCH_SOCKET": fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines.first == "trialwatchd 1.2.3-test: 0 active trials")
    #expect(run.lines.contains("  Connections     1"))
  }

  @Test func list_OfMoreThanAPage_PagesAndFollowsTheCursor() throws {
    let fixture = try ctlFixture()
    let client = try fixture.client()
    for subject in ["a", "b", "c"] { _ = try client.startTrial(StartTrialParameters(subject: subject)) }
    let page = try Ctl.run(["list", "--limit", "2", "--socket", fixture.socketPath])
    #expect(page.status == 0)
    #expect(page.lines.count == 3)
    #expect(
      page.lines.first?.split(separator: " ", omittingEmptySubsequences: true) == [
        "ID", "SUBJECT", "STATE", "ENDS", "LEFT",
      ])
    #expect(page.lines.first?.hasPrefix("ID                SUBJECT  STATE   ENDS  ") == true)
    #expect(page.lines[1].hasPrefix("0000000000000001  a        active  "))
    #expect(page.lines[1].hasSuffix("  5 days left"))
    #expect(page.errors == "More trials follow: trialwatchctl list --after 0000000000000002 (or --all)\n")
    let rest = try Ctl.run(["list", "--after", "0000000000000002", "--socket", fixture.socketPath])
    #expect(rest.lines.count == 2)
    #expect(rest.lines[1].hasPrefix("0000000000000003  c"))
    let all = try Ctl.run(["list", "--limit", "2", "--all", "--socket", fixture.socketPath])
    #expect(all.lines.count == 4)
    #expect(all.errors.isEmpty)
    let json = try Ctl.run(["list", "--limit", "2", "--all", "--json", "--socket", fixture.socketPath])
    #expect(json.lines.count == 2)
    let pages = try json.lines.map { try decode(ListTrialsReply.self, $0) }
    #expect(pages.map { $0.trials.count } == [2, 1])
    let none = try Ctl.run(["list", "--state", "expired", "--socket", fixture.socketPath])
    #expect(none.lines == ["No trials."])
  }

  @Test func extendEndPlanSimulate_OfATrial_ShowWhatTheyDid() throws {
    let fixture = try ctlFixture()
    _ = try fixture.client().startTrial(StartTrialParameters(subject: "acme", duration: .days(5)))
    let socket = ["--socket", fixture.socketPath]
    let extended = try Ctl.run(["extend", "--id", "1", "--by", "2d"] + socket)
    #expect(extended.status == 0, "\(extended.errors)")
    #expect(extended.lines.first?.hasPrefix("acme: 7 days left") == true)
    #expect(extended.lines.contains("  Revision   2"))

    let plan = try Ctl.run(["plan", "0000000000000001"] + socket)
    #expect(plan.status == 0)
    #expect(plan.lines.first == "Events of trial 0000000000000001:")
    #expect(plan.lines.count == 5)
    #expect(plan.lines[1].hasPrefix("DUE"))
    #expect(plan.lines[4].contains("expiry"))
    #expect(plan.lines[4].hasSuffix("pending"))

    let simulated = try Ctl.run(["simulate", "+6d"] + socket)
    #expect(simulated.status == 0)
    #expect(simulated.lines.first?.hasSuffix(": 2 events.") == true, "\(simulated.output)")
    #expect(simulated.lines.filter { $0.contains("would fire") }.count == 2)

    let ended = try Ctl.run(["end", "0000000000000001", "--outcome", "converted"] + socket)
    #expect(ended.status == 0)
    #expect(ended.lines.first == "acme: converted today")
    let again = try Ctl.run(["end", "--id", "1", "--outcome", "cancelled"] + socket)
    #expect(again.status == 1)
    #expect(again.errors == "trialwatchctl: trial 0000000000000001 is not active (it is converted)\n")
    let nothing = try Ctl.run(["simulate", "2099-01-01T00:00:00Z"] + socket)
    #expect(nothing.lines.last == "Nothing would fire.")

    // By subject: its active trial, else its most recent one.
    let endedBySubject = try Ctl.run(["status", "acme"] + socket)
    #expect(endedBySubject.lines.first == "acme: converted today", "\(endedBySubject.errors)")
    #expect(try Ctl.run(["plan", "acme"] + socket).lines.first == "Events of trial 0000000000000001:")
    _ = try fixture.client().startTrial(StartTrialParameters(subject: "beta-7", duration: .days(5)))
    let extendedBySubject = try Ctl.run(["extend", "beta-7", "--by", "1d"] + socket)
    #expect(
      extendedBySubject.lines.first?.hasPrefix("beta-7: 6 days left") == true, "\(extendedBySubject.errors)")
    #expect(try Ctl.run(["end", "beta-7", "--outcome", "cancelled"] + socket).status == 0)
    let unknown = try Ctl.run(["extend", "nobody-here", "--by", "1d"] + socket)
    #expect(unknown.status == 3)
    #expect(unknown.errors.contains("nobody-here"), "\(unknown.errors)")
  }

  /// One rule for every command: 16 hexadecimal digits are an id, anything else a subject;
  /// `--id` and `--subject` say which is meant.
  @Test func trialArgument_IsAnIdOnlyAsSixteenHexDigits_OrWithId() throws {
    let fixture = try ctlFixture(ids: [0xCAFE, 0x2, 0x3])
    let socket = ["--socket", fixture.socketPath]
    let client = try fixture.client()
    _ = try client.startTrial(StartTrialParameters(subject: "cafe"))
    _ = try client.startTrial(StartTrialParameters(subject: "000000000000cafe"))
    // Hex text that is not 16 digits is a subject, for every command.
    let ended = try Ctl.run(["end", "cafe", "--outcome", "converted"] + socket)
    #expect(ended.status == 0, "\(ended.errors)")
    #expect(try client.getTrial(GetTrialParameters(id: TrialID(0xCAFE))).state == .converted)
    #expect(try Ctl.run(["status", "cafe"] + socket).lines.first == "cafe: converted today")
    // Sixteen digits are an id; --subject reads them as a subject.
    #expect(
      try Ctl.run(["plan", "000000000000cafe"] + socket).lines.first == "Events of trial 000000000000cafe:")
    let bySubject = try Ctl.run(["plan", "--subject", "000000000000cafe"] + socket)
    #expect(bySubject.lines.first == "Events of trial 0000000000000002:", "\(bySubject.errors)")
    // --id reads shorter hex as an id.
    let extended = try Ctl.run(["extend", "--id", "2", "--by", "1d"] + socket)
    #expect(extended.lines.first?.hasPrefix("000000000000cafe: 6 days left") == true, "\(extended.errors)")
    let missing = try Ctl.run(["status", "--id", "ff"] + socket)
    #expect(missing.status == 3)
    #expect(missing.errors == "trialwatchctl: no trial with id 00000000000000ff\n")
  }

  @Test func dates_InTheOutput_FollowTheReadersTimeZone() throws {
    let fixture = try ctlFixture()
    _ = try fixture.client().startTrial(
      StartTrialParameters(subject: "tz", endsAt: try RFC3339.parse("2030-01-01T00:00:00Z")))
    let utc = try Ctl.run(["status", "tz", "--socket", fixture.socketPath], environment: ["TZ": "UTC"])
    let tokyo = try Ctl.run(
      ["status", "tz", "--socket", fixture.socketPath], environment: ["TZ": "Asia/Tokyo"])
    #expect(utc.lines.contains("  Ends       Jan 1, 2030 at 12:00\u{202F}AM"), "\(utc.output)")
    #expect(tokyo.lines.contains("  Ends       Jan 1, 2030 at 9:00\u{202F}AM"), "\(tokyo.output)")
    let german = try Ctl.run(
      ["status", "tz", "--socket", fixture.socketPath],
      environment: ["TZ": "Europe/Berlin", "LANG": "de_DE.UTF-8"])
    #expect(german.lines.contains("  Ends       01.01.2030, 01:00"), "\(german.output)")
  }

  @Test func daemonStatus_WithJSON_PrintsTheStatusReply() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run(["daemon-status", "--json", "--socket", fixture.socketPath])
    #expect(run.status == 0)
    let status = try decode(GetStatusReply.self, run.output)
    #expect(status.version == "1.2.3-test")
    #expect(status.connections == 1)
    #expect(run.lines.count == 1, "one object")
    let outlook = try #require(try run.json()["outlook"] as? [[String: Any]])
    #expect(outlook.map { $0["within"] as? String } == ["24h", "7d"])
    #expect(outlook.map { $0["trials"] as? Int } == [0, 0])
  }

  @Test func daemonStatus_SaysHowManyTrialsAreDueWithinTheSpansAsked() throws {
    let fixture = try ctlFixture()
    let client = try fixture.client()
    _ = try client.startTrial("soon", days: 0.5, reminders: [])
    _ = try client.startTrial("later", days: 5, reminders: [])
    let run = try Ctl.run(["daemon-status", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines.contains("  Due             1 trial within 24h, 2 within 7d"), "\(run.output)")
    let asked = try Ctl.run(["daemon-status", "--due-within", "1h, 1d 12h", "--socket", fixture.socketPath])
    #expect(asked.lines.contains("  Due             0 trials within 1h, 1 within 1d 12h"), "\(asked.output)")
    for bad in ["0", "soon", "500ms", ""] {
      let refused = try Ctl.run(["daemon-status", "--due-within", bad, "--socket", fixture.socketPath])
      #expect(refused.status == 2, "\(bad): \(refused.errors)")
      #expect(refused.errors.contains("--due-within: "), "\(bad): \(refused.errors)")
    }
  }

  @Test(.enabled(if: getuid() == 0, "needs root to run the binary as nobody"))
  func change_WithoutPermission_ExitsWith4() throws {
    let fixture = try ctlFixture(group: 65_534)
    _ = try fixture.client().startTrial(StartTrialParameters(subject: "root-owned"))
    let refused = try Ctl.run(
      ["end", "--id", "1", "--outcome", "cancelled", "--socket", fixture.socketPath], asNobody: true)
    #expect(refused.status == 4, "\(refused.errors)")
    #expect(
      refused.errors.hasPrefix(
        "trialwatchctl: permission denied: io.trialwatch.Trials.EndTrial changes trials"))
    #expect(refused.errors.contains("caller uid 65534"))
    let reading = try Ctl.run(["status", "root-owned", "--socket", fixture.socketPath], asNobody: true)
    #expect(reading.status == 0, "\(reading.errors)")
    #expect(reading.lines.first?.hasPrefix("root-owned: 5 days left") == true)

    let locked = try ctlFixture(group: 0)
    let outside = try Ctl.run(["status", "x", "--socket", locked.socketPath], asNobody: true)
    #expect(outside.status == 4)
    #expect(
      outside.errors.contains("permission denied connecting to the trialwatch daemon at \(locked.socketPath)")
    )
  }

  @Test(arguments: [true, false])
  func watch_WhileEventsFire_PrintsEachOne(json: Bool) throws {
    let fixture = try ctlFixture()
    _ = try fixture.client().startTrial(
      StartTrialParameters(subject: "watched", duration: .days(1), reminders: ReminderSchedule.none))
    let watch = try Ctl.start(
      ["watch", "--socket", fixture.socketPath] + (json ? ["--json"] : []), environment: [:])
    // SIGKILL: the child may inherit a mask that blocks SIGTERM from the test's thread.
    defer { watch.kill() }
    let notice = watch.readLine(.errors, timeout: 10).line
    #expect(notice == "Watching for events; press Ctrl-C to stop.")
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 1)
    let line = try #require(watch.readLine(timeout: 10).line)
    if json {
      let event = try #require(try decode(WatchReply.self, line).event)
      #expect(event.subject == "watched")
      #expect(event.kind == .expiry)
    } else {
      #expect(line.hasSuffix("  watched  expiry  fired"), "\(line)")
    }
    watch.kill()
    #expect(watch.wait() == .signalled(SIGKILL))
  }
}

/// A line of `--json` output, read as the reply it prints.
func decode<T: Decodable>(_ type: T.Type, _ line: String) throws -> T {
  try WireCoding.makeDecoder().decode(T.self, from: Data(line.utf8))
}

extension Run {
  /// The reply printed with `--json`: one object.
  func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    try #require(
      JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(errors)",
      sourceLocation: sourceLocation)
  }

  /// The trial of a reply printed with `--json`.
  func trial(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    try #require(
      try json(sourceLocation: sourceLocation)["trial"] as? [String: Any], "\(output) \(errors)",
      sourceLocation: sourceLocation)
  }
}

extension DaemonProcess {
  /// Starts the daemon and waits for READY=1: the environment that points trialwatchctl at it.
  func startReady(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: String] {
    try start()
    #expect(notify.waitFor { $0.contains("READY=1") }.found != nil, sourceLocation: sourceLocation)
    return ["TRIALWATCH_SOCKET": socketPath]
  }
}
