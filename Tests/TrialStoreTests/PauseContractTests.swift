import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Paused trials on every store: the pause in the trial's record, the events `paused` and
/// `resumed` in the ledger, the outbox and the event log, the subject kept, the resume of a
/// pause that runs out planned by a restore, and a store that verifies clean throughout.
@Suite struct PauseContractTests {
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let defaults = TrialDefaults(
    length: .days(10), reminders: reminders,
    plans: ["pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders, maxPause: .days(7))])

  @discardableResult
  private func apply(_ command: TrialCommand, on store: Subject, at days: Double, id: UInt64 = 0x70) throws
    -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent])
  {
    try store.repository.write { txn in
      try TrialBook.apply(
        command, in: txn, now: origin.addingTimeInterval(days * day), defaults: Self.defaults,
        ids: SequenceTrialIDGenerator([id]), folding: SubjectFolding { $0.lowercased() })
    }
  }

  private func planned(_ store: Subject, _ id: TrialID) throws -> [TrialEvent] {
    var planner = Planner()
    try store.repository.restore(into: &planner)
    return planner.pendingEvents(of: id)
  }

  @Test(arguments: StoreKind.allCases)
  func pausedTrial_IsKeptAsPaused_AndItsPauseRunsOutOnce(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-70", plan: "pro"), on: store, at: 0).trial
    let paused = try apply(try .pause(.subject("acme-70")), on: store, at: 1)
    #expect(paused.logged.map(\.id.description) == ["0000000000000070-r1-paused-777600000ms"])
    #expect(paused.logged.first?.attributes.plan == "pro")
    let report = try store.reopen()
    #expect(report?.isClean != false, "\(report?.problems.prefix(3) ?? [])")

    let stored = try #require(try store.repository.trial(started.id))
    #expect(stored == paused.trial)
    #expect(stored.pause == TrialPause(since: origin + day, until: origin + 8 * day))
    #expect(try store.repository.outbox().map(\.id) == paused.logged.map(\.id))
    #expect(try store.repository.read { try $0.activeTrialID(subject: "acme-70") } == started.id)
    let refused = #expect(throws: TrialError.self) {
      try apply(try .start(subject: "acme-70"), on: store, at: 2, id: 0x71)
    }
    #expect(refused?.code == .subjectAlreadyActive(subject: "acme-70", existing: started.id))

    // A restore plans the resume alone, when the pause runs out.
    let resume = try planned(store, started.id)
    #expect(resume.map(\.id.description) == ["0000000000000070-r1-resumed-777600000ms"])
    #expect(resume.map(\.due) == [origin + 8 * day])
    let due = resume.map { DueEvent(event: $0, takenAt: origin + 8 * day, disposition: .fire, isLate: false) }
    let taken = try store.repository.write { try TrialBook.take(in: $0, due, now: origin + 8 * day) }
    #expect(taken.map(\.logged.id) == resume.map(\.id))
    #expect(try store.repository.write { try TrialBook.take(in: $0, due, now: origin + 8 * day) }.isEmpty)

    let after = try store.reopen()
    #expect(after?.isClean != false, "\(after?.problems.prefix(3) ?? [])")
    let resumed = try #require(try store.repository.trial(started.id))
    #expect(resumed.state == .active && resumed.pause == nil && resumed.revision == 2)
    #expect(resumed.period.endDate == origin + 17 * day)
    #expect(try planned(store, started.id).map(\.id.revision) == [2, 2, 2])
    let log = try store.repository.loggedEvents(after: EventCursor(0), limit: 10)
    #expect(
      log.map(\.id.description) == [
        "0000000000000070-r1-paused-777600000ms", "0000000000000070-r1-resumed-777600000ms",
      ])
    #expect(log.map(\.entry.event.trialEnd) == [origin + 10 * day, origin + 17 * day])
  }

  @Test(arguments: StoreKind.allCases)
  func resume_SkipsTheRemindersOfBeforeThePause_AndEndingWhilePausedKeepsThePause(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-72"), on: store, at: 0, id: 0x72).trial
    _ = try apply(try .pause(.id(started.id)), on: store, at: 8)
    let resumed = try apply(try .resume(.id(started.id)), on: store, at: 20)
    #expect(resumed.trial.period.endDate == origin + 22 * day && resumed.trial.revision == 2)
    #expect(resumed.skipped.map(\.event.id.description) == ["0000000000000072-r2-reminder-259200000ms"])
    #expect(resumed.logged.map(\.entry.outcome) == [.fired, .skipped(.alreadyDueAtResume)])
    #expect(try store.reopen()?.isClean != false)
    let ledger = try store.repository.read { try $0.ledgerEntries(trial: started.id) }
    #expect(ledger.first { $0.id.revision == 2 }?.outcome == .skipped(.alreadyDueAtResume))

    let other = try apply(try .start(subject: "acme-73"), on: store, at: 20, id: 0x73).trial
    _ = try apply(try .pause(.id(other.id)), on: store, at: 21)
    let ended = try apply(.end(other.id, .cancelled), on: store, at: 22).trial
    #expect(ended.state == .cancelled && ended.pause?.since == origin + 21 * day)
    #expect(try store.reopen()?.isClean != false)
    #expect(try store.repository.trial(other.id) == ended)
    #expect(try planned(store, other.id).isEmpty)
  }
}
