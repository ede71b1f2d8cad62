import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialEngine

@testable import TrialCtl

/// trialwatchctl webhooks of the real binary against a control server over a real engine in
/// virtual time, its sender played by the test: endpoints that deliver, fail, are gone,
/// enabled again, replayed and tested.
@Suite struct WebhookCommandLineTests {
  /// Endpoints billing (answers 500), crm (410) and shop (204), each tried once with the expiry
  /// of trial 0000000000000001, acme (cursor 0000000000000001).
  func fixture() throws -> (ControlFixture, SpyWebhookSender) {
    let fixture = try ctlFixture()
    fixture.configure(webhooks: ["billing", "crm", "shop"].map { webhookEndpoint($0) })
    let sender = SpyWebhookSender(attachedTo: fixture.engine)
    sender.answer("billing", with: .answered(status: 500, retryAfter: nil))
    sender.answer("crm", with: .answered(status: 410, retryAfter: nil))
    _ = try fixture.client().startTrial(
      StartTrialParameters(subject: "acme", duration: .seconds(1), reminders: ReminderSchedule.none))
    fixture.advance(by: 1)
    #expect(fixture.fireDue().count == 1)
    sender.settle()
    #expect(sender.endpoints.sorted() == ["billing", "crm", "shop"])
    return (fixture, sender)
  }

