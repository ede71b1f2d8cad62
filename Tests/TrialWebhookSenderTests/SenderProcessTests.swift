import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialWebhooks

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd and trialwatch-webhooks as processes, a Python receiver that verifies each message
/// with the reference verifiers: what a paused trial's event becomes on its way, and what the
/// sender does when its parts fail. Every wait is for a condition, never for time to pass.
@Suite(.serialized) struct SenderProcessTests {
  @Test func pausedTrial_OverHTTPS_ArrivesVerifiedUnderItsEventID() throws {
    let fixture = try DeliveryFixture(tls: true)
    let ready = try fixture.sender.startAttached()
    #expect(ready.contains("STATUS=attached; 0 attempts out"), "\(ready)")
    let idle = fixture.sender.mappedLibraries
    #expect(idle.contains("libc.so.6"))
    #expect(!idle.contains { $0.hasPrefix("libcurl") || $0.hasPrefix("libcrypto") }, "\(idle.sorted())")

    let trial = try fixture.pause("acme-42")
    let request = try #require(try fixture.receiver.nextRequest(), "nothing reached the receiver")
    #expect(request.verified, "\(request.checks)")
    #expect(request.headers["user-agent"]?.hasPrefix("trialwatch/") == true)
    #expect(request.headers["content-type"] == "application/json")
    let json = try #require(request.json)
    let data = try #require(json["data"] as? [String: Any])
    #expect(json["type"] as? String == "trial.paused")
    #expect(data["kind"] as? String == "paused")
    #expect(data["subject"] as? String == "acme-42")
    #expect(data["trialId"] as? String == trial.id.description)
    #expect(request.id != nil && data["id"] as? String == request.id)

    let attempts = try fixture.waitForAttempts { $0.contains(where: \.delivered) }
    let attempt = try #require(attempts.first)
    #expect(attempts.count == 1)
    #expect(attempt.delivered && attempt.status == 204 && attempt.number == 1)
    #expect(attempt.event == request.id && attempt.messageId == request.id)
    #expect(
      fixture.sender.mappedLibraries.contains { $0.hasPrefix("libcurl") }, "opened at the first request")

