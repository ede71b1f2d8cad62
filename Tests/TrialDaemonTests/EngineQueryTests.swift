import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

@Suite struct EngineQueryTests {
  @Test func trialWithLedger_ReturnsTakenEvents_AndNamesAMissingTrial() throws {
    let h = try Harness.started(ids: [0x1])
    let trial = try h.start("acme", days: 2)
    h.scheduler.advance(by: 1 * day)
    let (found, ledger) = try h.engine.queries.trialWithLedger(id: trial.id)
    #expect(found.id == trial.id)
    #expect(ledger.map(\.outcome) == [.skipped(.alreadyDueAtStart), .fired])
    #expect(throws: TrialError.notFound(id: TrialID(0xff))) {
      try h.engine.queries.trialWithLedger(id: TrialID(0xff))
    }
    h.engine.stop()
  }

  @Test func list_PagesByCursor_AndFilters() throws {
    let h = try Harness.started(ids: [1, 2, 3, 4, 5])
    for (index, subject) in ["a", "b", "c", "d", "e"].enumerated() {
      try h.start(subject, days: Double(index + 1), reminders: [])
    }
    let all: (Trial) -> Bool = { _ in true }
    let first = try h.engine.queries.listTrials(limit: 2, after: nil, where: all)
    #expect(first.trials.map(\.subject) == ["a", "b"])
    let second = try h.engine.queries.listTrials(limit: 2, after: first.next, where: all)
    #expect(second.trials.map(\.subject) == ["c", "d"])
    let last = try h.engine.queries.listTrials(limit: 2, after: second.next, where: all)
    #expect(last.trials.map(\.subject) == ["e"] && last.next == nil)
    let soon = try h.engine.queries.listTrials(limit: 10, after: nil) { $0.period.endDate <= epoch + 2 * day }
    #expect(soon.trials.map(\.subject) == ["a", "b"])
    h.scheduler.advance(by: 1 * day)
    let expired = try h.engine.queries.listTrials(limit: 10, after: nil) { $0.state == .expired }
    #expect(expired.trials.map(\.subject) == ["a"])
    h.engine.stop()
  }

  @Test func simulate_ChangesNothing_AndMatchesWhatFires() throws {
    let h = try Harness.started(ids: [1, 2])
    try h.start("a", days: 2)
    try h.start("b", days: 4)
    let predicted = try h.engine.simulate(through: epoch.addingTimeInterval(3.5 * day))
    #expect(h.engine.planner.pendingEventCount == 5)
    h.scheduler.advance(by: 3.5 * day)
    #expect(predicted.map(\.event.id) == h.sink.ids)
    h.engine.stop()
  }

  @Test func status_CountsAndNextEvent() throws {
    let h = try Harness.started(ids: [1])
    try h.start("acme-42", days: 1, reminders: [])
    let status = h.engine.status()
    #expect(status.counts[.active] == 1)
    #expect(status.nextAttributes?.subject == "acme-42" && status.nextEvent?.kind == .expiry)
    #expect(status.line == "1 active trial; next: acme-42 expires in 1d")
    h.engine.stop()
  }
}
