import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialEngine

extension WebhookDispatch {
  /// The event an attempt carries (a test's has none).
  var event: LoggedEvent {
    guard case .event(let event) = message else { preconditionFailure("a test message carries no event") }
    return event
  }
}

/// A sender as a test plays it: what it was handed, answered by the test.
final class SpySender {
  var handed: [WebhookDispatch] = []

  /// Everything handed since the last take.
  func take() -> [WebhookDispatch] {
    defer { handed = [] }
    return handed
  }
}

/// `WebhookDuty` in virtual time: events to the endpoints that want them, each retried on its
/// own schedule, durable through the store, and nothing armed while nothing can go.
@Suite struct WebhookDutyTests {
  func endpoint(_ name: String, events: Set<String>? = nil) -> WebhookEndpoint {
    var endpoint = WebhookEndpoint(name: name, url: "https://app.example/\(name)", secretFile: "/s")
    endpoint.events = events
    return endpoint
  }

  func harness(_ endpoints: [WebhookEndpoint], repository: InMemoryTrialRepository = .init())
    throws -> (Harness, SpySender)
  {
    var settings = EngineSettings()
    settings.webhooks = Dictionary(uniqueKeysWithValues: endpoints.map { ($0.name, $0) })
    let h = try Harness.started(repository: repository, settings: settings, ids: Array(1...50))
    let sender = SpySender()
    h.engine.webhooks.attach { sender.handed += $0 }
    return (h, sender)
  }

  func report(_ h: Harness, _ dispatches: [WebhookDispatch], _ attempt: WebhookAttempt) {
    h.engine.webhooks.report(
      dispatches.map {
        WebhookReport(token: $0.token, attempt: attempt, at: h.scheduler.now, duration: .zero)
      })
  }

  func position(_ h: Harness, _ endpoint: String) throws -> EventCursor? {
    try h.repository.read { try $0.consumer(named: "webhook:\(endpoint)")?.acknowledged }
  }

  @Test func aFiredEvent_GoesToEachEndpointThatWantsIt_AndDeliveryMovesThePosition() throws {
    let (h, sender) = try harness([endpoint("billing"), endpoint("crm", events: ["expiry"])])
    try h.start("acme", days: 2, reminders: [1])
    h.scheduler.advance(by: 1 * day)
    let reminder = sender.take()
    #expect(reminder.map(\.endpoint.name) == ["billing"])
    #expect(reminder.first?.number == 1)
    #expect(reminder.first?.event.event.kind == .reminder(before: .days(1)))
    report(h, reminder, .answered(status: 204, retryAfter: nil))
    #expect(try position(h, "billing") == EventCursor(1))
    #expect(try position(h, "crm") == EventCursor(1), "past the reminder it does not want")
    h.scheduler.advance(by: 1 * day)
    let expiry = sender.take()
    #expect(expiry.map(\.endpoint.name).sorted() == ["billing", "crm"])
    report(h, expiry, .answered(status: 200, retryAfter: nil))
    #expect(try position(h, "crm") == EventCursor(2))
    let state = try h.repository.read { try $0.webhookEndpoint(named: "crm") }
    #expect(state?.attempts.map(\.messageID) == [expiry[0].event.id.description])
    h.scheduler.advance(by: 1 * day)
    #expect(h.scheduler.pending.allSatisfy { $0.label != "webhooks" }, "nothing waits: no wake")
  }

