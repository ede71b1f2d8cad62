import Foundation
import Testing
import TrialControl
import TrialCore
import TrialCtl
import TrialTesting

/// Webhook endpoints and their attempts as view models: states with their reasons, ages and
/// next attempts relative to now, dates in the reader's zone and locale.
@Suite struct WebhookPresenterTests {
  let spy = SpyOutput()
  static let now = PresenterTests.now

  var presenter: TrialPresenter {
    TrialPresenter(
      output: spy, clock: StaticWallClock(Self.now), timeZone: PresenterTests.utc,
      locale: PresenterTests.posix)
  }

  static func ago(_ seconds: TimeInterval) -> Date { now.addingTimeInterval(-seconds) }

  /// An endpoint as the daemon reports it, 8 events logged.
  static func endpoint(
    _ name: String, health: WebhookEndpointHealth? = WebhookEndpointHealth(), backlog: Int = 0,
    inFlight: Int = 0, oldest: (UInt64, Date)? = nil, next: Date? = nil, position: UInt64 = 8
  ) -> WebhookEndpointObject {
    var status = WebhookEndpointStatus(
      endpoint: WebhookEndpoint(name: name, url: "https://app.example/\(name)", secretFile: "/s/\(name)"))
    if let health {
      var state = WebhookEndpointState(name: name)
      state.health = health
      status.state = state
    }
    status.position = EventCursor(position)
    status.backlog = backlog
    status.inFlight = inFlight
    status.oldest = oldest.map { EventCursor($0.0) }
    status.oldestTakenAt = oldest?.1
    status.nextAttemptAt = next
    return WebhookEndpointObject(status, last: EventCursor(8))
  }

  static func health(failures: Int, since: Date, last: WebhookAttempt, at: Date, disabled: Bool = false)
    -> WebhookEndpointHealth
  {
    var health = WebhookEndpointHealth()
    health.consecutiveFailures = failures
    health.failingSince = since
    health.lastAttempt = last
    health.lastAttemptAt = at
    if disabled {
      health.disabled = last.gone ? .gone(at: at) : .failing(since: since, at: at)
    }
    return health
  }

  static let failing = endpoint(
    "billing",
    health: health(
      failures: 3, since: ago(3_600), last: .answered(status: 500, retryAfter: nil), at: ago(300)),
    backlog: 2, inFlight: 1, oldest: (5, ago(600)), next: now.addingTimeInterval(1_500), position: 4)
  static let gone = endpoint(
    "crm",
    health: health(
      failures: 1, since: ago(7_200), last: .answered(status: 410, retryAfter: nil), at: ago(7_200),
      disabled: true), backlog: 1, oldest: (8, ago(7_300)), next: ago(7_195), position: 7)

