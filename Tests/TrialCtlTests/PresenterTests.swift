import Foundation
import Testing
import TrialControl
import TrialCore
import TrialCtl
import TrialTesting

/// Dates as ICU writes them: a narrow no-break space before AM and PM.
func nb(_ text: String) -> String {
  text.replacingOccurrences(of: " AM", with: "\u{202F}AM").replacingOccurrences(of: " PM", with: "\u{202F}PM")
}

/// Records every view model the presenter hands over.
final class SpyOutput: TrialPresenterOutput {
  var trials: [TrialViewModel] = []
  var lists: [ListViewModel] = []
  var eventLines: [EventLineViewModel] = []
  var notices: [String] = []
  var details: [DetailsViewModel] = []
  var messages: [String] = []

  func showTrial(_ viewModel: TrialViewModel) { trials.append(viewModel) }
  func showEventLine(_ viewModel: EventLineViewModel) { eventLines.append(viewModel) }
  func showNotice(_ text: String) { notices.append(text) }
  func showDetails(_ viewModel: DetailsViewModel) { details.append(viewModel) }
  func showList(_ viewModel: ListViewModel) { lists.append(viewModel) }
  func showMessage(_ text: String) { messages.append(text) }
}

@Suite struct PresenterTests {
  /// 2025-06-15T10:00:00Z, a Sunday.
  static let now = Date(timeIntervalSince1970: 1_749_981_600)
  static let utc = ReaderTimeZone(named: "UTC")!
  static let posix = ReaderLocale.posix

  static func trial(
    ends end: Date, state: TrialState = .active, endedAt: Date? = nil,
    reminders: [Duration] = [.days(3), .days(1)]
  ) -> TrialObject {
    TrialObject(
      id: TrialID(0xABC), subject: "acme-42", state: state, startedAt: now.addingTimeInterval(-86_400),
      endsAt: end,
      endedAt: endedAt, reminders: reminders, revision: 2,
      daysLeft: end.timeIntervalSince(now) / 86_400)
  }

  func presenter(
    _ spy: SpyOutput, now: Date = PresenterTests.now, timeZone: ReaderTimeZone = PresenterTests.utc,
    locale: ReaderLocale = PresenterTests.posix
  ) -> TrialPresenter {
    TrialPresenter(output: spy, clock: StaticWallClock(now), timeZone: timeZone, locale: locale)
  }

  @Test(arguments: [
    (2.1, "3 days left"), (3.0, "3 days left"), (1.0, "1 day left"), (0.75, "1 day left"),
    (0.5, "ends today"),
    (0.01, "ends today"), (0, "expiring now"), (-0.1, "expiring now"),
  ])
  func daysLeft_OfAFraction_AreRoundedUp(days: Double, expected: String) {
    let spy = SpyOutput()
    presenter(spy).present(trial: Self.trial(ends: Self.now.addingTimeInterval(days * 86_400)))
    #expect(spy.trials.first?.timeLeft == expected)
  }

