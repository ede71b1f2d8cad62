import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialDaemon

@Suite struct EngineQueryTests {
  @Test func plan_ShowsTakenAndPendingEvents_InDueOrder() throws {
    let h = Harness(ids: [0x1])
    _ = try h.engine.start()
    let trial = try h.start("acme", days: 2)
    h.scheduler.advance(by: 1 * day)
    let (_, items) = try h.engine.plan(id: trial.id)
    #expect(items.map(\.state) == [.skipped(.alreadyDueAtStart), .delivered, .pending])
    #expect(items.map(\.event.kind) == [.reminder(before: Days(3)), .reminder(before: Days(1)), .expiry])
    #expect(items[1].lateness == 0)
    h.engine.stop()
  }

  @Test func plan_OfEndedTrial_ShowsCancelledEvents() throws {
    let h = Harness(ids: [0x2])
    _ = try h.engine.start()
    let trial = try h.start("acme", days: 5)
    _ = try h.engine.perform(.end(trial.id, .cancelled))
    let (ended, items) = try h.engine.plan(id: trial.id)
    #expect(ended.state == .cancelled)
    #expect(items.map(\.state) == [.cancelled, .cancelled, .cancelled])
    #expect(throws: TrialError(.notFound("with id 00000000000000ff"))) { try h.engine.plan(id: TrialID(0xff)) }
    h.engine.stop()
  }

  @Test func list_PagesByCursor_AndFilters() throws {
    let h = Harness(ids: [1, 2, 3, 4, 5])
    _ = try h.engine.start()
    for (index, subject) in ["a", "b", "c", "d", "e"].enumerated() {
      try h.start(subject, days: Double(index + 1), reminders: [])
    }
    let first = try h.engine.listTrials(state: nil, expiringWithin: nil, limit: 2, after: nil)
    #expect(first.trials.map(\.subject) == ["a", "b"])
    let second = try h.engine.listTrials(state: nil, expiringWithin: nil, limit: 2, after: first.next)
    #expect(second.trials.map(\.subject) == ["c", "d"])
    let last = try h.engine.listTrials(state: nil, expiringWithin: nil, limit: 2, after: second.next)
    #expect(last.trials.map(\.subject) == ["e"] && last.next == nil)
    let soon = try h.engine.listTrials(state: .active, expiringWithin: Days(2), limit: 10, after: nil)
    #expect(soon.trials.map(\.subject) == ["a", "b"])
    h.scheduler.advance(by: 1 * day)
    let expired = try h.engine.listTrials(state: .expired, expiringWithin: nil, limit: 10, after: nil)
    #expect(expired.trials.map(\.subject) == ["a"])
    h.engine.stop()
  }

  @Test func simulate_ChangesNothing_AndMatchesWhatFires() throws {
    let h = Harness(ids: [1, 2])
    _ = try h.engine.start()
    try h.start("a", days: 2)
    try h.start("b", days: 4)
    let predicted = h.engine.simulate(through: epoch.addingTimeInterval(3.5 * day))
    #expect(h.engine.planner.pendingEventCount == 5)
    h.scheduler.advance(by: 3.5 * day)
    #expect(predicted.map(\.event.id) == h.sink.ids)
    h.engine.stop()
  }

  @Test func status_CountsAndNextEvent() throws {
    let h = Harness(ids: [1])
    _ = try h.engine.start()
    try h.start("acme-42", days: 1, reminders: [])
    let status = h.engine.status()
    #expect(status.counts[.active] == 1)
    #expect(status.nextSubject == "acme-42" && status.nextEvent?.kind == .expiry)
    #expect(status.line == "1 active trial; next: acme-42 expires in 1d")
    h.engine.stop()
  }
}
