import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

/// trialwatchctl cancel and uncancel against the daemon's handlers: the mark shown where the
/// state is, taken back, and a cancel now.
@Suite struct CancelCommandLineTests {
  @Test func cancelAndUncancel_ShowTheMark() throws {
    let fixture = try ctlFixture()
    let socket = ["--socket", fixture.socketPath]
    #expect(try Ctl.run(["start", "acme-7", "--duration", "10d"] + socket).status == 0)

    let started = try Ctl.run(["status", "acme-7", "--json"] + socket).output
    let id = try #require(started.split(separator: "\"").drop { $0 != "id" }.dropFirst(2).first)
    let marked = try Ctl.run(["cancel", "acme-7"] + socket)
    #expect(marked.status == 0, "\(marked.errors)")
    #expect(
      marked.lines.contains { $0.trimmed.hasPrefix("State") && $0.hasSuffix("active, cancels at end") },
      "\(marked.output)")
    #expect(marked.lines.contains { $0.trimmed.hasPrefix("Cancels at") }, "\(marked.output)")
    let listed = try Ctl.run(["list"] + socket)
    #expect(listed.output.contains("active, cancels at end"), "\(listed.output)")
    let json = try Ctl.run(["status", "acme-7", "--json"] + socket)
    #expect(json.output.contains("\"cancelsAt\""), "\(json.output)")

    let unmarked = try Ctl.run(["uncancel", "acme-7"] + socket)
    #expect(unmarked.status == 0 && !unmarked.output.contains("Cancels at"), "\(unmarked.output)")
    let again = try Ctl.run(["uncancel", "acme-7"] + socket)
    #expect(again.status == 1 && again.errors.contains("is not cancelled at its end"), "\(again.errors)")

    let now = try Ctl.run(["cancel", "acme-7", "--now", "--label", "why=price"] + socket)
    #expect(now.status == 0, "\(now.errors)")
    #expect(
      now.lines.contains { $0.trimmed.hasPrefix("State") && $0.hasSuffix("cancelled") }, "\(now.output)")
    let ended = try Ctl.run(["cancel", String(id)] + socket)
    #expect(ended.status == 1 && ended.errors.contains("is not active"), "\(ended.errors)")
    let bySubject = try Ctl.run(["uncancel", "acme-7"] + socket)
    #expect(bySubject.status == 3, "\(bySubject.errors)")
    #expect(try Ctl.run(["cancel", "nobody"] + socket).status == 3)
  }
}

extension String {
  fileprivate var trimmed: Substring { drop { $0 == " " } }
}