  @Test func webhooks_AsATable_ShowStateLastAttemptBacklogAndNext() throws {
    let unanswered = Self.endpoint(
      "mail",
      health: Self.health(
        failures: 1, since: Self.ago(90), last: .failed("Connection refused"), at: Self.ago(90)),
      backlog: 1, oldest: (8, Self.ago(95)), next: Self.ago(30), position: 7)
    presenter.present(
      webhooks: [
        Self.failing, Self.gone, unanswered, Self.endpoint("shop"), Self.endpoint("new", health: nil),
      ],
      directory: "/etc/trialwatch/webhooks")
    let list = try #require(spy.lists.first)
    #expect(list.table.columns == ["NAME", "URL", "STATE", "LAST", "BACKLOG", "OLDEST", "NEXT"])
    #expect(
      list.table.rows == [
        [
          "billing", "https://app.example/billing", "failing (3 failures)", "HTTP 500, 5min ago", "2",
          "10min",
          "in 25min",
        ],
        ["crm", "https://app.example/crm", "disabled (gone)", "HTTP 410, 2h ago", "1", "2h 1min", "-"],
        [
          "mail", "https://app.example/mail", "failing (1 failure)", "Connection refused, 1min 30s ago", "1",
          "1min 35s", "overdue by 30s",
        ],
        ["shop", "https://app.example/shop", "active", "never", "0", "-", "-"],
        ["new", "https://app.example/new", "loading", "never", "0", "-", "-"],
      ])
    presenter.present(webhooks: [], directory: "/etc/trialwatch/webhooks")
    #expect(
      spy.lists.last?.emptyMessage
        == "No webhook endpoints are configured. An endpoint is a file /etc/trialwatch/webhooks/NAME.conf "
        + "(trialwatch.conf(5)), read at systemctl reload trialwatch.")
  }

  @Test func webhook_InDetail_ShowsWhyAndWhen() throws {
    presenter.present(webhook: Self.failing)
    presenter.present(webhook: Self.gone)
    let failing = try #require(spy.details.first)
    #expect(failing.headline == "billing: failing, 3 attempts failed; 2 events waiting")
    #expect(
      failing.details
        == [
          LabeledValue(label: "URL", value: "https://app.example/billing"),
          LabeledValue(label: "Secret file", value: "/s/billing"),
          LabeledValue(label: "State", value: "failing: 3 attempts failed since Jun 15, 2025 at 9:00 AM"),
          LabeledValue(label: "Last attempt", value: "HTTP 500, 5min ago (Jun 15, 2025 at 9:55 AM)"),
          LabeledValue(label: "Position", value: "0000000000000004"),
          LabeledValue(label: "Lag", value: "4 events logged after it"),
          LabeledValue(label: "Backlog", value: "2 events, 1 out for an attempt"),
          LabeledValue(
            label: "Oldest pending", value: "0000000000000005, taken 10min ago (Jun 15, 2025 at 9:50 AM)"),
          LabeledValue(label: "Next attempt", value: "in 25min (Jun 15, 2025 at 10:25 AM)"),
        ].map { LabeledValue(label: $0.label, value: nb($0.value)) })
    let gone = try #require(spy.details.last)
    #expect(gone.headline == "crm: disabled, the receiver answered 410 Gone")
    #expect(
      gone.details[2]
        == LabeledValue(
          label: "State", value: nb("disabled on Jun 15, 2025 at 8:00 AM: the receiver answered 410 Gone")))
    #expect(gone.details[3] == LabeledValue(label: "Enable with", value: "trialwatchctl webhooks enable crm"))
    #expect(gone.details.last == LabeledValue(label: "Next attempt", value: "once enabled"))
  }

  @Test func webhook_DisabledForFailing_SaysSinceWhenNothingWasDelivered() throws {
    let failed = Self.endpoint(
      "billing",
      health: Self.health(
        failures: 90, since: Self.ago(5 * 86_400), last: .answered(status: 503, retryAfter: nil),
        at: Self.ago(60),
        disabled: true))
    presenter.present(webhook: failed)
    #expect(
      spy.details.first?.headline
        == nb("billing: disabled, nothing delivered since Jun 10, 2025 at 10:00 AM (DisableAfter=)"))
  }

  @Test func attempts_AsATable_ShowEachOutcome() throws {
    let records = [
      WebhookAttemptRecord(
        at: Self.ago(3_600), cursor: EventCursor(5), messageID: "0000000000000001-r1-expiry", number: 2,
        outcome: .answered(status: 503, retryAfter: .seconds(120)), duration: .milliseconds(1_250)),
      WebhookAttemptRecord(
        at: Self.ago(60), cursor: nil, messageID: "msg_test_1", number: 1,
        outcome: .failed("Connection refused"),
        duration: .milliseconds(3)),
      WebhookAttemptRecord(
        at: Self.ago(30), cursor: EventCursor(5), messageID: "0000000000000001-r1-expiry", number: 3,
        outcome: .answered(status: 200, retryAfter: nil), duration: .milliseconds(80)),
    ]
    presenter.present(attempts: records.map(WebhookAttemptObject.init), of: "billing", event: nil)
    let list = try #require(spy.lists.first)
    #expect(list.title == "Attempts to deliver to billing, oldest first:")
    #expect(
      list.table.rows == [
        [
          nb("Jun 15, 2025 at 9:00 AM"), "0000000000000005", "0000000000000001-r1-expiry", "2",
          "rejected (HTTP 503)", "1s", "2min",
        ],
        [nb("Jun 15, 2025 at 9:59 AM"), "-", "test", "1", "no answer: Connection refused", "3ms", "-"],
        [
          nb("Jun 15, 2025 at 9:59 AM"), "0000000000000005", "0000000000000001-r1-expiry", "3",
          "delivered (HTTP 200)", "80ms", "-",
        ],
      ])
    presenter.present(attempts: [], of: "billing", event: "0000000000000009")
    #expect(spy.lists.last?.emptyMessage == "No attempts of event 0000000000000009 kept.")
  }
}