  @Test func webhooksList_OfFailingGoneAndDeliveringEndpoints_ShowsEachState() throws {
    let (fixture, _) = try fixture()
    let socket = ["--socket", fixture.socketPath]
    let list = try Ctl.run(["webhooks"] + socket)
    #expect(list.status == 0, "\(list.errors)")
    #expect(list.cells.first == ["NAME", "URL", "STATE", "LAST", "BACKLOG", "OLDEST", "NEXT"])
    let billing = try #require(list.row("billing"), "\(list.output)")
    #expect(billing[1...3] == ["https://app.example/billing", "failing (1 failure)", billing[3]])
    #expect(billing[3].hasPrefix("HTTP 500, ") && billing[4] == "1", "\(billing)")
    #expect(billing[6].hasPrefix("in ") || billing[6].hasPrefix("overdue by "), "the retry: \(billing)")
    let crm = try #require(list.row("crm"))
    #expect(crm[2] == "disabled (gone)" && crm[3].hasPrefix("HTTP 410, ") && crm[4] == "1", "\(crm)")
    #expect(crm[6] == "-", "no attempt until enabled")
    let shop = try #require(list.row("shop"))
    #expect(Array(shop[2...]) == ["active", shop[3], "0", "-", "-"], "\(shop)")
    #expect(shop[3].hasPrefix("HTTP 204, "))
    #expect(try Ctl.run(["webhooks", "list"] + socket).lines == list.lines)

    let json = try decode(ListWebhooksReply.self, try Ctl.run(["webhooks", "--json"] + socket).output)
    #expect(json.endpoints.map(\.name) == ["billing", "crm", "shop"])
    #expect(json.endpoints.map(\.state) == [.failing, .disabled, .active])
    #expect(json.endpoints[1].disabledReason == "gone" && json.endpoints[0].lastStatus == 500)

    let shown = try Ctl.run(["webhooks", "show", "crm"] + socket)
    #expect(shown.status == 0, "\(shown.errors)")
    #expect(shown.lines.first == "crm: disabled, the receiver answered 410 Gone")
    #expect(shown.lines.contains("  Enable with     trialwatchctl webhooks enable crm"), "\(shown.output)")
    #expect(shown.lines.contains("  Position        0000000000000000"))
    let shownJSON = try decode(
      WebhookEndpointReply.self, try Ctl.run(["webhooks", "show", "billing", "--json"] + socket).output)
    #expect(shownJSON.endpoint.consecutiveFailures == 1)
    let missing = try Ctl.run(["webhooks", "show", "nobody"] + socket)
    #expect(missing.status == 3)
    #expect(
      missing.errors
        == "trialwatchctl: no webhook endpoint named \"nobody\" is configured (trialwatchctl webhooks lists "
        + "those that are)\n")
  }

  @Test func webhooksList_WithNoEndpoint_SaysWhereTheirFilesGo() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run(["webhooks", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(
      run.lines == [
        "No webhook endpoints are configured. An endpoint is a file /etc/trialwatch/webhooks/NAME.conf "
          + "(trialwatch.conf(5)), read at systemctl reload trialwatch."
      ])
    #expect(
      try Ctl.run(["webhooks", "--json", "--socket", fixture.socketPath]).output == "{\"endpoints\":[]}\n")
  }

  @Test func webhooksAttempts_OfAnEndpoint_ListsEachWithItsOutcome() throws {
    let (fixture, _) = try fixture()
    let socket = ["--socket", fixture.socketPath]
    let attempts = try Ctl.run(["webhooks", "attempts", "billing"] + socket)
    #expect(attempts.status == 0, "\(attempts.errors)")
    #expect(attempts.lines.first == "Attempts to deliver to billing, oldest first:")
    #expect(
      attempts.cells[1] == ["TIME", "CURSOR", "EVENT", "ATTEMPT", "OUTCOME", "DURATION", "RETRY-AFTER"])
    #expect(attempts.lines.count == 3, "\(attempts.output)")
    #expect(
      Array(attempts.cells[2].dropFirst()) == [
        "0000000000000001", "0000000000000001-r1-expiry", "1", "rejected (HTTP 500)", "120ms", "-",
      ])
    for event in ["0000000000000001", "0000000000000001-r1-expiry"] {
      let one = try Ctl.run(["webhooks", "attempts", "billing", "--event", event] + socket)
      #expect(one.lines.first == "Attempts of event \(event) to deliver to billing, oldest first:")
      #expect(one.lines.count == 3, "\(one.output)")
    }
    let none = try Ctl.run(["webhooks", "attempts", "billing", "--event", "0000000000000002"] + socket)
    #expect(none.lines.last == "No attempts of event 0000000000000002 kept.", "\(none.output)")
    let json = try decode(
      GetWebhookAttemptsReply.self, try Ctl.run(["webhooks", "attempts", "crm", "--json"] + socket).output)
    #expect(json.attempts.map(\.status) == [410])
    #expect(try Ctl.run(["webhooks", "attempts", "nobody"] + socket).status == 3)
  }

  @Test func webhooksEnableAndReplay_OfEndpoints_SendTheirEventsAgain() throws {
    let (fixture, sender) = try fixture()
    let socket = ["--socket", fixture.socketPath]
    sender.answer("crm", with: .answered(status: 204, retryAfter: nil))
    let enabled = try Ctl.run(["webhooks", "enable", "crm"] + socket)
    #expect(enabled.status == 0, "\(enabled.errors)")
    #expect(enabled.lines.first?.hasPrefix("crm: active, ") == true, "\(enabled.output)")
    sender.settle()
    let crm = try #require(try Ctl.run(["webhooks"] + socket).row("crm"))
    #expect(crm[2] == "active" && crm[3].hasPrefix("HTTP 204, ") && crm[4] == "0", "\(crm)")

    let replayed = try Ctl.run(["webhooks", "replay", "shop", "--after", "0000000000000000"] + socket)
    #expect(replayed.status == 0, "\(replayed.errors)")
    #expect(replayed.lines.first?.hasPrefix("shop: active, ") == true, "\(replayed.output)")
    sender.settle()
    let attempts = try decode(
      GetWebhookAttemptsReply.self, try Ctl.run(["webhooks", "attempts", "shop", "--json"] + socket).output)
    #expect(attempts.attempts.map(\.number) == [1, 1], "a new series of attempts")
    #expect(Set(attempts.attempts.map(\.messageId)).count == 1, "under the event's webhook-id")
    let json = try decode(
      WebhookEndpointReply.self,
      try Ctl.run(["webhooks", "replay", "shop", "--after", "0000000000000001", "--json"] + socket).output)
    #expect(json.endpoint.position == EventCursor(1))

    let beyond = try Ctl.run(["webhooks", "replay", "shop", "--after", "00000000000000ff"] + socket)
    #expect(beyond.status == 3, "\(beyond.errors)")
    #expect(beyond.errors.contains("cursor 00000000000000ff lies beyond the newest event logged"))
    #expect(try Ctl.run(["webhooks", "enable", "nobody"] + socket).status == 3)
  }

  @Test func webhooksTest_DeliveredOrNot_SaysSoAndExitsAccordingly() throws {
    let (fixture, sender) = try fixture()
    let socket = ["--socket", fixture.socketPath]
    let delivered = try Ctl.run(["webhooks", "test", "shop"] + socket)
    #expect(delivered.status == 0, "\(delivered.errors)")
    #expect(delivered.lines == ["Test message delivered to shop: HTTP 204 in 120ms."])
    let attempts = try decode(
      GetWebhookAttemptsReply.self, try Ctl.run(["webhooks", "attempts", "shop", "--json"] + socket).output)
    #expect(attempts.attempts.last?.cursor == nil && attempts.attempts.last?.delivered == true)
    let table = try Ctl.run(["webhooks", "attempts", "shop"] + socket)
    #expect(
      Array(table.cells.last?.dropFirst() ?? []) == ["-", "test", "1", "delivered (HTTP 204)", "120ms", "-"])

    let rejected = try Ctl.run(["webhooks", "test", "billing"] + socket)
    #expect(rejected.status == 1)
    #expect(rejected.output.isEmpty)
    #expect(
      rejected.errors.hasPrefix("trialwatchctl: test message to billing not delivered: HTTP 500 after 120ms"),
      "\(rejected.errors)")
    sender.answer("billing", with: .failed("Connection refused"))
    let json = try Ctl.run(["webhooks", "test", "billing", "--json"] + socket)
    #expect(json.status == 1)
    #expect(try decode(TestWebhookReply.self, json.output).attempt.error == "Connection refused")
    #expect(
      json.errors.contains("not delivered: no answer: Connection refused after 120ms"), "\(json.errors)")

    sender.detach()
    let detached = try Ctl.run(["webhooks", "test", "shop"] + socket)
    #expect(detached.status == 1)
    #expect(
      detached.errors
        == "trialwatchctl: no webhook sender is attached to the daemon (is trialwatch-webhooks.service "
        + "running?)\n")
  }

  @Test func webhookCompletion_OfANamePrefix_ListsTheDaemonsEndpoints() throws {
    let fixture = try ctlFixture()
    fixture.configure(webhooks: ["billing", "bookings", "crm"].map { webhookEndpoint($0) })
    let words = ["trialwatchctl", "webhooks", "show", "--socket", fixture.socketPath, "b"]
    #expect(
      WebhookCompletion.candidates(words: words, prefix: "b", variables: [:]) == ["billing", "bookings"])
    let all = WebhookCompletion.candidates(
      words: ["trialwatchctl", "webhooks", "test", ""], prefix: "",
      variables: ["TRIALWATCH_SOCKET": fixture.socketPath])
    #expect(all == ["billing", "bookings", "crm"])
    let away = ["trialwatchctl", "webhooks", "show", "--socket", "/nonexistent/io.trialwatch", ""]
    #expect(WebhookCompletion.candidates(words: away, prefix: "", variables: [:]) == [])
  }

  @Test(arguments: [
    ["webhooks", "replay", "billing"], ["webhooks", "replay", "billing", "--after", "xyz"],
    ["webhooks", "replay", "billing", "--after", "0000000000000005", "--until", "0000000000000002"],
    ["webhooks", "replay", "billing", "--after", "1", "--until", "later"],
    ["webhooks", "attempts", "billing", "--event", "yesterday"], ["webhooks", "show"],
    ["webhooks", "show", "Billing"], ["webhooks", "enable", "-x"], ["webhooks", "frobnicate"],
    ["webhooks", "secret", "bill ing"], ["webhooks", "test"],
  ])
  func webhooksUsage_WithInvalidArguments_ExitsWith2(arguments: [String]) throws {
    let run = try Ctl.run(arguments + ["--socket", "/nonexistent/socket"])
    #expect(run.status == 2, "\(arguments): \(run.errors)")
    #expect(run.errors.contains("Error: "), "\(run.errors)")
    #expect(run.output.isEmpty)
  }

  @Test func webhooksUsage_OfABadCursor_NamesTheOptionAndTheForm() throws {
    let missing = try Ctl.run(["webhooks", "replay", "billing"])
    #expect(missing.errors.contains("Missing expected argument '--after <cursor>'"), "\(missing.errors)")
    let bad = try Ctl.run(["webhooks", "replay", "billing", "--after", "xyz"])
    #expect(
      bad.errors.contains("--after: \"xyz\" is not an event cursor (16 hexadecimal digits"), "\(bad.errors)")
    let backwards = try Ctl.run([
      "webhooks", "replay", "billing", "--after", "0000000000000005", "--until", "0000000000000002",
    ])
    #expect(
      backwards.errors.contains("--until: 0000000000000002 comes before --after 0000000000000005"),
      "\(backwards.errors)")
    let event = try Ctl.run(["webhooks", "attempts", "billing", "--event", "yesterday"])
    #expect(event.errors.contains("--event: \"yesterday\" is neither an event id"), "\(event.errors)")
  }
}