  @Test func endedTrial_InTheHeadline_SaysHowLongAgo() {
    let spy = SpyOutput()
    let presenter = presenter(spy)
    let day: TimeInterval = 86_400
    presenter.present(trial: Self.trial(ends: Self.now.addingTimeInterval(-2 * day), state: .expired))
    presenter.present(trial: Self.trial(ends: Self.now.addingTimeInterval(-3600), state: .expired))
    presenter.present(trial: Self.trial(ends: Self.now.addingTimeInterval(-0.6 * day), state: .expired))
    presenter.present(
      trial: Self.trial(
        ends: Self.now.addingTimeInterval(day), state: .converted, endedAt: Self.now.addingTimeInterval(-60)))
    presenter.present(
      trial: Self.trial(
        ends: Self.now.addingTimeInterval(day), state: .cancelled,
        endedAt: Self.now.addingTimeInterval(-5 * day)))
    #expect(
      spy.trials.map(\.timeLeft) == [
        "expired 2 days ago", "expired today", "expired 1 day ago", "converted today", "cancelled 5 days ago",
      ])
    #expect(spy.trials.map(\.state) == ["expired", "expired", "expired", "converted", "cancelled"])
  }

  @Test func endsToday_AroundMidnight_FollowsTheReadersCalendarDay() {
    // 20 hours left: the end is 06:00 UTC on the 16th, tomorrow for a reader in UTC.
    let end = Self.now.addingTimeInterval(20 * 3600)
    let utc = SpyOutput()
    presenter(utc).present(trial: Self.trial(ends: end))
    #expect(utc.trials.first?.timeLeft == "1 day left")
    // In Los Angeles it is 03:00 on the 15th, and the end is 23:00 on the 15th.
    let losAngeles = SpyOutput()
    presenter(losAngeles, timeZone: ReaderTimeZone(named: "America/Los_Angeles")!).present(
      trial: Self.trial(ends: end))
    #expect(losAngeles.trials.first?.timeLeft == "ends today")
  }

  @Test func detailsAndHeadline_OfATrial_UseTheReadersTimeZoneAndLocale() throws {
    let end = Self.now.addingTimeInterval(3 * 86_400)
    let utc = SpyOutput()
    presenter(utc).present(trial: Self.trial(ends: end))
    let view = try #require(utc.trials.first)
    #expect(view.headline == nb("acme-42: 3 days left (ends Jun 18, 2025 at 10:00 AM)"))
    #expect(view.details.map(\.label) == ["ID", "State", "Started", "Ends", "Reminders", "Revision"])
    #expect(
      view.details.map(\.value) == [
        "0000000000000abc", "active", nb("Jun 14, 2025 at 10:00 AM"), nb("Jun 18, 2025 at 10:00 AM"),
        "3d, 1d before the end",
        "2",
      ])

    let tokyo = SpyOutput()
    presenter(tokyo, timeZone: ReaderTimeZone(named: "Asia/Tokyo")!).present(trial: Self.trial(ends: end))
    #expect(tokyo.trials.first?.headline == nb("acme-42: 3 days left (ends Jun 18, 2025 at 7:00 PM)"))

    let german = SpyOutput()
    presenter(german, timeZone: ReaderTimeZone(named: "Europe/Berlin")!, locale: ReaderLocale("de_DE"))
      .present(trial: Self.trial(ends: end))
    #expect(german.trials.first?.details[3].value == "18.06.2025, 12:00")
  }

  @Test func endedTrial_InItsDetails_ShowsWhenItEnded() throws {
    let spy = SpyOutput()
    presenter(spy).present(
      trial: Self.trial(
        ends: Self.now.addingTimeInterval(86_400), state: .converted,
        endedAt: Self.now.addingTimeInterval(-3600),
        reminders: []))
    let view = try #require(spy.trials.first)
    #expect(view.headline == "acme-42: converted today")
    #expect(view.details.first { $0.label == "Ended" }?.value == nb("Jun 15, 2025 at 9:00 AM"))
    #expect(view.details.first { $0.label == "Reminders" }?.value == "none")
  }

  @Test func trialWithAPlanAndLabels_InItsDetails_ShowsThemAfterTheRevision() throws {
    var trial = Self.trial(ends: Self.now.addingTimeInterval(86_400))
    trial.named["plan"] = "pro"
    trial.labels = ["tier": "gold", "customer": "c-991"]
    let spy = SpyOutput()
    presenter(spy).present(trial: trial)
    let view = try #require(spy.trials.first)
    #expect(
      view.details.map(\.label).suffix(3) == ["Revision", "Plan", "Labels"])
    #expect(view.details.first { $0.label == "Plan" }?.value == "pro")
    #expect(view.details.first { $0.label == "Labels" }?.value == "customer=c-991, tier=gold")
    spy.trials.removeAll()
    presenter(spy).present(trial: Self.trial(ends: Self.now.addingTimeInterval(86_400)))
    #expect(spy.trials.first?.details.contains { $0.label == "Plan" } == false)
  }

  @Test func list_OfTrials_BecomesATable() throws {
    let spy = SpyOutput()
    let presenter = presenter(spy)
    presenter.present(
      trials: [
        Self.trial(ends: Self.now.addingTimeInterval(86_400 * 1.5)),
        Self.trial(ends: Self.now, state: .expired),
      ],
      next: TrialID(0xABC))
    presenter.present(trials: [], next: nil)
    let list = try #require(spy.lists.first)
    #expect(list.table.columns == ["ID", "SUBJECT", "STATE", "ENDS", "LEFT"])
    #expect(
      list.table.rows == [
        ["0000000000000abc", "acme-42", "active", nb("Jun 16, 2025 at 10:00 PM"), "2 days left"],
        ["0000000000000abc", "acme-42", "expired", nb("Jun 15, 2025 at 10:00 AM"), "expired today"],
      ])
    #expect(list.continuation == "More trials follow: trialwatchctl list --after 0000000000000abc (or --all)")
    #expect(spy.lists.last?.table.rows.isEmpty == true)
    #expect(spy.lists.last?.continuation == nil)
  }

  static func event(
    _ kind: EventKind, state: EventObject.State, lateness: Duration? = nil, reason: String? = nil,
    detail: String? = nil
  ) -> EventObject {
    let due = now.addingTimeInterval(-(kind.reminderOffset?.timeInterval ?? 0))
    return EventObject(
      id: EventID(trialID: TrialID(0xABC), revision: 1, kind: kind), subject: "acme-42", state: state,
      due: due,
      reason: reason, detail: detail,
      takenAt: state == .pending ? nil : due.addingTimeInterval(lateness?.timeInterval ?? 0),
      lateness: lateness)
  }

  @Test func plan_OfATrial_ListsEveryEventWithItsState() throws {
    let spy = SpyOutput()
    presenter(spy).present(
      plan: [
        Self.event(.reminder(before: .days(3)), state: .delivered, lateness: .seconds(125)),
        Self.event(
          .reminder(before: .days(1)), state: .skipped, reason: "superseded-by-expiry",
          detail: "superseded by the trial's expiry"),
        Self.event(.expiry, state: .pending),
      ], of: TrialID(0xABC))
    let plan = try #require(spy.lists.first)
    #expect(plan.title == "Events of trial 0000000000000abc:")
    #expect(
      plan.table.rows == [
        [nb("Jun 12, 2025 at 10:00 AM"), "reminder 3d before the end", "delivered", "late by 2min 5s"],
        [
          nb("Jun 14, 2025 at 10:00 AM"), "reminder 1d before the end", "skipped",
          "superseded by the trial's expiry",
        ],
        [nb("Jun 15, 2025 at 10:00 AM"), "expiry", "pending", ""],
      ])
  }

  @Test func events_SimulatedOrWatched_AreListed() {
    let spy = SpyOutput()
    let presenter = presenter(spy)
    presenter.present(
      simulation: [Self.event(.expiry, state: .fired)], until: Self.now.addingTimeInterval(86_400))
    #expect(spy.lists.first?.title == nb("Between now and Jun 16, 2025 at 10:00 AM: 1 event."))
    #expect(
      spy.lists.first?.table.rows == [
        [nb("Jun 15, 2025 at 10:00 AM"), "acme-42", "expiry", "would fire"]
      ])
    presenter.present(simulation: [], until: Self.now)
    #expect(spy.lists.last?.title == nb("Between now and Jun 15, 2025 at 10:00 AM: 0 events."))

    presenter.presentWatchStarted()
    presenter.present(watchedEvent: Self.event(.expiry, state: .fired, lateness: .hours(2)))
    presenter.present(
      watchedEvent: Self.event(
        .reminder(before: .days(1)), state: .skipped, detail: "already due when the trial started"))
    #expect(spy.notices == ["Watching for events; press Ctrl-C to stop."])
    #expect(
      spy.eventLines.map(\.line) == [
        nb("Jun 15, 2025 at 12:00 PM  acme-42  expiry  fired, late by 2h"),
        nb(
          "Jun 14, 2025 at 10:00 AM  acme-42  reminder 1d before the end  "
            + "skipped (already due when the trial started)"
        ),
      ])
  }

  @Test func daemonStatus_IsPresented() throws {
    let spy = SpyOutput()
    let next = EventObject(
      id: EventID(trialID: TrialID(7), revision: 1, kind: .expiry), subject: "acme-42", state: .pending,
      due: Self.now.addingTimeInterval(2 * 3600 + 13 * 60))
    presenter(spy).present(
      status: GetStatusReply(
        version: "1.0.0", startedAt: Self.now.addingTimeInterval(-90_000), uptime: .seconds(90_000),
        trials: TrialCounts(active: 1204, expired: 3, converted: 2, cancelled: 1), pendingEvents: 3612,
        nextEvent: next, storeBytes: 5_452_595, connections: 2, watchers: 1))
    let status = try #require(spy.details.first)
    #expect(status.headline == "trialwatchd 1.0.0: 1204 active trials")
    #expect(
      status.details.map(\.value) == [
        "1.0.0", nb("Jun 14, 2025 at 9:00 AM (up 1d 1h)"), "1204 active, 3 expired, 2 converted, 1 cancelled",
        "3612",
        nb("acme-42 expiry in 2h 13min (Jun 15, 2025 at 12:13 PM)"), "5.2 MiB", "2", "1",
      ])
  }

  @Test func daemonStatus_WithTheOutlook_SaysHowManyTrialsAreDue() throws {
    let spy = SpyOutput()
    let status = GetStatusReply(
      version: "1.0.0", startedAt: Self.now, uptime: .seconds(60), trials: TrialCounts(active: 500),
      pendingEvents: 1500, connections: 1, watchers: 0)
    presenter(spy).present(
      status: status,
      outlook: [DueWithin(within: "24h", trials: 12), DueWithin(within: "7d", trials: 480)])
    presenter(spy).present(status: status, outlook: [DueWithin(within: "1h", trials: 1)])
    presenter(spy).present(status: status, outlook: nil)
    let due = spy.details.map { $0.details.first { $0.label == "Due" }?.value }
    #expect(due == ["12 trials within 24h, 480 within 7d", "1 trial within 1h", nil])
    #expect(spy.details[0].details.map(\.label).prefix(6).last == "Due", "after the next event")
  }

  @Test func daemonStatus_WithEventsHeldBack_SaysHowManyAndWhy() throws {
    let spy = SpyOutput()
    presenter(spy).present(
      status: GetStatusReply(
        version: "1.0.0", startedAt: Self.now, uptime: .seconds(60), trials: TrialCounts(active: 0),
        pendingEvents: 0, connections: 1, watchers: 0,
        held: HeldEvents(events: 1200, reason: "at most 9000 entries per 30s to the journal")))
    let status = try #require(spy.details.first)
    #expect(
      status.details.last
        == LabeledValue(
          label: "Held back", value: "1200 events (at most 9000 entries per 30s to the journal)"))
  }
}

