import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialEngine

/// What operators ask of the webhook duty, in virtual time: where each endpoint stands, enable,
/// replay and test.
extension WebhookDutyTests {
  @Test func status_TellsBacklogAttemptsOutAndTheNextRetry() throws {
    let (h, sender) = try harness([endpoint("billing"), endpoint("crm", events: ["reminder"])])
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    let handed = sender.take().filter { $0.endpoint.name == "billing" }.sorted {
      $0.event.cursor < $1.event.cursor
    }
    var billing = try #require(h.engine.webhooks.status(of: "billing"))
    #expect((billing.backlog, billing.inFlight) == (2, 2))
    #expect(billing.oldest == EventCursor(1))
    #expect(billing.oldestTakenAt == h.scheduler.now)
    report(h, [handed[0]], .answered(status: 500, retryAfter: nil))
    billing = try #require(h.engine.webhooks.status(of: "billing"))
    #expect((billing.backlog, billing.inFlight) == (2, 1))
    #expect(billing.nextAttemptAt == h.scheduler.now.addingTimeInterval(5))
    #expect(billing.state?.health.consecutiveFailures == 1)
    let crm = try #require(h.engine.webhooks.status(of: "crm"))
    #expect(crm.backlog == 0, "it wants no expiry")
    #expect(h.engine.webhooks.statuses().map(\.endpoint.name) == ["billing", "crm"])
    #expect(h.engine.webhooks.status(of: "nobody") == nil)
  }

  @Test func enable_ResumesADisabledEndpoint_WithItsEventsDueAtOnce() throws {
    let (h, sender) = try harness([endpoint("billing")])
    try h.start("a", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    report(h, sender.take(), .answered(status: 410, retryAfter: nil))
    h.scheduler.advance(by: 1 * day)
    #expect(sender.take().isEmpty, "disabled: nothing goes")
    var enabled: WebhookEndpointStatus?
    h.engine.webhooks.enable("billing") { enabled = try? $0.get() }
    #expect(enabled?.state?.health.disabled == nil)
    let again = sender.take()
    #expect(again.map(\.number) == [2], "from where it stopped, at once")
    let stored = try h.repository.read { try $0.webhookEndpoint(named: "billing") }
    #expect(stored?.health.disabled == nil, "durable")
    var missing: (any Error)?
    h.engine.webhooks.enable("nobody") { if case .failure(let error) = $0 { missing = error } }
    #expect(missing as? WebhookDutyError == .notFound("nobody"))
  }

  @Test func replay_SendsSettledEventsAgain_FromTheFirstAttempt() throws {
    let (h, sender) = try harness([endpoint("billing")])
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    let first = sender.take()
    report(h, first, .answered(status: 204, retryAfter: nil))
    #expect(try position(h, "billing") == EventCursor(2))
    var replayed: WebhookEndpointStatus?
    h.engine.webhooks.replay("billing", after: EventCursor(0), until: EventCursor(1)) {
      replayed = try? $0.get()
    }
    #expect(replayed?.position == EventCursor(0))
    let again = sender.take()
    #expect(again.map(\.event.cursor) == [EventCursor(1)], "through until only")
    #expect(again.map(\.number) == [1])
    #expect(again.map(\.messageID) == [first.sorted { $0.event.cursor < $1.event.cursor }[0].messageID])
    report(h, again, .answered(status: 200, retryAfter: nil))
    #expect(try position(h, "billing") == EventCursor(2), "past the one settled before")
  }

  @Test func test_SendsOneMessage_AndKeepsTheAttemptWithoutChangingHealth() throws {
    let (h, sender) = try harness([endpoint("billing")])
    var outcome: Result<WebhookAttemptRecord, WebhookDutyError>?
    h.engine.webhooks.test("billing") { outcome = $0 }
    let handed = sender.take()
    guard case .test = handed.first?.message else {
      Issue.record("a test message is handed to the sender")
      return
    }
    #expect(outcome == nil, "done when the sender reports")
    report(h, handed, .answered(status: 500, retryAfter: nil))
    let attempt = try #require(try outcome?.get())
    #expect(attempt.cursor == nil)
    #expect(attempt.outcome == .answered(status: 500, retryAfter: nil))
    let stored = try h.repository.read { try $0.webhookEndpoint(named: "billing") }
    #expect(stored?.attempts.map(\.messageID) == [attempt.messageID])
    #expect(stored?.health.consecutiveFailures == 0, "a test does not count against the endpoint")
    h.engine.webhooks.test("billing") { outcome = $0 }
    h.engine.webhooks.detach()
    #expect(outcome.map { if case .failure(.senderUnavailable) = $0 { true } else { false } } == true)
    h.engine.webhooks.test("billing") { outcome = $0 }
    #expect(outcome.map { if case .failure(.senderUnavailable) = $0 { true } else { false } } == true)
  }
}
