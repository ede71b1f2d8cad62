import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A trial whose plan gives a grace, cancelled at its end: in virtual time on every store, across
/// a restart, it is cancelled at its end and never enters grace; the mark taken back, it enters
/// grace at its end and expires the grace later; a trial in grace cannot be cancelled at its end.
@Suite struct CancelGraceEngineTests {
  typealias Store = GraceEngineTests.Store
  typealias Run = GraceEngineTests.Run

  static func at(_ days: Double) -> Date { GraceEngineTests.at(days) }

  @Test(arguments: StoreKind.allCases)
  func markedTrialWithAGrace_IsCancelledAtItsEnd_AcrossARestart(store kind: StoreKind) throws {
    let store = try Store(kind)
    let first = try Run(store.repository, at: epoch, ids: [0x71])
    let trial = try first.engine.perform(try .start(subject: "acme-71", plan: "pro")).trial
    first.scheduler.advance(by: 2 * day)
    let marked = try first.engine.perform(try .cancel(.id(trial.id), atEnd: true)).trial
    #expect(marked.cancelsAt == Self.at(10) && !marked.entersGrace && marked.grace == .days(5))
    let plan = try first.engine.queries.simulate(
      now: Self.at(2), through: Self.at(30), policy: GraceEngineTests.settings.policy)
    #expect(plan.map(\.event.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .expiry])
    #expect(plan.last?.event.due == Self.at(10))
    first.scheduler.advance(by: 6 * day)
    first.stop()
    try store.reopen()

    let second = try Run(store.repository, at: Self.at(8))
    second.scheduler.advance(by: 22 * day)
    let taken = first.sink.delivered + second.sink.delivered
    #expect(
      taken.map(\.entry.id.kind) == [.reminder(before: .days(3)), .reminder(before: .days(1)), .expiry])
    #expect(taken.map(\.entry.outcome) == [.skipped(.cancelAtEnd), .skipped(.cancelAtEnd), .fired])
    #expect(taken.last?.entry.event.due == Self.at(10) && taken.last?.attributes.outcome == "cancelled")
    let ended = try #require(try second.trial(trial.id))
    #expect(ended.state == .cancelled && ended.endedAt == Self.at(10))
    #expect(second.engine.counts[.cancelled] == 1 && second.engine.counts[.grace, default: 0] == 0)
    second.stop()
    try store.reopen()
    // Read back at a start, it counts as cancelled still, not as expired.
    let third = try Run(store.repository, at: Self.at(31))
    #expect(third.engine.counts[.cancelled] == 1 && third.engine.counts[.expired, default: 0] == 0)
    third.stop()
  }

  @Test(arguments: StoreKind.allCases)
  func markTakenBack_TheTrialEntersGrace_AndExpiresTheGraceLater(store kind: StoreKind) throws {
    let store = try Store(kind)
    let run = try Run(store.repository, at: epoch, ids: [0x72])
    let trial = try run.engine.perform(try .start(subject: "acme-72", plan: "pro")).trial
    run.scheduler.advance(by: day)
    _ = try run.engine.perform(try .cancel(.id(trial.id), atEnd: true))
    run.scheduler.advance(by: day)
    let unmarked = try run.engine.perform(try .uncancel(.id(trial.id))).trial
    #expect(unmarked.cancelMark == nil && unmarked.entersGrace)
    run.scheduler.advance(by: 20 * day)
    #expect(
      run.sink.ids.map(\.kind) == [
        .reminder(before: .days(3)), .reminder(before: .days(1)), .graceStarted, .expiry,
      ])
    #expect(run.sink.delivered.allSatisfy { $0.entry.outcome == .fired })
    #expect(run.sink.delivered.map(\.at).suffix(2) == [Self.at(10), Self.at(15)])
    let expired = try #require(try run.trial(trial.id))
    #expect(expired.state == .expired && expired.endedAt == Self.at(15))
    run.stop()
  }

  /// Without a restart: the planner takes the mark at once, and plans the expiry at the end.
  @Test func markedTrialWithAGrace_IsReplannedAtOnce() throws {
    let run = try Run(InMemoryTrialRepository(), at: epoch, ids: [0x74])
    let trial = try run.engine.perform(try .start(subject: "acme-74", plan: "pro")).trial
    run.scheduler.advance(by: 2 * day)
    _ = try run.engine.perform(try .cancel(.id(trial.id), atEnd: true))
    run.scheduler.advance(by: 8 * day)
    #expect(run.sink.ids.map(\.kind).last == .expiry && run.sink.delivered.last?.at == Self.at(10))
    #expect(try run.trial(trial.id)?.state == .cancelled)
    run.scheduler.advance(by: 10 * day)
    #expect(!run.sink.ids.map(\.kind).contains(.graceStarted) && run.sink.ids.count == 3)
    run.stop()
  }

  @Test func trialInGrace_CannotBeCancelledAtItsEnd_ButCanBeCancelledNow() throws {
    let run = try Run(InMemoryTrialRepository(), at: epoch, ids: [0x73])
    let trial = try run.engine.perform(try .start(subject: "acme-73", plan: "pro")).trial
    run.scheduler.advance(by: 11 * day)
    #expect(try run.trial(trial.id)?.state == .grace)
    let refused = #expect(throws: TrialError.self) {
      try run.engine.perform(try .cancel(.id(trial.id), atEnd: true))
    }
    #expect(refused?.code == .notActive(trial.id, .grace))
    let cancelled = try run.engine.perform(try .cancel(.id(trial.id), atEnd: false)).trial
    #expect(cancelled.state == .cancelled && cancelled.endedAt == Self.at(11))
    run.scheduler.advance(by: 10 * day)
    #expect(run.sink.ids.map(\.kind).last == .graceStarted)
    run.stop()
  }
}