@Suite struct TerminalViewTests {
  @Test func table_OfAnyWidths_IsAligned() {
    let output = BufferOutput()
    let errors = BufferOutput()
    let view = TerminalView(output: output, notices: errors)
    view.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["ID", "SUBJECT", "LEFT"],
          rows: [["1", "a-much-longer-name", "3 days left"], ["22", "b", ""]]),
        emptyMessage: "No trials.", continuation: "more"))
    #expect(
      output.lines == [
        "ID  SUBJECT             LEFT",
        "1   a-much-longer-name  3 days left",
        "22  b",
      ])
    #expect(errors.lines == ["more"])
  }

  @Test func details_UnderTheHeadline_AreAligned() {
    let output = BufferOutput()
    TerminalView(output: output, notices: BufferOutput()).showDetails(
      DetailsViewModel(
        headline: "h",
        details: [LabeledValue(label: "A", value: "1"), LabeledValue(label: "Longer", value: "2")]))
    #expect(output.lines == ["h", "  A       1", "  Longer  2"])
  }

  @Test func list_WhenEmpty_SaysSo() {
    let output = BufferOutput()
    TerminalView(output: output, notices: BufferOutput()).showList(
      ListViewModel(table: TableViewModel(columns: ["ID"], rows: []), emptyMessage: "No trials."))
    #expect(output.lines == ["No trials."])
  }

  @Test func readersLocale_FromTheEnvironment_IsUsed() {
    #expect(CtlEnvironment.readerLocale(["LANG": "de_DE.UTF-8"]).identifier == "de_DE")
    #expect(CtlEnvironment.readerLocale(["LANG": "de_DE.UTF-8", "LC_TIME": "fr_FR"]).identifier == "fr_FR")
    #expect(CtlEnvironment.readerLocale(["LANG": "de_DE", "LC_ALL": "C.UTF-8"]).identifier == "en_US_POSIX")
    #expect(CtlEnvironment.readerLocale([:]).identifier == "en_US_POSIX")
  }
}
