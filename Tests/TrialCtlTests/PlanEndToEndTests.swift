import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialCtl

/// Plans through trialwatchctl and the real daemon: plan files beside its configuration, read
/// at start and at reload.
@Suite struct PlanEndToEndTests {
  func length(_ trial: [String: Any]) throws -> TimeInterval {
    let start = try RFC3339.parse(try #require(trial["startedAt"] as? String))
    let end = try RFC3339.parse(try #require(trial["endsAt"] as? String))
    return end.timeIntervalSince(start)
  }

  func writePlan(_ daemon: DaemonProcess, _ name: String, _ text: String) throws {
    let plans = daemon.directory.appending("plans")
    try FileManager.default.createDirectory(atPath: plans, withIntermediateDirectories: true)
    try text.write(toFile: plans + "/\(name).conf", atomically: true, encoding: .utf8)
  }

  @Test func trialStartedWithAPlan_TakesItsValues_AndKeepsThemWhenThePlanChanges() throws {
    let daemon = try DaemonProcess()
    try writePlan(
      daemon, "pro",
      "[Plan]\nDescription=Pro, two weeks\nLength=14d\nReminders=7d, 1d\nLabels=tier=pro region=eu\n")
    try writePlan(daemon, "basic", "[Plan]\n")
    let env = try daemon.startReady()

    let first = try Ctl.run(
      ["start", "acme-1", "--plan", "pro", "--label", "tier=gold", "--json"], environment: env
    ).trial()
    #expect(first["plan"] as? String == "pro")
    #expect(try length(first) == 14 * 86_400)
    #expect(first["reminders"] as? [String] == ["1w", "1d"])
    #expect(first["labels"] as? [String: String] == ["tier": "gold", "region": "eu"])
    let explicit = try Ctl.run(
      ["start", "acme-2", "--plan", "pro", "--duration", "3d", "--json"], environment: env
    ).trial()
    #expect(try length(explicit) == 3 * 86_400)
    #expect(try Ctl.run(["start", "acme-3"], environment: env).status == 0)

    let unknown = try Ctl.run(["start", "acme-4", "--plan", "team"], environment: env)
    #expect(unknown.status == 3)
    #expect(unknown.errors.contains("no plan named \"team\" is configured"), "\(unknown.errors)")
    #expect(try Ctl.run(["start", "acme-4", "--plan", "Team"], environment: env).status == 2)

    let status = try Ctl.run(["status", "acme-1"], environment: env)
    #expect(
      status.output.split(separator: "\n").contains { $0.split(separator: " ") == ["Plan", "pro"] },
      "\(status.output)")

    let plans = try Ctl.run(["plans"], environment: env)
    #expect(plans.status == 0)
    let lines = plans.output.split(separator: "\n").map(String.init)
    #expect(lines.first?.hasPrefix("NAME") == true)
    #expect(lines.contains { $0.hasPrefix("pro ") && $0.contains("2w") && $0.contains("Pro, two weeks") })
    let listed = try #require(
      try Ctl.run(["plans", "--json"], environment: env).json()["plans"] as? [[String: Any]])
    #expect(listed.map { $0["name"] as? String } == ["basic", "pro"])
    #expect(listed.map { $0["activeTrials"] as? Int } == [0, 2])

    let ofPro = try Ctl.run(["list", "--plan", "pro", "--json"], environment: env).json()
    #expect(
      (ofPro["trials"] as? [[String: Any]])?.compactMap { $0["subject"] as? String }.sorted() == [
        "acme-1", "acme-2",
      ])

