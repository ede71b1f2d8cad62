import Foundation
import PropertyBased
import Testing
import TrialTesting

@testable import TrialCore

/// The planner's packing (`compact`): plan numbers running out, and slots mostly free. Both
/// limits are lowered here so that packing happens all the time.
struct PlannerPackingTests {
  /// A planner that numbers its plans again after `planLimit` and packs its slots once more
  /// than `floor` of them exist and fewer than a quarter are in use.
  static func planner(policy: CatchUpPolicy = CatchUpPolicy(), planLimit: UInt32, floor: Int) -> Planner {
    var planner = Planner(policy: policy)
    planner.planLimit = planLimit
    planner.compactionFloor = floor
    return planner
  }

  @Test(arguments: CatchUpPolicy.LateReminders.allCases)
  func randomLives_PackedAtEveryTurn_StillMatchTheModel(reminders: CatchUpPolicy.LateReminders) async {
    await propertyCheck(count: 200, input: PlannerPropertyTests.operations, Gen.int(in: 1...6)) {
      operations, limit in
      let policy = CatchUpPolicy(reminders: reminders)
      var model = Model(
        policy: policy, now: .day(0),
        planner: Self.planner(policy: policy, planLimit: UInt32(limit), floor: 2))
      model.run(operations)
    }
  }

  @Test func planNumbersRunOut_EqualDeadlinesStillFirstInFirstOut() {
    let driver = PlannerDriver(now: .day(0), planner: Self.planner(planLimit: 3, floor: 1 << 20))
    let ids: [UInt64] = [9, 4, 7, 1, 8, 2, 6, 3, 5]
    for id in ids { driver.start(makeTrial(id, start: .day(0), days: 5, reminders: .none)) }
    // Re-planned: goes after every other trial.
    var moved = makeTrial(4, start: .day(0), days: 5, reminders: .none)
    driver.extend(&moved, to: .day(5))
    driver.scheduler.advance(to: .day(6))
    #expect(driver.taken.map(\.event.trialID.rawValue) == [9, 7, 1, 8, 2, 6, 3, 5, 4])
  }

  @Test func mostTrialsExpired_SlotsAndIndexShrink_TheRestFireOnTime() {
    let driver = PlannerDriver(now: .day(0), planner: Self.planner(planLimit: .max, floor: 64))
    // 1,000 trials ending on day 1, then 100 ending on days 2 to 3, all at whole hours.
    var late: [Trial] = []
    for id in 1...1_100 as ClosedRange<UInt64> {
      let days = id <= 1_000 ? 1 : 2 + Double(id % 24) / 24
      let trial = makeTrial(id * 0x9E37_79B9, start: .day(0), days: days, reminders: .none)
      driver.start(trial)
      if id > 1_000 { late.append(trial) }
    }
    #expect(driver.planner.slots.count == 1_100)
    driver.scheduler.advance(to: .day(1.5))
    #expect(driver.taken.count == 1_000)
    #expect(driver.planner.trialCount == 100)
    #expect(driver.planner.slots.count == 100, "packed")
    #expect(driver.planner.buckets.count <= 256)
    for trial in late { #expect(driver.planner.pendingEvents(of: trial.id) == trial.events) }
    #expect(driver.planner.pendingEvent(late[0].events[0].id) == late[0].events[0])
    driver.scheduler.advance(to: .day(4))
    let fired = driver.taken.dropFirst(1_000)
    // In due order; equal due times in the order the trials started.
    let expected = late.enumerated().sorted {
      ($0.element.period.endDate, $0.offset) < ($1.element.period.endDate, $1.offset)
    }
    #expect(fired.map(\.event) == expected.flatMap(\.element.events))
    #expect(fired.allSatisfy { $0.takenAt == $0.event.due && $0.fires })
    #expect(driver.planner.trialCount == 0)
  }

  @Test func index_FindsEveryTrial_AfterManyRemovals() {
    var planner = Planner()
    let now = Date.day(0)
    let ids = (1...5_000 as ClosedRange<UInt64>).map { $0 &* 0x2545_F491_4F6C_DD1D }
    for id in ids { planner.add(makeTrial(id, start: now, days: 3, reminders: .none), now: now) }
    // Every third one ended; the rest still found, the ended ones not.
    for id in ids.enumerated().filter({ $0.offset % 3 == 0 }).map(\.element) {
      let cancelled = planner.cancel(TrialID(id))
      #expect(cancelled)
    }
    for (offset, id) in ids.enumerated() {
      #expect(planner.pendingEvents(of: TrialID(id)).isEmpty == (offset % 3 == 0))
      let cancelled = planner.cancel(TrialID(id))
      #expect(cancelled == (offset % 3 != 0))
    }
    #expect(planner.trialCount == 0)
    #expect(planner.pendingEventCount == 0)
    #expect(planner.nextDeadline == nil)
  }
}
