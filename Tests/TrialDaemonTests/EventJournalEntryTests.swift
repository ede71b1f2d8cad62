import Foundation
import Systemd
import SystemdTesting
import Testing
import TrialCore

@testable import TrialDaemon

/// A trial of `acme-42` ending 2026-11-27 14:00:00 UTC, with reminders 3 days and 1 day before.
private enum Fixture {
  /// The journal fields of `entry`, an event of `trial`, taken with its attributes now.
  static func journalFields(_ entry: LedgerEntry, of trial: Trial = Fixture.trial) -> [JournalField] {
    EventJournalEntry.fields(for: entry, attributes: trial.attributes, trial: trial)
  }

  static let end = Date(timeIntervalSince1970: 1_795_788_000)
  static let id = TrialID(0x7f3a_0c2d_9e11_4b58)
  static let trial = Trial(
    id: id, subject: "acme-42",
    period: TrialPeriod(startDate: end.addingTimeInterval(-5 * 86_400), endDate: end),
    revision: 3)
  static let threeDays = trial.event(at: 0)
  static let oneDay = trial.event(at: 1)
  static let expiry = trial.event(at: 2)

  static func entry(
    _ event: TrialEvent, after lateness: TimeInterval, late: Bool = false,
    outcome: LedgerEntry.Outcome = .fired
  ) -> LedgerEntry {
    LedgerEntry(event: event, outcome: outcome, takenAt: event.due.addingTimeInterval(lateness), isLate: late)
  }
}

/// An entry's fields for `Fixture.trial`: `head` (its message, id and priority), the trial's,
/// then `tail` (the event's).
private func fields(
  _ head: KeyValuePairs<String, String>, _ tail: KeyValuePairs<String, String>
) -> [JournalField] {
  journalFields(head)
    + journalFields([
      "TRIAL_ID": "7f3a0c2d9e114b58", "TRIAL_SUBJECT": "acme-42", "TRIAL_REVISION": "3",
      "TRIAL_END": "2026-11-27T14:00:00Z",
    ]) + journalFields(tail)
}

