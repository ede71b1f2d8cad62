import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Trials cancelled at their end on every store: the mark in the trial's record (its time and
/// the plan's RemindAfterCancel= then), reminders taken as skipped (`cancel-at-end`), the
/// expiry that cancels the trial (ended at its end, `outcome=cancelled` on the trial and the
/// logged expiry, counted cancelled in its cohort), the mark taken back, and a store that
/// verifies clean throughout.
@Suite struct CancelContractTests {
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let defaults = TrialDefaults(
    length: .days(10), reminders: reminders,
    plans: [
      "pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders),
      "loud": TrialPlan(name: "loud", length: .days(10), reminders: reminders, remindAfterCancel: true),
    ])

  @discardableResult
  private func apply(_ command: TrialCommand, on store: Subject, at days: Double, id: UInt64 = 0x90) throws
    -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent])
  {
    try store.repository.write { txn in
      try TrialBook.apply(
        command, in: txn, now: origin.addingTimeInterval(days * day), defaults: Self.defaults,
        ids: SequenceTrialIDGenerator([id]), folding: SubjectFolding { $0 })
    }
  }

  /// Takes the trial's pending events due by `days`, as the engine does.
  private func take(_ store: Subject, _ id: TrialID, through days: Double) throws -> [TakenEvent] {
    var planner = Planner()
    try store.repository.restore(into: &planner)
    let now = origin.addingTimeInterval(days * day)
    let due = planner.pendingEvents(of: id).filter { $0.due <= now }.map {
      DueEvent(event: $0, takenAt: $0.due, disposition: .fire, isLate: false)
    }
    return try store.repository.write { try TrialBook.take(in: $0, due, now: now) }
  }

  private func cohort(_ store: Subject) throws -> CohortCounts {
    try store.repository.read { try $0.cohorts(from: Int32.min, through: Int32.max) }.reduce(
      into: CohortCounts()
    ) {
      $0.add($1.counts)
    }
  }

  @Test(arguments: StoreKind.allCases)
  func cancelAtEnd_SkipsReminders_AndCancelsAtTheEnd(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-90", plan: "pro"), on: store, at: 0).trial
    let marked = try apply(try .cancel(.subject("acme-90"), atEnd: true), on: store, at: 1).trial
    #expect(marked.state == .active && marked.cancelsAt == origin + 10 * day)
    #expect(marked.cancelMark == TrialCancelMark(askedAt: origin + day, remindAfterCancel: false))
    // Asked again: the same answer, the mark of the first ask.
    #expect(try apply(try .cancel(.id(started.id), atEnd: true), on: store, at: 2).trial == marked)
    let report = try store.reopen()
    #expect(report?.isClean != false, "\(report?.problems.prefix(3) ?? [])")
    #expect(try store.repository.trial(started.id) == marked)

    let reminders = try take(store, started.id, through: 9)
    #expect(reminders.map(\.logged.entry.outcome) == [.skipped(.cancelAtEnd), .skipped(.cancelAtEnd)])
    let end = try take(store, started.id, through: 10)
    #expect(end.map(\.logged.id.description) == ["0000000000000090-r1-expiry"])
    #expect(end.first?.logged.entry.outcome == .fired)
    #expect(end.first?.logged.attributes.outcome == "cancelled")
    #expect(end.first?.trial.state == .cancelled)
    #expect(try take(store, started.id, through: 11).isEmpty)

    let after = try store.reopen()
    #expect(after?.isClean != false, "\(after?.problems.prefix(3) ?? [])")
    let ended = try #require(try store.repository.trial(started.id))
    #expect(ended.state == .cancelled && ended.endedAt == origin + 10 * day)
    #expect(ended.attributes.outcome == "cancelled" && ended.attributes.plan == "pro")
    let log = try store.repository.loggedEvents(after: EventCursor(0), limit: 10)
    #expect(log.map(\.entry.outcome) == [.skipped(.cancelAtEnd), .skipped(.cancelAtEnd), .fired])
    #expect(log.last?.attributes.outcome == "cancelled")
    let counts = try cohort(store)
    #expect(counts.started == 1 && counts.cancelled == 1 && counts.expired == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func remindAfterCancel_FiresReminders_AndAnExtensionKeepsTheMark(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-91", plan: "loud"), on: store, at: 0, id: 0x91).trial
    _ = try apply(try .cancel(.id(started.id), atEnd: true), on: store, at: 1)
    let extended = try apply(try .extend(started.id, .by(.days(5))), on: store, at: 2).trial
    #expect(extended.cancelsAt == origin + 15 * day && extended.cancelMark?.remindAfterCancel == true)
    #expect(try store.reopen()?.isClean != false)
    let taken = try take(store, started.id, through: 15)
    #expect(taken.map(\.logged.entry.outcome) == [.fired, .fired, .fired])
    #expect(try store.repository.trial(started.id)?.state == .cancelled)
  }

  @Test(arguments: StoreKind.allCases)
  func uncancel_RestoresRemindersAndTheExpiry(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-92", plan: "pro"), on: store, at: 0, id: 0x92).trial
    let refused = #expect(throws: TrialError.self) {
      try apply(try .uncancel(.id(started.id)), on: store, at: 1)
    }
    #expect(refused?.code == .notCancelling(started.id))
    _ = try apply(try .cancel(.id(started.id), atEnd: true), on: store, at: 1)
    #expect(try take(store, started.id, through: 7).map(\.logged.entry.outcome) == [.skipped(.cancelAtEnd)])
    let unmarked = try apply(try .uncancel(.subject("acme-92")), on: store, at: 8).trial
    #expect(unmarked.cancelMark == nil && unmarked.cancelsAt == nil)
    #expect(try store.reopen()?.isClean != false)
    let rest = try take(store, started.id, through: 10)
    #expect(rest.map(\.logged.entry.outcome) == [.fired, .fired])
    let ended = try #require(try store.repository.trial(started.id))
    #expect(ended.state == .expired && ended.attributes.outcome == nil)
    let gone = #expect(throws: TrialError.self) {
      try apply(try .uncancel(.id(started.id)), on: store, at: 11)
    }
    #expect(gone?.code == .notActive(started.id, .expired))
    let counts = try cohort(store)
    #expect(counts.expired == 1 && counts.cancelled == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func cancelNow_EndsTheTrial_AndDropsAMark(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-93"), on: store, at: 0, id: 0x93).trial
    _ = try apply(try .pause(.id(started.id)), on: store, at: 1)
    let marked = try apply(try .cancel(.id(started.id), atEnd: true), on: store, at: 2).trial
    #expect(marked.state == .paused && marked.cancelsAt == origin + 10 * day)
    let ended = try apply(
      try .cancel(.id(started.id), atEnd: false, labels: ["why": "price"]), on: store, at: 3)
    #expect(ended.trial.state == .cancelled && ended.trial.endedAt == origin + 3 * day)
    #expect(ended.trial.cancelMark == nil && ended.trial.labels["why"] == "price")
    #expect(try store.reopen()?.isClean != false)
    #expect(try store.repository.trial(started.id) == ended.trial)
    let again = #expect(throws: TrialError.self) {
      try apply(try .cancel(.id(started.id), atEnd: true), on: store, at: 4)
    }
    #expect(again?.code == .notActive(started.id, .cancelled))
  }
}
