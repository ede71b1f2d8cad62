import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Trials in grace on every store: the grace kept in the trial's record, `grace-started` at the
/// end moving the trial to `grace` (still the subject's open trial, its expiry planned by a
/// restore at the end plus the grace), the expiry then, each once; a conversion during grace
/// counted as converted at its time; an extension making it active again; and a store that
/// verifies clean throughout.
@Suite struct GraceContractTests {
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let defaults = TrialDefaults(
    length: .days(10), reminders: reminders,
    plans: [
      "pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders, grace: .days(5)),
      "basic": TrialPlan(name: "basic", length: .days(10), reminders: reminders),
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

  private func planned(_ store: Subject, _ id: TrialID) throws -> [TrialEvent] {
    var planner = Planner()
    try store.repository.restore(into: &planner)
    return planner.pendingEvents(of: id)
  }

  /// Takes what a restored planner has due at `days`, as the engine's timer does.
  @discardableResult
  private func takeDue(_ store: Subject, at days: Double) throws -> [TakenEvent] {
    var planner = Planner()
    try store.repository.restore(into: &planner)
    let now = origin.addingTimeInterval(days * day)
    let due = planner.takeDue(at: now)
    return try store.repository.write { try TrialBook.take(in: $0, due, now: now) }
  }

  private func expectClean(_ store: Subject) throws {
    let report = try store.reopen()
    #expect(report?.isClean != false, "\(report?.problems.prefix(3) ?? [])")
  }

  private func cohort(_ store: Subject) throws -> CohortCounts {
    try store.repository.read { try $0.cohorts(from: Int32.min, through: Int32.max) }.first?.counts
      ?? CohortCounts()
  }

  @Test(arguments: StoreKind.allCases)
  func graceStarted_AtTheEnd_ThenTheExpiryAtTheGracesEnd(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-90", plan: "pro"), on: store, at: 0).trial
    #expect(started.grace == .days(5) && started.entersGrace)
    try expectClean(store)
    #expect(try store.repository.trial(started.id)?.grace == .days(5))
    #expect(
      try planned(store, started.id).map(\.id.description) == [
        "0000000000000090-r1-reminder-259200000ms", "0000000000000090-r1-reminder-86400000ms",
        "0000000000000090-r1-grace-started", "0000000000000090-r1-expiry",
      ])
    #expect(try planned(store, started.id).suffix(2).map(\.due) == [origin + 10 * day, origin + 15 * day])

    try takeDue(store, at: 9.5)
    let graceStarted = try takeDue(store, at: 10)
    #expect(graceStarted.map(\.logged.id.description) == ["0000000000000090-r1-grace-started"])
    #expect(graceStarted.first?.trial.state == .grace)
    try expectClean(store)
    let inGrace = try #require(try store.repository.trial(started.id))
    #expect(inGrace.state == .grace && inGrace.endedAt == nil && inGrace.revision == 1)
    #expect(try store.repository.read { try $0.activeTrialID(subject: "acme-90") } == started.id)
    let refused = #expect(throws: TrialError.self) {
      try apply(try .start(subject: "acme-90"), on: store, at: 11, id: 0x91)
    }
    #expect(refused?.code == .subjectAlreadyActive(subject: "acme-90", existing: started.id))
    let paused = #expect(throws: TrialError.self) {
      try apply(try .pause(.id(started.id)), on: store, at: 11)
    }
    #expect(paused?.code == .notActive(started.id, .grace))
    // A restore plans the expiry alone; the start of grace never fires again.
    #expect(try planned(store, started.id).map(\.id.description) == ["0000000000000090-r1-expiry"])
    #expect(try takeDue(store, at: 14.9).isEmpty)
    #expect(try cohort(store).active == 1)

    let expired = try takeDue(store, at: 15)
    #expect(expired.map(\.logged.id.description) == ["0000000000000090-r1-expiry"])
    try expectClean(store)
    let ended = try #require(try store.repository.trial(started.id))
    #expect(ended.state == .expired && ended.endedAt == origin + 15 * day)
    #expect(try planned(store, started.id).isEmpty)
    #expect(try takeDue(store, at: 16).isEmpty)
    #expect(try cohort(store).expired == 1 && cohort(store).active == 0)
    let log = try store.repository.loggedEvents(after: EventCursor(0), limit: 10)
    #expect(
      log.filter { $0.entry.fired }.map(\.id.kind) == [.reminder(before: .days(1)), .graceStarted, .expiry])
    #expect(try store.repository.read { try $0.activeTrialID(subject: "acme-90") } == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func conversionDuringGrace_CountsConverted_AndAnExtensionMakesItActive(kind: StoreKind) throws {
    let store = try Subject(kind)
    let converted = try apply(try .start(subject: "acme-92", plan: "pro"), on: store, at: 0, id: 0x92).trial
    let extended = try apply(try .start(subject: "acme-93", plan: "pro"), on: store, at: 0, id: 0x93).trial
    #expect(try takeDue(store, at: 10).filter { $0.logged.id.kind == .graceStarted }.count == 2)

    let ended = try apply(.end(converted.id, .converted), on: store, at: 12).trial
    #expect(ended.state == .converted && ended.endedAt == origin + 12 * day)
    #expect(try planned(store, converted.id).isEmpty)
    #expect(try cohort(store).converted == 1)
    #expect(try cohort(store).medianHoursToConversion == 288)

    // An extension needs a new end in the future: one from the passed end is refused.
    let stale = #expect(throws: TrialError.self) {
      try apply(try .extend(extended.id, .by(.days(1))), on: store, at: 12)
    }
    #expect(stale?.code == .invalidParameter(.end, problem: "the new end must lie in the future"))
    let active = try apply(try .extend(extended.id, .to(origin + 20 * day)), on: store, at: 12).trial
    #expect(active.state == .active && active.revision == 2 && active.period.endDate == origin + 20 * day)
    try expectClean(store)
    #expect(
      try planned(store, extended.id).map(\.id.description) == [
        "0000000000000093-r2-reminder-259200000ms", "0000000000000093-r2-reminder-86400000ms",
        "0000000000000093-r2-grace-started", "0000000000000093-r2-expiry",
      ])
    // The old revision's expiry (at day 15) never fires.
    #expect(try takeDue(store, at: 16).isEmpty)
    #expect(try cohort(store).active == 1 && cohort(store).expired == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func trialWithoutGrace_ExpiresAtItsEnd_AsBefore(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-94", plan: "basic"), on: store, at: 0, id: 0x94).trial
    #expect(started.grace == .zero && !started.entersGrace)
    #expect(try planned(store, started.id).map(\.id.kind) == started.events.map(\.id.kind))
    #expect(started.events.last?.due == origin + 10 * day && started.events.count == 3)
    let taken = try takeDue(store, at: 10)
    #expect(taken.last?.logged.id.kind == .expiry && taken.last?.trial.state == .expired)
    try expectClean(store)
    #expect(try store.repository.trial(started.id)?.state == .expired)
  }
}
