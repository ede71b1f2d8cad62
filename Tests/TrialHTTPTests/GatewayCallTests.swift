import Foundation
import TestSupport
import Testing
import TrialConfiguration
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// The gateway through curl alone: each verb of trialwatchctl as its HTTP call, the errors as
/// statuses, the tokens' scopes.
@Suite(.serialized) struct GatewayCallTests {
  @Test func everyVerb_HasItsCall_WithTheReplyAsJSON() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let token = fixture.changeSecret

    let started = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"acme-1","duration":"14d","labels":{"tier":"gold"}}"#,
      token: token)
    #expect(started.status == 200 && started.type == "application/json", "\(started)")
    let trial = try #require(started.trial, "\(started.body)")
    let id = try #require(trial["id"] as? String)
    #expect(trial["subject"] as? String == "acme-1" && trial["state"] as? String == "active")

    let got = try fixture.call(
      "io.trialwatch.Trials.GetTrial", #"{"subject":"acme-1"}"#, token: fixture.readSecret)
    #expect(got.trial?["id"] as? String == id, "\(got)")
    let listed = try fixture.call(
      "io.trialwatch.Trials.ListTrials", #"{"label":"tier=gold"}"#, token: fixture.readSecret)
    let ids = (listed.json?["trials"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    #expect(ids == [id], "\(listed)")
    let plan = try fixture.call(
      "io.trialwatch.Trials.GetPlan", #"{"id":"\#(id)"}"#, token: fixture.readSecret)
    #expect((plan.json?["events"] as? [[String: Any]])?.isEmpty == false, "\(plan)")
    let simulated = try fixture.call(
      "io.trialwatch.Trials.Simulate", #"{"at":"2099-01-01T00:00:00Z"}"#, token: fixture.readSecret)
    #expect(simulated.status == 200 && simulated.has("events"), "\(simulated)")
    let stats = try fixture.call(
      "io.trialwatch.Trials.GetStats", #"{"from":"2020-01-01","by":"month"}"#, token: token)
    #expect(stats.status == 200, "\(stats)")
    let status = try fixture.call("io.trialwatch.Trials.GetStatus", "", token: fixture.readSecret)
    #expect(status.status == 200 && status.has("trials"), "\(status)")

    for (method, body) in [
      ("ExtendTrial", #"{"id":"\#(id)","by":"7d"}"#), ("PauseTrial", #"{"id":"\#(id)"}"#),
      ("ResumeTrial", #"{"id":"\#(id)"}"#), ("EndTrial", #"{"id":"\#(id)","outcome":"converted"}"#),
    ] {
      let answer = try fixture.call("io.trialwatch.Trials.\(method)", body, token: token)
      #expect(answer.status == 200 && answer.trial != nil, "\(method): \(answer)")
    }
    let ended = try fixture.call("io.trialwatch.Trials.GetTrial", #"{"id":"\#(id)"}"#, token: token)
    #expect(ended.trial?["state"] as? String == "converted", "\(ended)")

    // Every change is journaled with the token's name.
    #expect(
      waitUntil {
        fixture.standardError.contains("token=deployer") && fixture.standardError.contains("EndTrial")
      },
      "\(fixture.standardError)")
  }

  @Test func errors_AreStatusesWithTheVarlinkError() throws {
    let fixture = try GatewayFixture(plans: ["ddg": "[Plan]\nLength=14d\nOnce=plan\nOnceFor=270d\n"])
    try fixture.start()
    let token = fixture.changeSecret
    let start = #"{"subject":"acme-2","duration":"3d"}"#
    #expect(try fixture.call("io.trialwatch.Trials.StartTrial", start, token: token).status == 200)

    let twice = try fixture.call("io.trialwatch.Trials.StartTrial", start, token: token)
    #expect(twice.status == 409 && twice.error == "io.trialwatch.SubjectAlreadyActive", "\(twice)")
    // A subject in its cooldown: the error's parameters name when it may start again.
    let first = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"eve","plan":"ddg"}"#, token: token)
    let trial = try #require(first.trial, "\(first)")
    let end = #"{"id":"\#(trial["id"] as? String ?? "")","outcome":"cancelled"}"#
    #expect(try fixture.call("io.trialwatch.Trials.EndTrial", end, token: token).status == 200)
    let used = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"eve","plan":"ddg"}"#, token: token)
    #expect(used.status == 409 && used.error == "io.trialwatch.TrialAlreadyUsed", "\(used)")
    let parameters = used.json?["parameters"] as? [String: Any]
    let started = try RFC3339.parse(try #require(trial["startedAt"] as? String))
    let availableAt = try RFC3339.parse(try #require(parameters?["availableAt"] as? String, "\(used)"))
    #expect(abs(availableAt.timeIntervalSince(started.adding(.days(270)))) <= 0.001)
    #expect(parameters?["lastStartedAt"] as? String == trial["startedAt"] as? String)
    let missing = try fixture.call("io.trialwatch.Trials.GetTrial", #"{"subject":"nobody"}"#, token: token)
    #expect(missing.status == 404 && missing.error == "io.trialwatch.TrialNotFound", "\(missing)")
    let invalid = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"x","duration":"soon"}"#, token: token)
    #expect(invalid.status == 400 && invalid.error == "org.varlink.service.InvalidParameter")
    #expect(
      (invalid.json?["parameters"] as? [String: Any])?["parameter"] as? String == "duration", "\(invalid)")
    let notJSON = try fixture.call("io.trialwatch.Trials.StartTrial", #"{"subject": "#, token: token)
    #expect(notJSON.status == 400 && notJSON.error == "io.trialwatch.InvalidMessage", "\(notJSON)")
    let array = try fixture.call("io.trialwatch.Trials.GetStatus", "[]", token: token)
    #expect(array.status == 400, "a body is an object: \(array)")
    let unknown = try fixture.call("io.trialwatch.Trials.Launch", "{}", token: token)
    #expect(unknown.status == 404 && unknown.error == "org.varlink.service.MethodNotFound")
    let reserved = try fixture.call("io.trialwatch.Trials.ServeWebhooks", "{}", token: token)
    #expect(reserved.status == 404, "the sender's own methods are not passed on: \(reserved)")
    let get = try fixture.request("/call/io.trialwatch.Trials.GetStatus", token: token)
    #expect(get.status == 405, "\(get)")
    let nowhere = try fixture.request("/nowhere", token: token)
    #expect(nowhere.status == 404, "\(nowhere)")
  }

  @Test func tokens_DecideWhoMayCallWhat() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let none = try fixture.call("io.trialwatch.Trials.GetStatus", token: nil)
    #expect(none.status == 401 && none.error == "io.trialwatch.http.Unauthorized", "\(none)")
    let wrong = try fixture.call("io.trialwatch.Trials.GetStatus", token: "twh_not-a-token-of-the-file")
    #expect(wrong.status == 401, "\(wrong)")
    let basic = try fixture.request("/metrics", token: nil, headers: ["Authorization: Basic dXNlcjpwYXNz"])
    #expect(basic.status == 401, "\(basic)")
    let read = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"acme-3"}"#, token: fixture.readSecret)
    #expect(read.status == 403 && read.error == "io.trialwatch.http.Forbidden", "\(read)")
    let readReads = try fixture.call("io.trialwatch.Trials.ListTrials", token: fixture.readSecret)
    #expect(readReads.status == 200, "\(readReads)")
    let cookie = try fixture.request(
      "/interface", token: nil, headers: ["Cookie: trialwatch_token=\(fixture.readSecret)"])
    #expect(cookie.status == 200 && cookie.body.contains("interface io.trialwatch.Trials"), "\(cookie)")
    #expect(try fixture.request("/healthz", token: nil).status == 200, "no token for the health check")

    // The file is read again when it changes: a token added works, one removed does not.
    try fixture.writeTokens([("ops", .change, "twh_ops-secret-of-the-tests-0123456789")])
    #expect(
      try fixture.call("io.trialwatch.Trials.GetStatus", token: "twh_ops-secret-of-the-tests-0123456789")
        .status == 200)
    #expect(try fixture.call("io.trialwatch.Trials.GetStatus", token: fixture.readSecret).status == 401)
    // A file that cannot be read as tokens lets nobody in, and says so.
    try "ops admin sha256:00\n".write(toFile: fixture.tokenFile, atomically: true, encoding: .utf8)
    let broken = try fixture.call(
      "io.trialwatch.Trials.GetStatus", token: "twh_ops-secret-of-the-tests-0123456789")
    #expect(broken.status == 503, "\(broken)")
    #expect(fixture.standardError.contains("\(fixture.tokenFile):1"), "\(fixture.standardError)")
  }

  @Test func metricsAndInterface_AreServed() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let metrics = try fixture.request("/metrics", token: fixture.readSecret)
    #expect(
      metrics.status == 200 && metrics.type.hasPrefix("text/plain; version=0.0.4"),
      "\(metrics.status) \(metrics.type)")
    #expect(metrics.body.contains("# TYPE trialwatch_"), "\(metrics.body.prefix(400))")
    let interface = try fixture.request("/interface?name=io.systemd.Metrics", token: fixture.readSecret)
    #expect(
      interface.status == 200 && interface.body.contains("interface io.systemd.Metrics"), "\(interface)")
  }

  @Test func watch_StreamsAJSONTextSequence() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let watch = try ChildProcess(
      .path("/usr/bin/curl"),
      [
        "-sS", "-N", "-X", "POST", "-H", "Authorization: Bearer \(fixture.readSecret)", "--data-binary", "{}",
        fixture.base + "/call/io.trialwatch.Trials.Watch",
      ])
    defer { watch.kill() }
    // The first record says the watch is in place; a pause then logs an event at once.
    let first = watch.readLine(timeout: patience)
    let placed = try #require(first.line, "no first record: \(first)")
    #expect(placed.hasPrefix("\u{1E}{"), "\(placed.debugDescription)")
    let started = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"acme-9","duration":"3d"}"#, token: fixture.changeSecret
    )
    let id = try #require(started.trial?["id"] as? String)
    #expect(
      try fixture.call("io.trialwatch.Trials.PauseTrial", #"{"id":"\#(id)"}"#, token: fixture.changeSecret)
        .status == 200)
    // Each record is one event: the pause's comes after whatever the start logged.
    var records: [String] = []
    while let line = watch.readLine(timeout: patience).line {
      records.append(line)
      if line.contains("\"paused\"") { break }
    }
    #expect(records.allSatisfy { $0.hasPrefix("\u{1E}{") }, "\(records)")
    #expect(records.last?.contains("\"paused\"") == true && records.last?.contains(id) == true, "\(records)")
  }

  @Test func daemonGone_Is503() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    fixture.daemon.signal(SIGTERM)
    #expect(fixture.daemon.waitForExit() == 0)
    let answer = try fixture.call("io.trialwatch.Trials.GetStatus", token: fixture.readSecret)
    #expect(answer.status == 503 && answer.error == "io.trialwatch.http.DaemonUnreachable", "\(answer)")
    #expect(try fixture.request("/healthz", token: nil).status == 503)
  }
}
