import Foundation
import Testing
import TrialControl
import TrialCore
import TrialTesting

@testable import TrialDaemon

/// What the handlers compute from trials: the filters of ListTrials and the plan of GetPlan.
@Suite struct HandlerLogicTests {
  static let now = Date(timeIntervalSince1970: 1_750_000_000)

  static func trial() throws -> Trial { try Trial.sample(start: now) }

  @Test func listFilters_Match_AsDocumented() throws {
    let trial = try Self.trial()
    #expect(ListTrialsParameters().matches(trial, now: Self.now))
    #expect(ListTrialsParameters(state: .active).matches(trial, now: Self.now))
    #expect(!ListTrialsParameters(state: .expired).matches(trial, now: Self.now))
    #expect(ListTrialsParameters(expiringWithin: .days(5)).matches(trial, now: Self.now))
    #expect(!ListTrialsParameters(expiringWithin: .seconds(4.9 * 86_400)).matches(trial, now: Self.now))
    #expect(ListTrialsParameters().pageSize == 100)
  }

  @Test func plan_OfATrial_MergesTheLedgerWithWhatIsPending() throws {
    var trial = try Self.trial()
    let events = trial.events
    let fired = LedgerEntry(
      event: events[0], outcome: .fired, takenAt: events[0].due.addingTimeInterval(120), isLate: true,
      deliveredAt: events[0].due.addingTimeInterval(121))
    var plan = EventObject.plan(of: trial, ledger: [fired])
    #expect(plan.map(\.state) == [.delivered, .pending, .pending])
    #expect(plan[0].lateness?.duration == .seconds(120))
    #expect(plan.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(plan.allSatisfy { $0.subject == "acme-42" })

    trial.state = .cancelled
    trial.endedAt = Self.now.addingTimeInterval(4 * 86_400)
    plan = EventObject.plan(of: trial, ledger: [fired])
    #expect(plan.map(\.state) == [.delivered, .skipped, .skipped])
    #expect(plan[2].reason == "trial-cancelled")
    #expect(plan[2].takenAt == trial.endedAt)

    let skipped = LedgerEntry(
      event: events[1], outcome: .skipped(.supersededByExpiry), takenAt: Self.now, isLate: true)
    let object = EventObject(skipped, attributes: nil)
    #expect(object.state == .skipped)
    #expect(object.reason == "superseded-by-expiry")
    #expect(object.detail == "superseded by the trial's expiry")
    let wire = try WireCoding.makeEncoder().encode(object)
    #expect(try WireCoding.makeDecoder().decode(EventObject.self, from: wire) == object)
  }
}
