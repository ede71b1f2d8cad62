import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialCtl

/// trialwatchctl pause and resume against the real daemon, killed in between: the pause is kept
/// by the store, its event delivered once, and the resume moves the end by the time left.
@Suite struct PauseEndToEndTests {
  @Test func pausedTrial_KilledDaemon_StaysPausedAndResumesOnce() throws {
    let daemon = try DaemonProcess()
    let env = try daemon.startReady()
    let started = try Ctl.run(["start", "acme-1", "--duration", "10d", "--json"], environment: env).trial()
    let id = try #require(started["id"] as? String)

    let paused = try Ctl.run(["pause", "acme-1"], environment: env)
    #expect(paused.status == 0, "\(paused.errors)")
    #expect(paused.output.contains("paused, 10 days left"), "\(paused.output)")
    #expect(paused.output.split(separator: "\n").contains { $0.split(separator: " ").first == "Paused" })
    daemon.child?.kill()
    _ = daemon.waitForExit()

    let again = try DaemonProcess(directory: daemon.directory)
    let env2 = try again.startReady()
    let kept = try Ctl.run(["status", id, "--json"], environment: env2).trial()
    #expect(kept["state"] as? String == "paused" && kept["timeLeft"] as? String != nil)
    #expect(kept["pausedAt"] as? String != nil && kept["resumesAt"] == nil)
    let listed = try Ctl.run(["list", "--state", "paused"], environment: env2)
    #expect(listed.output.contains("acme-1"), "\(listed.output)")
    let extend = try Ctl.run(["extend", "acme-1", "--by", "1d"], environment: env2)
    #expect(extend.status == 1 && extend.errors.contains("is not active (it is paused)"), "\(extend.errors)")

    let resumed = try Ctl.run(["resume", "acme-1", "--json"], environment: env2).trial()
    #expect(resumed["state"] as? String == "active" && resumed["revision"] as? Int == 2)
    let notPaused = try Ctl.run(["resume", "acme-1"], environment: env2)
    #expect(
      notPaused.status == 1 && notPaused.errors.contains("is not paused (it is active)"),
      "\(notPaused.errors)")
    #expect(try Ctl.run(["pause", "nobody"], environment: env2).status == 3)

    // The pause, delivered once across the kill, then the resume.
    let client = try VarlinkClient(path: again.socketPath, timeout: 10)
    let events = try client.call(Trials.getPlan, GetPlanParameters(id: try #require(TrialID(id)))).events
    let kinds = events.filter { $0.kind == .paused || $0.kind == .resumed }
    #expect(kinds.map(\.kind) == [.paused, .resumed])
    #expect(kinds.allSatisfy { $0.state == .delivered || $0.state == .fired })
    let log = try client.call(Trials.getEventLog).log
    #expect(log.events == 2)
    again.signal(SIGTERM)
    #expect(again.waitForExit() == 0)
  }
}