    fixture.sender.signal(SIGTERM)
    #expect(fixture.sender.notify.waitFor { $0.contains("STOPPING=1") }.found != nil)
    #expect(fixture.sender.waitForExit() == 0)
  }

  @Test func receiverFailingOnce_GetsTheEventTwice_UnderOneID() throws {
    // No wait between the attempts: the retry falls due at once.
    let fixture = try DeliveryFixture(query: "?status=500&fail=1", endpointKeys: "RetrySchedule=0, 0, 1h")
    try fixture.sender.startAttached()
    try fixture.pause("acme-1")
    let first = try #require(try fixture.receiver.nextRequest())
    let second = try #require(try fixture.receiver.nextRequest())
    #expect(first.verified && second.verified)
    #expect(first.id == second.id && first.body == second.body)
    let attempts = try fixture.waitForAttempts { $0.count == 2 }
    #expect(attempts.map(\.status) == [500, 204])
    #expect(attempts.map(\.number) == [1, 2])
    #expect(Set(attempts.map(\.messageId)) == [first.id])
  }

  @Test func secretFileUnusable_IsAnErrorOutcome_NamingTheFile() throws {
    let hidden = "whsec_bm90LWEtc2VjcmV0LWJ1dC1sb29rcy1hLWJpdC1saWtlLW9uZQ"
    let fixture = try DeliveryFixture(secretFileText: "\(hidden)!\n", endpointKeys: "RetrySchedule=0, 1h")
    try fixture.sender.startAttached()
    try fixture.pause("acme-7")
    let attempts = try fixture.waitForAttempts { !$0.isEmpty }
    let attempt = try #require(attempts.first)
    #expect(!attempt.delivered && attempt.status == nil)
    let error = try #require(attempt.error)
    #expect(error.contains(fixture.secretFile), "\(error)")
    #expect(!error.contains("bm90LWEtc2VjcmV0"), "the secret's text is never repeated")
    #expect(try fixture.attempts().count == 1, "the next attempt waits an hour")

    // The sender goes on: a file mended is read at the next attempt (a rotation alike).
    try "\(fixture.secret.text)\n".write(toFile: fixture.secretFile, atomically: true, encoding: .utf8)
    try fixture.pause("acme-8")
    let request = try #require(try fixture.receiver.nextRequest())
    #expect(request.verified)
    #expect((request.json?["data"] as? [String: Any])?["subject"] as? String == "acme-8")
  }

  @Test func secretRotated_SignsTheNextMessage_WithoutRestart() throws {
    let next = try Crypto.shared().newSecret()
    // The receiver checks each message against the old secret ("0") and the new ("1"); a message
    // one of them does not verify is answered 400, and tried again only an hour later.
    let fixture = try DeliveryFixture(endpointKeys: "RetrySchedule=0, 1h", alsoChecked: [next])
    try fixture.sender.startAttached()
    let ok = ["standardwebhooks": "ok", "svix": "ok"]
    try fixture.pause("before")
    let before = try #require(try fixture.receiver.nextRequest())
    #expect(before.checks["0"] == ok && before.checks["1"] != ok, "\(before.checks)")
    // Rotation: the new secret first, the old beside it; then the new alone.
    try "\(next.text)\n\(fixture.secret.text)\n".write(
      toFile: fixture.secretFile, atomically: true, encoding: .utf8)
    try fixture.pause("during")
    let during = try #require(try fixture.receiver.nextRequest())
    #expect(during.verified, "\(during.checks)")
    #expect(during.headers["webhook-signature"]?.split(separator: " ").count == 2)
    try "\(next.text)\n".write(toFile: fixture.secretFile, atomically: false, encoding: .utf8)
    try fixture.pause("after")
    let after = try #require(try fixture.receiver.nextRequest())
    #expect(after.checks["0"] != ok && after.checks["1"] == ok, "\(after.checks)")
    let subjects = [before, during, after].map { ($0.json?["data"] as? [String: Any])?["subject"] as? String }
    #expect(subjects == ["before", "during", "after"])
  }

  @Test func senderKilledMidBurst_ThenStartedAgain_DeliversEveryEvent() throws {
    let fixture = try DeliveryFixture(workers: 4)
    try fixture.sender.startAttached()
    let count = 200
    for index in 1...count { try fixture.pause("burst-\(index)") }
    // Some delivered, then the sender dies with attempts out.
    var seen: [String: Set<String>] = [:]
    func take() throws {
      let request = try #require(
        try fixture.receiver.nextRequest(), "\(seen.count) of \(count) events arrived")
      #expect(request.verified)
      let subject = try #require((request.json?["data"] as? [String: Any])?["subject"] as? String)
      seen[subject, default: []].insert(try #require(request.id))
    }
    while seen.count < 20 { try take() }
    fixture.sender.signal(SIGKILL)
    #expect(fixture.sender.waitForExit() == 128 + SIGKILL)

    let again = try SenderProcess(
      socket: fixture.daemon.socketPath, caFile: nil, directory: fixture.daemon.directory, workers: 4)
    try again.startAttached()
    while seen.count < count { try take() }
    #expect(Set(seen.keys) == Set((1...count).map { "burst-\($0)" }))
    #expect(seen.values.allSatisfy { $0.count == 1 }, "a repeat has its event's webhook-id")
    let settled = try fixture.waitForAttempts { attempts in
      Set(attempts.filter(\.delivered).map(\.messageId)).count == min(count, 50)
    }
    #expect(settled.allSatisfy { $0.error == nil }, "\(settled.compactMap(\.error))")
    again.signal(SIGTERM)
    #expect(again.waitForExit() == 0)
  }

  @Test func daemonRestarted_SenderAttachesAgain_AndDelivers() throws {
    let fixture = try DeliveryFixture()
    try fixture.sender.startAttached()
    fixture.daemon.signal(SIGTERM)
    #expect(fixture.daemon.waitForExit() == 0)
    #expect(fixture.sender.notify.waitFor { $0.contains("STATUS=waiting for the daemon") }.found != nil)
    let restarted = try DaemonProcess(directory: fixture.daemon.directory)
    try restarted.start(errors: .file(fixture.daemon.directory.appending("trialwatchd.log")))
    #expect(restarted.notify.waitFor { $0.contains("READY=1") }.found != nil)
    #expect(fixture.sender.notify.waitFor { $0.contains("STATUS=attached") }.found != nil)
    let client = try VarlinkClient(path: restarted.socketPath, timeout: patience)
    let trial = try client.startTrial("after-restart", days: 5, reminders: [])
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id)))
    let request = try #require(try fixture.receiver.nextRequest())
    #expect(request.verified)
    #expect((request.json?["data"] as? [String: Any])?["subject"] as? String == "after-restart")
  }

  @Test func stop_WithAnAttemptBeingMade_FinishesAndReportsIt() throws {
    // The receiver answers a second after each request arrives.
    let fixture = try DeliveryFixture(query: "?sleep=1", endpointKeys: "RetrySchedule=0, 1h")
    try fixture.sender.startAttached()
    try fixture.pause("in-flight")
    let arrived = try #require(try fixture.receiver.nextArrival(), "nothing reached the receiver")
    fixture.sender.signal(SIGTERM)
    let request = try #require(try fixture.receiver.nextRequest())
    #expect(request.id == arrived && request.verified)
    #expect(fixture.sender.waitForExit() == 0, "\(fixture.sender.standardError)")
    let attempts = try fixture.waitForAttempts { !$0.isEmpty }
    #expect(attempts.count == 1)
    #expect(attempts.first?.delivered == true, "reported before the sender let go of its call")
    #expect(fixture.sender.standardError.contains("stopping"))
  }

  @Test func idleSender_StaysSmall_AndStopsAtOnce() throws {
    let fixture = try DeliveryFixture()
    try fixture.sender.startAttached()
    // Its start-up's pages released once attached: under 5 MiB in the release build, about 8 in
    // a debug build, whose code is larger.
    let resident = try #require(fixture.sender.residentKiB)
    #expect(resident < 16 * 1024, "\(resident) KiB resident while idle")
    fixture.sender.signal(SIGINT)
    #expect(fixture.sender.waitForExit() == 0)
  }

  @Test func usage_WithBadWorkers_ExitsWith64() throws {
    let run = try ChildProcess.run(.path(SenderProcess.binary), ["--workers", "0"])
    #expect(run.status.code == 64)
    #expect(run.errors.contains("--workers"), "\(run.errors)")
    let help = try ChildProcess.run(.path(SenderProcess.binary), ["--help"])
    #expect(help.status.code == 0)
    #expect(help.output.contains("USAGE: trialwatch-webhooks"), "\(help.output)")
  }
}
