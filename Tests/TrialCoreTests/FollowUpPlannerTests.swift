import Foundation
import Testing
import TrialTesting

@testable import TrialCore

/// Follow-ups in the planner: they join their trial's interned schedule, so far trials with
/// follow-ups are held by id and due time alone like those with reminders only, and an ended
/// trial's follow-ups stay planned (far too) until each is taken.
struct FollowUpPlannerTests {
  static let followUps = try! FollowUpSchedule([.days(3), .days(30)])

  private func trial(_ raw: UInt64, state: TrialState = .active) -> Trial {
    var trial = makeTrial(raw, start: .day(0), days: 10)
    trial.followUps = Self.followUps
    if state.isEnded {
      trial.state = state
      trial.endedAt = .day(10)
    }
    return trial
  }

  @Test func trialsWithFollowUps_AreHeldFar_SharingOneSchedule() {
    var planner = Planner()
    planner.holdFar(lookahead: .days(1), now: .day(0))
    for raw in 1...100 { planner.add(trial(UInt64(raw)), now: .day(0)) }
    #expect(planner.farTrialCount == 100)
    #expect(planner.schedules.count == 1)
    // The default reminders, the expiry and two follow-ups each.
    #expect(planner.pendingEventCount == 100 * (ReminderSchedule.default.offsets.count + 3))
  }

  @Test func endedTrial_KeepsItsFollowUpsPlanned_FarUntilDue() {
    var planner = Planner()
    planner.holdFar(lookahead: .days(1), now: .day(0))
    let expired = trial(1, state: .expired)
    planner.add(expired, now: .day(10))
    #expect(planner.farTrialCount == 1 && planner.pendingEventCount == 2)
    let next = planner.farEvent(of: expired)
    #expect(next?.kind == .followUp(after: .days(3)) && next?.due == .day(13))
    // A converted trial's are planned the same: the call-off is decided as each falls due.
    planner.add(trial(2, state: .converted), now: .day(10))
    #expect(planner.pendingEventCount == 4)
    _ = planner.cancel(TrialID(1))
    #expect(planner.pendingEventCount == 2)
  }
}