  @Test func aFailingReceiver_GetsTheEventAgainOnTheSchedule_UnderOneID() throws {
    let (h, sender) = try harness([endpoint("billing")])
    try h.start("acme", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    var ids: [String] = []
    var times: [Date] = []
    for round in 1...4 {
      let handed = sender.take()
      #expect(handed.map(\.number) == [round])
      ids += handed.map(\.event.id.description)
      times.append(h.scheduler.now)
      report(h, handed, .answered(status: round < 4 ? 500 : 204, retryAfter: nil))
      if let retry = h.scheduler.pending.first(where: { $0.label == "webhooks" }) {
        h.scheduler.advance(to: retry.deadline)
      }
    }
    #expect(Set(ids).count == 1)
    let waits = zip(times.dropFirst(), times).map { $0.timeIntervalSince($1) }
    #expect(waits == [5, 300, 1_800], "the standard schedule's steps after the first attempt")
    #expect(try position(h, "billing") == EventCursor(1))
  }

  @Test func anEndpointDown_HoldsBackNoOtherEventNorEndpoint() throws {
    let (h, sender) = try harness([endpoint("down"), endpoint("up")])
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 1.5, reminders: [])
    h.scheduler.advance(by: 1 * day)
    var first = sender.take()
    report(h, first.filter { $0.endpoint.name == "down" }, .failed("could not connect"))
    report(h, first.filter { $0.endpoint.name == "up" }, .answered(status: 204, retryAfter: nil))
    h.scheduler.advance(by: 0.5 * day)
    first = sender.take().filter { $0.event.subject == "b" }
    #expect(first.map(\.endpoint.name).sorted() == ["down", "up"], "b's expiry goes though a's failed")
    report(h, first, .answered(status: 204, retryAfter: nil))
    #expect(try position(h, "up") == EventCursor(2))
    #expect(try position(h, "down") == .origin, "a's expiry still to come")
    let remembered = try h.repository.read { txn in
      try collected { try txn.scanWebhookEvents(endpoint: "down", after: .origin, $0) }
    }
    #expect(remembered.map(\.delivered) == [false, true])
  }

  @Test func gone_DisablesTheEndpoint_AndRetryAfterIsHonoured() throws {
    let (h, sender) = try harness([endpoint("gone"), endpoint("busy")])
    try h.start("a", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    let handed = sender.take()
    report(h, handed.filter { $0.endpoint.name == "gone" }, .answered(status: 410, retryAfter: nil))
    report(h, handed.filter { $0.endpoint.name == "busy" }, .answered(status: 429, retryAfter: .seconds(7)))
    let gone = try h.repository.read { try $0.webhookEndpoint(named: "gone") }
    #expect(gone?.health.disabled == .gone(at: h.scheduler.now))
    h.scheduler.advance(by: 6)
    #expect(sender.take().isEmpty)
    h.scheduler.advance(by: 1)
    #expect(sender.take().map(\.endpoint.name) == ["busy"], "7 s, as asked, not the schedule's 5 s")
    h.scheduler.advance(by: 3 * day)
    #expect(sender.take().allSatisfy { $0.endpoint.name != "gone" })
  }

  @Test func aSenderDetached_TakesBackItsAttempts_AndNothingIsArmedWithoutOne() throws {
    let (h, sender) = try harness([endpoint("billing")])
    try h.start("a", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    #expect(sender.take().count == 1)
    h.engine.webhooks.detach()
    h.scheduler.advance(by: 1 * day)
    #expect(h.scheduler.pending.allSatisfy { $0.label != "webhooks" })
    h.engine.webhooks.attach { sender.handed += $0 }
    let again = sender.take()
    #expect(again.map(\.number) == [1], "the same attempt, made again")
  }

  @Test func aRestart_GoesOnFromWhatTheStoreKept() throws {
    let repository = InMemoryTrialRepository()
    let (h, sender) = try harness([endpoint("billing")], repository: repository)
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 1, reminders: [])
    h.scheduler.advance(by: 1 * day)
    let handed = sender.take().sorted { $0.event.cursor < $1.event.cursor }
    report(h, [handed[0]], .answered(status: 503, retryAfter: nil))
    report(h, [handed[1]], .answered(status: 204, retryAfter: nil))
    h.engine.stop()
    let scheduler = TestScheduler(now: h.scheduler.now.addingTimeInterval(1))
    var settings = EngineSettings()
    settings.webhooks = ["billing": endpoint("billing")]
    let second = Harness(repository: repository, scheduler: scheduler, settings: settings)
    _ = try second.engine.start()
    let resender = SpySender()
    second.engine.webhooks.attach { resender.handed += $0 }
    #expect(
      resender.take().isEmpty, "the failed one waits for its retry; the delivered one is not sent again")
    scheduler.advance(by: 4)
    let retried = resender.take()
    #expect(retried.map(\.event.cursor) == [EventCursor(1)])
    #expect(retried.map(\.number) == [2])
  }
}