    // Completion of --plan names the daemon's plans.
    #expect(
      PlanOption.candidates(words: ["trialwatchctl", "start", "x", "--plan"], prefix: "p", variables: env)
        == ["pro"])

    // A longer pro plan, applied at reload: new trials take it, acme-1 keeps what it started with.
    try writePlan(daemon, "pro", "[Plan]\nLength=30d\n")
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("RELOADING=1") }.found != nil)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let later = try Ctl.run(["start", "acme-5", "--plan", "pro", "--json"], environment: env).trial()
    #expect(try length(later) == 30 * 86_400)
    #expect(later["labels"] as? [String: String] == [:])
    let kept = try Ctl.run(["status", "acme-1", "--json"], environment: env).trial()
    #expect(try length(kept) == 14 * 86_400)
    #expect(kept["reminders"] as? [String] == ["1w", "1d"])
    #expect(kept["labels"] as? [String: String] == ["tier": "gold", "region": "eu"])

    // A plan file with an error keeps the running plans (and says so in the log).
    try writePlan(daemon, "pro", "[Plan]\nLength=never\n")
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let still = try Ctl.run(["start", "acme-6", "--plan", "pro", "--json"], environment: env).trial()
    #expect(try length(still) == 30 * 86_400)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    #expect(daemon.standardError.contains("pro.conf:2: error: invalid value \"never\" for Length="))
  }

  @Test func planGrantedOnce_RefusesAUsedSubject_UntilGrantedAgain() throws {
    let daemon = try DaemonProcess()
    try writePlan(daemon, "pro", "[Plan]\nLength=14d\nOnce=plan\nSubjectKey=email\n")
    try writePlan(daemon, "ddg", "[Plan]\nLength=14d\nOnce=plan\nOnceFor=270d\n")
    let env = try daemon.startReady()

    let first = try Ctl.run(["start", "Ada+one@Example.com", "--plan", "pro", "--json"], environment: env)
      .trial()
    let id = try #require(first["id"] as? String)
    #expect(try Ctl.run(["end", id, "--outcome", "cancelled"], environment: env).status == 0)
    let refused = try Ctl.run(["start", "ada@example.com", "--plan", "pro"], environment: env)
    #expect(refused.status == 1)
    #expect(
      refused.errors.contains("already had the trial its plan grants once: trial \(id) of plan pro"),
      "\(refused.errors)")
    #expect(refused.errors.contains("trialwatchctl grant-again SUBJECT --plan pro"))
    // On the wire: the error and the first trial.
    var parameters = StartTrialParameters(subject: "ADA+two@example.com")
    parameters.plan = "pro"
    let wire = try #require(throws: VarlinkClientError.self) {
      try VarlinkClient(path: daemon.socketPath).call(Trials.startTrial, parameters)
    }
    #expect(wire.remoteError?.name == "io.trialwatch.TrialAlreadyUsed")
    #expect(wire.remoteError?.parameters.id == id && wire.remoteError?.parameters.plan == "pro")
    #expect(wire.remoteError?.parameters.subject == "Ada+one@Example.com")
    #expect(wire.remoteError?.parameters.firstStartedAt == first["startedAt"] as? String)

    let plans = try Ctl.run(["plans"], environment: env)
    #expect(
      plans.output.split(separator: "\n").contains { $0.hasPrefix("pro ") && $0.contains("plan/email") })
    #expect(plans.output.split(separator: "\n").contains { $0.hasPrefix("ddg ") && $0.contains("plan/270d") })

    // A plan with a cooldown names when the subject may start again: 270 days after its start.
    let eve = try Ctl.run(["start", "eve", "--plan", "ddg", "--json"], environment: env).trial()
    let eveID = try #require(eve["id"] as? String)
    #expect(try Ctl.run(["end", eveID, "--outcome", "cancelled"], environment: env).status == 0)
    var eveAgain = StartTrialParameters(subject: "eve")
    eveAgain.plan = "ddg"
    let cooled = try #require(throws: VarlinkClientError.self) {
      try VarlinkClient(path: daemon.socketPath).call(Trials.startTrial, eveAgain)
    }
    let availableAt = try #require(cooled.remoteError?.parameters.availableAt)
    let started = try RFC3339.parse(try #require(eve["startedAt"] as? String))
    #expect(abs(try RFC3339.parse(availableAt).timeIntervalSince(started.adding(.days(270)))) <= 0.001)
    #expect(cooled.remoteError?.parameters.lastStartedAt == eve["startedAt"] as? String)
    #expect(cooled.remoteError?.parameters.lastId == eveID)
    let cooling = try Ctl.run(["start", "eve", "--plan", "ddg"], environment: env)
    #expect(cooling.status == 1)
    #expect(cooling.errors.contains("; it may start again at \(availableAt)"), "\(cooling.errors)")
    #expect(
      cooling.errors.contains("To let the subject start one before \(availableAt): trialwatchctl grant-again")
    )
    #expect(wire.remoteError?.parameters.availableAt == nil)

    let granted = try Ctl.run(["grant-again", "ADA@example.com", "--plan", "pro"], environment: env)
    #expect(granted.status == 0, "\(granted.errors)")
    #expect(
      granted.output.contains("may start a trial of plan pro again (it had trial \(id)"), "\(granted.output)")
    let again = try Ctl.run(["grant-again", "ada@example.com", "--plan", "pro", "--json"], environment: env)
    #expect(try again.json()["used"] == nil)
    #expect(try Ctl.run(["start", "ada@example.com", "--plan", "pro"], environment: env).status == 0)
    let unknown = try Ctl.run(["grant-again", "ada@example.com", "--plan", "team"], environment: env)
    #expect(unknown.status == 3)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    #expect(daemon.standardError.contains("granted a trial of plan pro again to subject ADA@example.com"))
  }
}
