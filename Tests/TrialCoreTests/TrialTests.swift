import Foundation
import Testing
import TrialCore

struct ReminderScheduleTests {
  @Test func default_IsThreeDaysAndOneDayBeforeTheEnd() {
    #expect(ReminderSchedule.default.offsets == [.days(3), .days(1)])
    #expect(ReminderSchedule.none.offsets.isEmpty)
    #expect(ReminderSchedule.default.description == "3d, 1d")
    #expect(ReminderSchedule.none.description == "none")
  }

  @Test func init_SortsOffsetsLargestFirst() throws {
    let schedule = try ReminderSchedule([.days(1), .days(7), .seconds(3_600), .days(3)])
    #expect(schedule.offsets == [.days(7), .days(3), .days(1), .seconds(3_600)])
  }

  @Test func init_Duplicates_AreKeptOnce() throws {
    let schedule = try ReminderSchedule([.days(1), .days(2), .days(1), .microseconds(86_400_000_200)])
    #expect(schedule.offsets == [.days(2), .days(1)])
  }

  @Test func init_RoundsToWholeMilliseconds() throws {
    let schedule = try ReminderSchedule([.microseconds(1_000_400), .microseconds(59_999_600)])
    #expect(schedule.offsets.map(\.timeInterval) == [60, 1])
  }

  @Test(arguments: [
    Duration.zero, .days(-1), .milliseconds(-500), .microseconds(400), .microseconds(999),
  ])
  func init_NonPositiveOrSubMillisecondOffset_IsRejectedNamingIt(offset: Duration) {
    #expect {
      _ = try ReminderSchedule([.days(1), offset])
    } throws: { error in
      guard let error = error as? ReminderSchedule.InvalidOffsets else { return false }
      return error.description.contains("reminder offset \(TimeSpan.format(offset))")
        && error.description.contains("positive")
    }
  }

  @Test func init_AtMostMaximumCount() throws {
    let allowed = (1...ReminderSchedule.maximumCount).map { Duration.minutes($0) }
    #expect(try ReminderSchedule(allowed).offsets.count == ReminderSchedule.maximumCount)
    // Duplicates do not count against the limit.
    #expect(try ReminderSchedule(allowed + allowed).offsets.count == ReminderSchedule.maximumCount)

    let tooMany = allowed + [Duration.seconds(1)]
    #expect {
      _ = try ReminderSchedule(tooMany)
    } throws: { error in
      (error as? ReminderSchedule.InvalidOffsets)?.description
        == "at most \(ReminderSchedule.maximumCount) reminders per trial, got \(tooMany.count)"
    }
  }
}

struct TrialTests {
  let start = Date(timeIntervalSinceReferenceDate: 760_000_000)

  func makeTrial(days: Double = 5, reminders: ReminderSchedule = .default) -> Trial {
    Trial(
      id: TrialID(0x42), subject: "acme-42",
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(days * 86_400)),
      reminders: reminders)
  }

  @Test func newTrial_IsActiveAtRevisionOne() {
    let trial = makeTrial()
    #expect(trial.state == .active)
    #expect(trial.isActive)
    #expect(trial.revision == 1)
    #expect(trial.endedAt == nil)
  }

  @Test func events_AreRemindersThenExpiry_InDueOrder() {
    let trial = makeTrial()
    let end = trial.period.endDate
    #expect(trial.events.map(\.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .expiry])
    #expect(
      trial.events.map(\.due) == [end.addingTimeInterval(-3 * 86_400), end.addingTimeInterval(-86_400), end])
    #expect(trial.events.allSatisfy { $0.trialID == trial.id && $0.revision == 1 })
  }

  @Test func events_WithoutReminders_IsOnlyTheExpiry() {
    let trial = makeTrial(reminders: .none)
    #expect(trial.events.map(\.kind) == [.expiry])
    #expect(trial.events.first?.due == trial.period.endDate)
  }

  @Test func events_ReminderBeforeTheStart_IsStillListed() throws {
    // A 2-day trial with a 3-day reminder: that reminder falls due before the trial began.
    let trial = makeTrial(days: 2)
    #expect(trial.events.first?.due == start.addingTimeInterval(-86_400))
  }

  @Test func reschedule_MovesTheEndAndBumpsTheRevision() {
    var trial = makeTrial()
    let before = trial.events
    let newEnd = trial.period.endDate.addingTimeInterval(7 * 86_400)
    trial.reschedule(endDate: newEnd)
    #expect(trial.revision == 2)
    #expect(trial.period.endDate == newEnd)
    #expect(trial.period.startDate == start)
    #expect(trial.events.last?.due == newEnd)
    #expect(Set(trial.events.map(\.id)).isDisjoint(with: before.map(\.id)))
    trial.reschedule(endDate: newEnd)
    #expect(trial.revision == 3, "rescheduling to the same end still starts a new revision")
  }

  @Test func validateSubject_OfEachKindOfSubject_NamesItsProblem() {
    #expect(Trial.validateSubject("acme-42") == nil)
    #expect(Trial.validateSubject(String(repeating: "a", count: 255)) == nil)
    #expect(Trial.validateSubject("") == "subject must not be empty")
    #expect(Trial.validateSubject(String(repeating: "é", count: 128)) == "subject is longer than 255 bytes")
    #expect(Trial.validateSubject("a\nb") == "subject must not contain control characters")
  }

  @Test func outcome_MapsToEndedState() {
    #expect(TrialOutcome.converted.state == .converted)
    #expect(TrialOutcome.cancelled.state == .cancelled)
    #expect(TrialState.allCases.filter(\.isEnded) == [.expired, .converted, .cancelled])
  }
}
