import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialEngine

/// `trialwatchctl extend` against a plan's extension limits, the real binary over a real socket:
/// the count in show, exit status 7 and its message for each limit, and the limits in plans.
@Suite struct ExtensionCommandLineTests {
  @Test func extend_BeyondAPlansLimits_EndsWithItsOwnStatus() throws {
    let fixture = try ctlFixture()
    let unraid = TrialPlan(
      name: "unraid", length: .days(15), reminders: .none, maxExtensions: 2, maxLength: .days(60))
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["unraid": unraid])) }
    let socket = ["--socket", fixture.socketPath]
    let sixty = TimeSpan.format(.days(60))
    #expect(try Ctl.run(["start", "acme-42", "--plan", "unraid"] + socket).status == 0)

    let beyond = try Ctl.run(["extend", "acme-42", "--by", "46d"] + socket)
    #expect(beyond.status == 7)
    #expect(beyond.errors.hasPrefix("trialwatchctl: extension refused: the new end "), "\(beyond.errors)")
    #expect(
      beyond.errors.contains("allows, ") && beyond.errors.contains("(MaxLength=\(sixty) from its start)"))
    #expect(beyond.errors.contains("\nNothing was changed. The limits are MaxExtensions= and MaxLength="))
    #expect(beyond.errors.contains("plans/unraid.conf sets them"))

    let once = try Ctl.run(["extend", "acme-42", "--by", "15d"] + socket)
    #expect(once.status == 0, "\(once.errors)")
    #expect(once.lines.contains("  Extended   1 time"), "\(once.output)")
    #expect(once.lines.contains("  Revision   2"), "\(once.output)")
    #expect(try Ctl.run(["extend", "acme-42", "--by", "15d"] + socket).status == 0)
    let third = try Ctl.run(["extend", "acme-42", "--by", "1d", "--label", "note=third"] + socket)
    #expect(third.status == 7)
    #expect(
      third.errors.hasPrefix(
        "trialwatchctl: extension refused: trial 0000000000000001 had 2 extensions, as many as its plan "
          + "\"unraid\" allows (MaxExtensions=2)\n"), "\(third.errors)")
    let shown = try Ctl.run(["status", "acme-42", "--json"] + socket)
    #expect(shown.output.contains(#""extensions":2"#) && !shown.output.contains("note"), "\(shown.output)")

    let plans = try Ctl.run(["plans"] + socket)
    let lines = plans.output.split(separator: "\n").map(String.init)
    #expect(lines.first?.contains("EXTENSIONS") == true)
    #expect(lines.contains { $0.hasPrefix("unraid ") && $0.contains("2x/\(sixty)") }, "\(plans.output)")
  }
}
