import Foundation
import Testing
import TrialControl
import TrialCore
import TrialCtl
import TrialTesting

/// The event log, consumers and watched events with their cursors, as view models.
@Suite struct EventLogPresenterTests {
  let spy = SpyOutput()

  var presenter: TrialPresenter {
    TrialPresenter(
      output: spy, clock: StaticWallClock(PresenterTests.now), timeZone: PresenterTests.utc,
      locale: PresenterTests.posix)
  }

  static func consumer(
    _ name: String, at position: UInt64, last: UInt64, acknowledgedAt: Date? = nil, lost: UInt64 = 0,
    lostAt: Date? = nil
  ) -> ConsumerObject {
    ConsumerObject(
      ConsumerRecord(
        name: name, acknowledged: EventCursor(position),
        createdAt: PresenterTests.now.addingTimeInterval(-86_400),
        acknowledgedAt: acknowledgedAt, lost: lost, lostAt: lostAt),
      last: EventCursor(last))
  }

  @Test func eventLog_WithEvents_ShowsItsBoundsAndRetention() throws {
    presenter.present(
      eventLog: EventLogObject(
        EventLogBounds(last: EventCursor(0x4D2), prunedThrough: EventCursor(0x400), count: 0xD2),
        retention: EventRetention(age: .seconds(90 * 86_400), cap: .seconds(365 * 86_400))))
    let view = try #require(spy.details.first)
    #expect(view.headline == "Event log: 210 events kept, newest 00000000000004d2")
    #expect(
      view.details == [
        LabeledValue(label: "Newest", value: "00000000000004d2"),
        LabeledValue(label: "Oldest kept", value: "0000000000000401"),
        LabeledValue(label: "Events kept", value: "210"),
        LabeledValue(label: "Read all from", value: "--after 0000000000000400 (or --from-oldest)"),
        LabeledValue(label: "Retention", value: "90d once every consumer has acknowledged them"),
        LabeledValue(label: "Retention cap", value: "365d, acknowledged or not"),
      ])
  }

  @Test func eventLog_EmptyOrPruned_SaysSo() {
    presenter.present(eventLog: EventLogObject(EventLogBounds(), retention: EventRetention(cap: nil)))
    presenter.present(
      eventLog: EventLogObject(
        EventLogBounds(last: EventCursor(7), prunedThrough: EventCursor(7), count: 0),
        retention: EventRetention(age: .seconds(86_400))))
    #expect(
      spy.details.map(\.headline) == [
        "Event log: empty (no event was ever logged)",
        "Event log: no events kept (all pruned); newest was 0000000000000007",
      ])
    #expect(spy.details.first?.details.first == LabeledValue(label: "Newest", value: "none"))
    #expect(
      spy.details.first?.details.last
        == LabeledValue(label: "Retention cap", value: "none: kept until every consumer acknowledged"))
  }

  @Test func consumers_AsATable_ShowPositionLagLostAndLastAcknowledgement() throws {
    presenter.present(consumers: [
      Self.consumer("mailer", at: 5, last: 8, acknowledgedAt: PresenterTests.now.addingTimeInterval(-60)),
      Self.consumer("webhook", at: 8, last: 8, lost: 2),
    ])
    let list = try #require(spy.lists.first)
    #expect(list.table.columns == ["NAME", "POSITION", "LAG", "LOST", "LAST ACKNOWLEDGED"])
    #expect(
      list.table.rows == [
        ["mailer", "0000000000000005", "3", "0", nb("Jun 15, 2025 at 9:59 AM")],
        ["webhook", "0000000000000008", "0", "2", "never"],
      ])
    presenter.present(consumers: [])
    #expect(spy.lists.last?.table.rows.isEmpty == true)
    #expect(spy.lists.last?.emptyMessage == "No consumers.")
  }

  @Test func consumer_InDetail_SaysHowFarBehindItIs() throws {
    presenter.present(
      consumer: Self.consumer(
        "mailer", at: 5, last: 6, acknowledgedAt: PresenterTests.now, lost: 3,
        lostAt: PresenterTests.now.addingTimeInterval(-3600)))
    presenter.present(consumer: Self.consumer("webhook", at: 8, last: 8))
    presenter.present(consumer: Self.consumer("late", at: 1, last: 4))
    #expect(
      spy.details.map(\.headline) == [
        "mailer: 1 event behind", "webhook: up to date", "late: 3 events behind",
      ])
    #expect(
      spy.details.first?.details == [
        LabeledValue(label: "Position", value: "0000000000000005"),
        LabeledValue(label: "Lag", value: "1 event"),
        LabeledValue(label: "Lost", value: nb("3 events, the last on Jun 15, 2025 at 9:00 AM")),
        LabeledValue(label: "Last acknowledged", value: nb("Jun 15, 2025 at 10:00 AM")),
        LabeledValue(label: "Created", value: nb("Jun 14, 2025 at 10:00 AM")),
      ])
    #expect(spy.details[1].details[2] == LabeledValue(label: "Lost", value: "none"))
    #expect(spy.details[1].details[3] == LabeledValue(label: "Last acknowledged", value: "never"))
    presenter.presentRemoved(consumer: "mailer")
    #expect(spy.messages == ["Removed consumer mailer."])
  }

  @Test func watchedEvent_WithACursor_StartsWithIt() {
    var event = PresenterTests.event(.expiry, state: .delivered)
    event.cursor = EventCursor(0x2A)
    presenter.present(watchedEvent: event)
    #expect(
      spy.eventLines.map(\.line) == [
        nb("000000000000002a  Jun 15, 2025 at 10:00 AM  acme-42  expiry  delivered")
      ])
  }
}
