import Foundation
import TestSupport
import Testing
import TrialControl
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchctl against the real trialwatchd: its LMDB store, its engine and its socket.
@Suite struct DaemonEndToEndTests {
  @Test func ctlDrivesTheRealDaemon_AndEventsFireOnce_AcrossARestart() throws {
    let daemon = try DaemonProcess()
    let env = try daemon.startReady()

    // Watch from before the start until the expiry of acme-42: its reminder, then its expiry.
    let watch = try Ctl.start(["watch", "--json"], environment: env)
    // A bound on the wait: if the events never come, the reads end and the test fails.
    let deadline = ContinuousClock.now.advanced(by: .seconds(60))
    // The watch is in place once trialwatchctl says so (on standard error).
    #expect(watch.readLine(.errors, until: deadline).line?.contains("Watching") == true)

    let started = try Ctl.run(
      ["start", "acme-42", "--duration", "2s", "--reminders", "1s", "--json"], environment: env)
    #expect(started.status == 0, "\(started.errors)")
    let trial = try started.trial()
    let id = try #require(trial["id"] as? String)
    #expect(trial["state"] as? String == "active")

    let again = try Ctl.run(["start", "acme-42"], environment: env)
    #expect(again.status == 1 && again.errors.contains(id), "names the existing trial: \(again.errors)")
    #expect(try Ctl.run(["status", "nobody-here"], environment: env).status == 3)
    let long = try Ctl.run(["start", "other", "--duration", "30d"], environment: env)
    #expect(long.status == 0)

    var kinds: [String] = []
    while kinds.count < 2, let line = watch.readLine(until: deadline).line {
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      let event = object?["event"] as? [String: Any]
      if event?["trialId"] as? String == id { kinds.append(event?["kind"] as? String ?? "?") }
    }
    // SIGKILL: the child may inherit a mask that blocks SIGTERM from the test's thread.
    watch.kill()
    watch.wait()
    #expect(kinds == ["reminder", "expiry"])

    let status = try Ctl.run(["status", id, "--json"], environment: env)
    #expect(try status.trial()["state"] as? String == "expired")
    let plan = try Ctl.run(["plan", id, "--json"], environment: env)
    let events = try #require(try plan.json()["events"] as? [[String: Any]])
    #expect(events.map { $0["state"] as? String } == ["delivered", "delivered"])

    // Stopped around the end of a trial: after the restart its expiry fires exactly once
    // (late if it fell due while stopped; lateness itself is tested in virtual time).
    let short = try Ctl.run(
      ["start", "acme-43", "--duration", "1s", "--reminders", "", "--json"], environment: env)
    let shortID = try #require(try short.trial()["id"] as? String)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    let stopped = try Ctl.run(["daemon-status"], environment: env)
    #expect(stopped.status == 5 && stopped.errors.contains(daemon.socketPath))

    let restarted = try DaemonProcess(directory: daemon.directory)
    try restarted.start()
    let ready = restarted.notify.waitFor { $0.contains("READY=1") }
    #expect(ready.found != nil)
    // The expiry is delivered once the status counts one active trial: the daemon publishes
    // its status after each delivery (at the start, after the catch-up, before READY=1).
    let oneActive = "STATUS=1 active trial;"
    if !ready.seen.contains(where: { $0.contains(oneActive) }) {
      #expect(restarted.notify.waitFor { $0.contains(oneActive) }.found != nil)
    }
    let after = try Ctl.run(["plan", shortID, "--json"], environment: env)
    let afterEvents = try #require(try after.json()["events"] as? [[String: Any]])
    #expect(afterEvents.count == 1)
    #expect(afterEvents.first?["state"] as? String == "delivered")
    let first = try Ctl.run(["plan", id, "--json"], environment: env)
    #expect(try (first.json()["events"] as? [[String: Any]])?.count == 2, "nothing fired twice")
    let daemonStatus = try Ctl.run(["daemon-status", "--json"], environment: env)
    #expect(daemonStatus.status == 0)
    restarted.signal(SIGTERM)
    #expect(restarted.waitForExit() == 0)
  }

  @Test(.enabled(if: getuid() == 0, "running a client as another user needs root"))
  func anotherUser_MayRead_ButNotChange() throws {
    let daemon = try DaemonProcess()
    let env = try daemon.startReady()
    chmod(daemon.socketPath, 0o666)
    #expect(try Ctl.run(["start", "mine"], environment: env).status == 0)
    #expect(try Ctl.run(["list"], environment: env, asNobody: true).status == 0)
    #expect(try Ctl.run(["status", "mine"], environment: env, asNobody: true).status == 0)
    let refused = try Ctl.run(["start", "theirs"], environment: env, asNobody: true)
    #expect(refused.status == 4, "\(refused.errors)")
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }
}
