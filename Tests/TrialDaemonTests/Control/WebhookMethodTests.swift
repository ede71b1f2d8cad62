import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialControlServer
@testable import TrialDaemon
@testable import TrialEngine

/// The webhook methods through a real socket, on every store, in virtual time: a sender attached
/// by ServeWebhooks gets what falls due and reports it back; operators list, read attempts,
/// enable, replay and test; one sender at a time; the sender's calls need the rights of a change.
@Suite struct WebhookMethodTests {
  private func configure(_ fixture: ControlFixture, _ names: [String]) {
    var settings = EngineSettings()
    for name in names {
      settings.webhooks[name] = WebhookEndpoint(
        name: name, url: "https://app.example/\(name)", secretFile: "/etc/trialwatch/webhooks/\(name).secret")
    }
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(settings) }
  }

  /// A sender: a connection whose ServeWebhooks is running.
  private func attach(_ fixture: ControlFixture) throws -> VarlinkClient {
    let sender = try fixture.client()
    try sender.sendBytes(message(Trials.serveWebhooks.qualifiedName, more: true))
    let first = try sender.decode(try sender.receive(), as: ServeWebhooksReply.self)
    #expect(first.requests.isEmpty, "the first reply says the sender is attached")
    return sender
  }

  private func requests(_ sender: VarlinkClient) throws -> [WebhookRequestObject] {
    try sender.decode(try sender.receive(), as: ServeWebhooksReply.self).requests
  }

  private func report(_ client: VarlinkClient, _ requests: [WebhookRequestObject], status: Int, at: Date)
    throws
  {
    _ = try client.call(
      Trials.reportWebhooks,
      ReportWebhooksParameters(
        outcomes: requests.map {
          WebhookOutcomeObject(
            token: $0.token, attempt: .answered(status: status, retryAfter: nil), at: at,
            duration: .milliseconds(3))
        }))
  }

  private func endpoint(_ client: VarlinkClient, _ name: String) throws -> WebhookEndpointObject? {
    try client.call(Trials.listWebhooks).endpoints.first { $0.name == name }
  }

  @Test(arguments: StoreKind.allCases)
  func aPause_ReachesTheSenderSigned_AndItsReportSettlesIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x51])
    configure(fixture, ["billing", "crm"])
    let client = try fixture.client()
    #expect(try eventually { try endpoint(client, "billing")?.loaded == true })
    let sender = try attach(fixture)
    let trial = try client.startTrial("acme-51", days: 10, reminders: [])
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id)))
    var handed = try requests(sender)
    while handed.count < 2 { handed += try requests(sender) }
    #expect(handed.map(\.endpoint).sorted() == ["billing", "crm"])
    let request = try #require(handed.first { $0.endpoint == "billing" })
    #expect(request.url == "https://app.example/billing")
    #expect(request.secretFile == "/etc/trialwatch/webhooks/billing.secret")
    #expect(request.number == 1)
    #expect(request.timeout == Span(.seconds(15)))
    let body = try JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any]
    #expect(body?["type"] as? String == "trial.paused")
    let data = body?["data"] as? [String: Any]
    #expect(data?["subject"] as? String == "acme-51")
    #expect(request.messageId == data?["id"] as? String, "webhook-id is the event's id")
    #expect(data?["cursor"] as? String == "0000000000000001")

    try report(client, handed.filter { $0.endpoint == "billing" }, status: 204, at: fixture.now)
    try report(client, handed.filter { $0.endpoint == "crm" }, status: 500, at: fixture.now)
    #expect(
      try eventually {
        try endpoint(client, "billing")?.position == EventCursor(1)
          && endpoint(client, "crm")?.state == .failing
      })
    let crm = try #require(try endpoint(client, "crm"))
    #expect((crm.backlog, crm.inFlight, crm.lastStatus, crm.consecutiveFailures) == (1, 0, 500, 1))
    #expect(crm.nextAttemptAt == fixture.now.addingTimeInterval(5))
    #expect(crm.oldestPending == EventCursor(1))
    let attempts = try client.call(Trials.getWebhookAttempts, GetWebhookAttemptsParameters(name: "billing"))
    #expect(attempts.attempts.map(\.delivered) == [true])
    #expect(attempts.attempts.first?.event == request.messageId)
    #expect(attempts.attempts.first?.status == 204)
    let byCursor = try client.call(
      Trials.getWebhookAttempts, GetWebhookAttemptsParameters(name: "crm", event: "0000000000000001"))
    #expect(byCursor.attempts.map(\.status) == [500])

    // The retry, 5 s later, under the same webhook-id.
    fixture.advance(by: 5)
    let retry = try requests(sender)
    #expect(retry.map(\.number) == [2])
    #expect(retry.map(\.messageId) == [request.messageId])
  }

  @Test func oneSenderAtATime_AndItsAttemptsComeBackWhenItGoes() throws {
    let fixture = try ControlFixture(ids: [0x52])
    configure(fixture, ["billing"])
    let client = try fixture.client()
    #expect(try eventually { try endpoint(client, "billing")?.loaded == true })
    let sender = try attach(fixture)
    let second = try fixture.client()
    try second.sendBytes(message(Trials.serveWebhooks.qualifiedName, more: true))
    #expect(try second.receive().error == ControlError.Name.webhookSenderActive)

    let trial = try client.startTrial("acme-52", days: 10, reminders: [])
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id)))
    let first = try requests(sender)
    #expect(try endpoint(client, "billing")?.inFlight == 1)
    sender.close()
    #expect(try eventually { try endpoint(client, "billing")?.inFlight == 0 }, "taken back")
    let next = try attach(fixture)
    let again = try requests(next)
    #expect(again.map(\.messageId) == first.map(\.messageId))
    #expect(again.map(\.number) == [1], "the same attempt, made again")
  }

  @Test func aTestMessage_GoesThroughTheSender_AndWithoutOneIsRefused() throws {
    let fixture = try ControlFixture()
    configure(fixture, ["billing"])
    let client = try fixture.client()
    #expect(try eventually { try endpoint(client, "billing")?.loaded == true })
    let refused = remoteError {
      _ = try client.call(Trials.testWebhook, WebhookNameParameters(name: "billing"))
    }
    #expect(refused?.name == ControlError.Name.webhookSenderUnavailable)
    let sender = try attach(fixture)
    let caller = try fixture.client()
    try caller.send(
      OutgoingCall(
        method: Trials.testWebhook.qualifiedName, parameters: WebhookNameParameters(name: "billing")))
    let test = try requests(sender)
    let body =
      try JSONSerialization.jsonObject(with: Data(try #require(test.first).body.utf8)) as? [String: Any]
    #expect(body?["type"] as? String == "trialwatch.test")
    try report(client, test, status: 200, at: fixture.now)
    let reply = try caller.decode(try caller.receive(), as: TestWebhookReply.self)
    #expect(reply.attempt.delivered && reply.attempt.status == 200 && reply.attempt.event == nil)
    let unknown = remoteError {
      _ = try client.call(Trials.testWebhook, WebhookNameParameters(name: "nobody"))
    }
    #expect(unknown?.name == ControlError.Name.webhookNotFound)
    #expect(try endpoint(client, "billing")?.consecutiveFailures == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func enableAndReplay_ThroughTheSocket_AnswerWithTheEndpoint(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x53])
    configure(fixture, ["billing"])
    let client = try fixture.client()
    #expect(try eventually { try endpoint(client, "billing")?.loaded == true })
    let sender = try attach(fixture)
    let trial = try client.startTrial("acme-53", days: 10, reminders: [])
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id)))
    try report(client, try requests(sender), status: 410, at: fixture.now)
    #expect(try eventually { try endpoint(client, "billing")?.state == .disabled })
    let disabled = try #require(try endpoint(client, "billing"))
    #expect(disabled.disabledReason == "gone")
    #expect(disabled.disabledDetail?.contains("410 Gone") == true)
    let enabled = try client.call(Trials.enableWebhook, WebhookNameParameters(name: "billing")).endpoint
    #expect(enabled.state == .active && enabled.consecutiveFailures == 0)
    try report(client, try requests(sender), status: 200, at: fixture.now)
    #expect(try eventually { try endpoint(client, "billing")?.position == EventCursor(1) })

    let replayed = try client.call(
      Trials.replayWebhook, ReplayWebhookParameters(name: "billing", after: EventCursor(0))
    ).endpoint
    #expect(replayed.position == EventCursor(0))
    #expect(try requests(sender).map(\.number) == [1])
    let backwards = remoteError {
      _ = try client.call(
        Trials.replayWebhook,
        ReplayWebhookParameters(name: "billing", after: EventCursor(1), until: EventCursor(0)))
    }
    #expect(backwards?.name == ControlError.Name.invalidParameter)
    let ahead = remoteError {
      _ = try client.call(
        Trials.replayWebhook, ReplayWebhookParameters(name: "billing", after: EventCursor(9)))
    }
    #expect(ahead?.name == ControlError.Name.cursorNotFound)
    let missing = remoteError {
      _ = try client.call(Trials.enableWebhook, WebhookNameParameters(name: "nobody"))
    }
    #expect(missing?.name == ControlError.Name.webhookNotFound)
  }

  @Test func sendersCalls_FromACallerWhoMayNotChange_AreRefused() throws {
    let fixture = try ControlFixture()
    let router = fixture.server.router
    for (method, more) in [
      (Trials.serveWebhooks.qualifiedName, true), (Trials.reportWebhooks.qualifiedName, false),
      (Trials.enableWebhook.qualifiedName, false), (Trials.testWebhook.qualifiedName, false),
    ] {
      guard
        case .answer(let reply?) = router.classify(
          message(method, "{}", more: more).dropLast(), mayChange: false, uid: 4321)
      else {
        Issue.record("\(method) was not refused")
        continue
      }
      let error = try #require(try VarlinkReply(reply.dropLast().map { $0 }).controlError)
      #expect(error.name == ControlError.Name.permissionDenied, "\(method)")
    }
  }

  @Test func metrics_CountDeliveriesBacklogAndTheSender() throws {
    let fixture = try ControlFixture(ids: [0x54])
    configure(fixture, ["billing"])
    let client = try fixture.client()
    #expect(try eventually { try endpoint(client, "billing")?.loaded == true })
    var metrics = try MetricsMethodTests.list(client)
    #expect(MetricsMethodTests.integer(metrics["io.trialwatch.webhook_sender_attached"]) == 0)
    let sender = try attach(fixture)
    let trial = try client.startTrial("acme-54", days: 10, reminders: [])
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(trial.id)))
    let handed = try requests(sender)
    fixture.advance(by: 60)
    metrics = try MetricsMethodTests.list(client)
    #expect(MetricsMethodTests.integer(metrics["io.trialwatch.webhook_sender_attached"]) == 1)
    #expect(
      MetricsMethodTests.integer(metrics["io.trialwatch.webhook_backlog_events{endpoint=billing}"]) == 1)
    #expect(
      MetricsMethodTests.integer(
        metrics["io.trialwatch.webhook_oldest_pending_age_seconds{endpoint=billing}"])
        == 60)
    try report(client, handed, status: 410, at: fixture.now)
    #expect(
      try eventually {
        let now = try MetricsMethodTests.list(client)
        return MetricsMethodTests.integer(now["io.trialwatch.webhook_endpoint_disabled{endpoint=billing}"])
          == 1
      })
    metrics = try MetricsMethodTests.list(client)
    let rejected = metrics["io.trialwatch.webhook_deliveries{endpoint=billing,outcome=rejected}"]
    #expect(MetricsMethodTests.integer(rejected) == 1)
    let delivered = metrics["io.trialwatch.webhook_deliveries{endpoint=billing,outcome=delivered}"]
    #expect(MetricsMethodTests.integer(delivered) == 0)
  }
}