@Suite struct EventJournalEntryTests {
  @Test func entry_ForAnExpiryOnTime_HasItsFields() {
    let entry = Fixture.entry(Fixture.expiry, after: 0.2)
    #expect(
      Fixture.journalFields(entry)
        == fields(
          [
            "MESSAGE": "Trial acme-42 (id 7f3a0c2d9e114b58) expired at 2026-11-27 14:00:00 UTC",
            "MESSAGE_ID": "a16bdf9f2f29487d962a88689b1d20c8",
            "PRIORITY": "5",
          ],
          [
            "EVENT_KIND": "expiry",
            "EVENT_ID": "7f3a0c2d9e114b58-r3-expiry",
            "DUE_REALTIME_USEC": "1795788000000000",
            "LATENESS_USEC": "200000",
          ]))
  }

  /// A follow-up fired has its own message id; one called off names its reason.
  @Test func entry_ForAFollowUp_FiredOrCalledOff() throws {
    var followed = Fixture.trial.expired(byExpiryTakenAt: Fixture.end)
    followed.followUps = try FollowUpSchedule([.days(3)])
    let followUp = followed.event(at: followed.eventCount - 1)
    let fired = Fixture.journalFields(Fixture.entry(followUp, after: 0), of: followed)
    #expect(
      fired.contains(JournalField(name: "MESSAGE_ID", value: EventJournalEntry.MessageID.followUp.rawValue)))
    #expect(fired.contains(JournalField(name: "EVENT_KIND", value: "follow-up")))
    for reason in [SkipReason.calledOffByConversion, .calledOffByNewTrial] {
      let skipped = Fixture.journalFields(
        Fixture.entry(followUp, after: 0, outcome: .skipped(reason)), of: followed)
      #expect(skipped.contains(JournalField(name: "SKIP_REASON", value: reason.code)))
      #expect(
        skipped.contains { $0.name == "MESSAGE" && $0.value.hasSuffix("after its end skipped, \(reason)") })
    }
  }

  /// A milestone fired has its own message id; one skipped names its reason.
  @Test func entry_ForAMilestone_FiredOrSkipped() throws {
    var nudged = Fixture.trial
    nudged.milestones = try MilestoneSchedule([.days(1)])
    let milestone = nudged.milestoneEvents[0]
    let fired = Fixture.journalFields(Fixture.entry(milestone, after: 0), of: nudged)
    #expect(
      fired.contains(JournalField(name: "MESSAGE_ID", value: EventJournalEntry.MessageID.milestone.rawValue)))
    #expect(fired.contains(JournalField(name: "EVENT_KIND", value: "milestone")))
    for reason in [SkipReason.trialEnded, .paused] {
      let skipped = Fixture.journalFields(
        Fixture.entry(milestone, after: 0, outcome: .skipped(reason)), of: nudged)
      #expect(skipped.contains(JournalField(name: "SKIP_REASON", value: reason.code)))
      #expect(
        skipped.contains { $0.name == "MESSAGE" && $0.value.hasSuffix("after its start skipped, \(reason)") })
    }
  }

  /// The expiry of a trial cancelled at its end: its own message id and words, and
  /// TRIAL_OUTCOME after the subject; a reminder skipped for it names its reason.
  @Test func entry_ForTheEndOfACancelAtTheEnd_SaysCancelled() {
    var marked = Fixture.trial
    marked.cancelMark = TrialCancelMark(askedAt: Fixture.end.addingTimeInterval(-86_400))
    let cancelled = marked.expired(byExpiryTakenAt: Fixture.end)
    let fields = Fixture.journalFields(Fixture.entry(Fixture.expiry, after: 0), of: cancelled)
    let byName = Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    #expect(
      byName["MESSAGE"]
        == "Trial acme-42 (id 7f3a0c2d9e114b58) was cancelled at its end at 2026-11-27 14:00:00 UTC")
    #expect(byName["MESSAGE_ID"] == EventJournalEntry.MessageID.cancelledAtEnd.rawValue)
    #expect(byName["TRIAL_OUTCOME"] == "cancelled")
    let names = fields.map(\.name)
    #expect(names.firstIndex(of: "TRIAL_OUTCOME")! == names.firstIndex(of: "TRIAL_SUBJECT")! + 1)
    let skipped = Fixture.journalFields(
      Fixture.entry(Fixture.oneDay, after: 0, outcome: .skipped(.cancelAtEnd)), of: marked)
    #expect(skipped.contains(JournalField(name: "SKIP_REASON", value: "cancel-at-end")))
    #expect(
      skipped.contains {
        $0.name == "MESSAGE"
          && $0.value.hasSuffix("the trial is cancelled at its end; ends 2026-11-27 14:00:00 UTC")
      })
    #expect(!skipped.contains { $0.name == "TRIAL_OUTCOME" })
  }

  @Test func entry_OfALabelledTrial_CarriesEachLabelAfterTheSubject() {
    var trial = Fixture.trial
    trial.labels = try! TrialLabels(["tier": "pro", "customer_id": "c-991"])
    let names = EventJournalEntry.fields(
      for: Fixture.entry(Fixture.expiry, after: 0.2), attributes: trial.attributes, trial: trial
    ).map {
      "\($0.name)=\($0.value)"
    }
    let subject = names.firstIndex(of: "TRIAL_SUBJECT=acme-42")
    #expect(subject != nil)
    #expect(
      Array(names[(subject! + 1)...].prefix(3)) == [
        "TRIAL_LABEL_CUSTOMER_ID=c-991", "TRIAL_LABEL_TIER=pro", "TRIAL_REVISION=3",
      ])
  }

  @Test func entry_ForAReminderOnTime_HasItsFields() {
    let entry = Fixture.entry(Fixture.threeDays, after: 0)
    #expect(
      Fixture.journalFields(entry)
        == fields(
          [
            "MESSAGE": "Trial acme-42 (id 7f3a0c2d9e114b58): 3 days left, ends 2026-11-27 14:00:00 UTC",
            "MESSAGE_ID": "e0431c29206b4f89b9db88d7e38907bc",
            "PRIORITY": "6",
          ],
          [
            "EVENT_KIND": "reminder",
            "EVENT_ID": "7f3a0c2d9e114b58-r3-reminder-259200000ms",
            "DUE_REALTIME_USEC": "1795528800000000",
            "LATENESS_USEC": "0",
            "REMINDER_OFFSET_SEC": "259200",
          ]))
  }

  @Test func entry_ForAnExpiryFiredLate_SaysHowLate() {
    let entry = Fixture.entry(Fixture.expiry, after: 2 * 3600 + 13 * 60 + 5, late: true)
    #expect(
      Fixture.journalFields(entry)
        == fields(
          [
            "MESSAGE":
              "Trial acme-42 (id 7f3a0c2d9e114b58) expired at 2026-11-27 14:00:00 UTC, fired 2h 13min late",
            "MESSAGE_ID": "194e6e2d7bac4fb7847f8c84893df546",
            "PRIORITY": "5",
          ],
          [
            "EVENT_KIND": "expiry",
            "EVENT_ID": "7f3a0c2d9e114b58-r3-expiry",
            "DUE_REALTIME_USEC": "1795788000000000",
            "LATENESS_USEC": "7985000000",
          ]))
  }

  @Test func entry_ForAReminderFiredLate_SaysHowLate() {
    let entry = Fixture.entry(Fixture.oneDay, after: 1800, late: true)
    #expect(
      Fixture.journalFields(entry)
        == fields(
          [
            "MESSAGE":
              "Trial acme-42 (id 7f3a0c2d9e114b58): 23h 30min left, ends 2026-11-27 14:00:00 UTC, "
              + "fired 30min late",
            "MESSAGE_ID": "194e6e2d7bac4fb7847f8c84893df546",
            "PRIORITY": "6",
          ],
          [
            "EVENT_KIND": "reminder",
            "EVENT_ID": "7f3a0c2d9e114b58-r3-reminder-86400000ms",
            "DUE_REALTIME_USEC": "1795701600000000",
            "LATENESS_USEC": "1800000000",
            "REMINDER_OFFSET_SEC": "86400",
          ]))
  }

  @Test func entry_ForAReminderFiredAfterTheEnd_SaysTheTrialEnded() {
    // Under LateReminders=all, a reminder can fire after the trial already ended.
    let entry = Fixture.entry(Fixture.oneDay, after: 86_400 + 2 * 3600, late: true)
    let message = EventJournalEntry.fields(
      for: entry, attributes: Fixture.trial.attributes, trial: Fixture.trial
    ).first
    #expect(
      message
        == JournalField(
          name: "MESSAGE",
          value: "Trial acme-42 (id 7f3a0c2d9e114b58): reminder 1d before the end, the trial already ended "
            + "at 2026-11-27 14:00:00 UTC, fired 1d 2h late"))
  }

  @Test func entry_ForAReminderSkippedBeyondGrace_SaysWhy() {
    let reason = SkipReason.beyondGrace(lateness: .hours(5), grace: .hours(1))
    let entry = Fixture.entry(Fixture.threeDays, after: 5 * 3600, late: true, outcome: .skipped(reason))
    #expect(
      Fixture.journalFields(entry)
        == fields(
          [
            "MESSAGE":
              "Trial acme-42 (id 7f3a0c2d9e114b58): reminder 3d before the end skipped, late by 5h, beyond the "
              + "grace of 1h; ends 2026-11-27 14:00:00 UTC",
            "MESSAGE_ID": "1f372a37269d4fa6a822448c5499a6bd",
            "PRIORITY": "4",
          ],
          [
            "EVENT_KIND": "reminder",
            "EVENT_ID": "7f3a0c2d9e114b58-r3-reminder-259200000ms",
            "DUE_REALTIME_USEC": "1795528800000000",
            "LATENESS_USEC": "18000000000",
            "REMINDER_OFFSET_SEC": "259200",
            "SKIP_REASON": "beyond-grace",
          ]))
  }

  @Test func entry_ForASupersededReminder_IsANotice() {
    let entry = Fixture.entry(
      Fixture.oneDay, after: 86_400, late: true, outcome: .skipped(.supersededByExpiry))
    let all = Fixture.journalFields(entry)
    #expect(
      all.first?.value
        == "Trial acme-42 (id 7f3a0c2d9e114b58): reminder 1d before the end skipped, superseded by the "
        + "trial's expiry; ends 2026-11-27 14:00:00 UTC")
    #expect(all.first { $0.name == "PRIORITY" }?.value == "5")
    #expect(all.last == JournalField(name: "SKIP_REASON", value: "superseded-by-expiry"))
  }

  @Test func entry_ForAnEventSkippedAtStart_CarriesItsReason() {
    let entry = Fixture.entry(Fixture.threeDays, after: 3600, outcome: .skipped(.alreadyDueAtStart))
    let all = Fixture.journalFields(entry)
    #expect(all.first { $0.name == "MESSAGE_ID" }?.value == EventJournalEntry.MessageID.skipped.rawValue)
    #expect(all.first { $0.name == "PRIORITY" }?.value == "5")
    #expect(all.last == JournalField(name: "SKIP_REASON", value: "already-due-at-start"))
  }

  @Test func entry_OfAnEarlierRevision_NamesItsOwnEnd() {
    // The trial was extended by two days after the expiry of revision 3 was taken.
    var extended = Fixture.trial
    extended.reschedule(endDate: Fixture.end.addingTimeInterval(2 * 86_400))
    let entry = Fixture.entry(Fixture.threeDays, after: 0)
    let all = EventJournalEntry.fields(for: entry, attributes: extended.attributes, trial: extended)
    #expect(all.first { $0.name == "TRIAL_END" }?.value == "2026-11-27T14:00:00Z")
    #expect(all.first { $0.name == "TRIAL_REVISION" }?.value == "3")
    #expect(all.first?.value.hasSuffix("ends 2026-11-27 14:00:00 UTC") == true)
  }

  @Test func entry_WithSubsecondOffsetsAndShortSpans_WritesThemExactly() throws {
    let trial = Trial(
      id: TrialID(1), subject: "seat 9",
      period: TrialPeriod(startDate: Fixture.end.addingTimeInterval(-3600), endDate: Fixture.end),
      reminders: try ReminderSchedule([.milliseconds(1_500), .minutes(10)]))
    let tenMinutes = Fixture.entry(trial.event(at: 0), after: 0)
    let all = EventJournalEntry.fields(for: tenMinutes, attributes: trial.attributes, trial: trial)
    #expect(
      all.first?.value == "Trial seat 9 (id 0000000000000001): 10min left, ends 2026-11-27 14:00:00 UTC")
    #expect(all.last == JournalField(name: "REMINDER_OFFSET_SEC", value: "600"))
    let shortest = EventJournalEntry.fields(
      for: Fixture.entry(trial.event(at: 1), after: 0), attributes: trial.attributes, trial: trial)
    #expect(shortest.last == JournalField(name: "REMINDER_OFFSET_SEC", value: "1.5"))
    #expect(shortest.first?.value.contains(": 2s left,") == true, "rounded up")
  }

  @Test func entry_ForAClockStepForward_SaysSo() {
    let from = Date(timeIntervalSince1970: 1_795_339_815)
    let to = from.addingTimeInterval(2 * 3600 + 13 * 60)
    #expect(
      EventJournalEntry.clockStep(from: from, to: to)
        == journalFields(
          [
            "MESSAGE":
              "Wall clock stepped forward by 2h 13min, from 2026-11-22 09:30:15 UTC to 2026-11-22 11:43:15 "
              + "UTC; events that became due fire now, late",
            "MESSAGE_ID": "a5c14270596d41a0993951071697858f",
            "PRIORITY": "5",
            "CLOCK_STEP_DIRECTION": "forward",
            "CLOCK_STEP_USEC": "7980000000",
            "CLOCK_FROM_REALTIME_USEC": "1795339815000000",
            "CLOCK_TO_REALTIME_USEC": "1795347795000000",
          ]))
  }

  @Test func entry_ForAClockStepBackward_SaysSo() {
    let from = Date(timeIntervalSince1970: 1_795_339_815)
    let to = from.addingTimeInterval(-300.5)
    #expect(
      EventJournalEntry.clockStep(from: from, to: to)
        == journalFields(
          [
            "MESSAGE":
              "Wall clock stepped back by 5min, from 2026-11-22 09:30:15 UTC to 2026-11-22 09:25:14 UTC; "
              + "events already fired do not fire again",
            "MESSAGE_ID": "a5c14270596d41a0993951071697858f",
            "PRIORITY": "4",
            "CLOCK_STEP_DIRECTION": "backward",
            "CLOCK_STEP_USEC": "300500000",
            "CLOCK_FROM_REALTIME_USEC": "1795339815000000",
            "CLOCK_TO_REALTIME_USEC": "1795339514500000",
          ]))
  }

  @Test func messageIDs_AreDistinct128BitIDs() {
    let ids = EventJournalEntry.MessageID.allCases.map(\.rawValue)
    #expect(Set(ids).count == ids.count && ids.count == 13)
    for id in ids {
      #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(id)")
    }
  }

  @Test func fieldNames_OfEveryEntry_AreAcceptedByTheJournal() {
    let entries = [
      Fixture.entry(Fixture.expiry, after: 0),
      Fixture.entry(Fixture.threeDays, after: 9000, late: true, outcome: .skipped(.supersededByExpiry)),
    ]
    var names = entries.flatMap {
      EventJournalEntry.fields(for: $0, attributes: Fixture.trial.attributes, trial: Fixture.trial).map(
        \.name)
    }
    names += EventJournalEntry.clockStep(from: Fixture.end, to: Fixture.end).map(\.name)
    for name in names {
      #expect(JournalField.problem(withName: name) == nil)
    }
  }
}
