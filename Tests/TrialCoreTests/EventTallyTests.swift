import Foundation
import Testing

@testable import TrialCore

/// The counts behind the metrics: a histogram's buckets, the tally of logged events, open
/// trials by plan.
@Suite struct EventTallyTests {
  static let start = Date(timeIntervalSince1970: 1_800_000_000)

  static func entry(
    _ kind: EventKind, late: TimeInterval, outcome: LedgerEntry.Outcome = .fired, isLate: Bool = false
  )
    -> LedgerEntry
  {
    let event = TrialEvent(id: EventID(trialID: TrialID(7), revision: 1, kind: kind), due: start)
    return LedgerEntry(
      event: event, outcome: outcome, takenAt: start.addingTimeInterval(late), isLate: isLate)
  }

  @Test func histogram_CountsEachValueInTheFirstBucketThatHoldsIt_Cumulatively() {
    var histogram = Histogram(bounds: [0.1, 1, 10])
    for value in [0, 0.1, 0.100001, 1, 5, 10, 11, 1e9] { histogram.record(value) }
    #expect(histogram.buckets == [2, 2, 2, 2])
    #expect(histogram.count == 8)
    // 0.1 + 0.100001 + 1 + 5 + 10 + 11 + 1e9, to the microsecond.
    #expect((histogram.sum * 1e6).rounded() == 1_000_000_027_200_001)
    let cumulative = histogram.cumulative
    #expect(cumulative.map(\.count) == [2, 4, 6, 8])
    #expect(cumulative.map(\.bound) == [0.1, 1, 10, .infinity])
  }

  @Test func tally_OfLoggedEvents_CountsFiredByKindSkippedByReasonAndLateOnes() {
    var tally = EventTally()
    tally.logged([
      Self.entry(.expiry, late: 0), Self.entry(.reminder(before: .days(1)), late: 0),
      Self.entry(.reminder(before: .days(2)), late: 7200, isLate: true),
      Self.entry(.reminder(before: .days(3)), late: 0, outcome: .skipped(.alreadyDueAtStart)),
      Self.entry(.reminder(before: .days(4)), late: 0, outcome: .skipped(.alreadyDueAtStart)),
      Self.entry(.paused(left: .days(1)), late: 0),
    ])
    #expect(
      tally.fired == [
        "expiry": 1, "reminder": 2, "paused": 1, "resumed": 0, "grace-started": 0, "follow-up": 0,
        "milestone": 0,
      ])
    #expect(tally.skipped == ["already-due-at-start": 2])
    #expect(tally.late == 1)
    #expect(tally.lateness.count == 0, "lateness is the timer's, recorded apart")
    tally.taken([
      Self.entry(.expiry, late: 0.004), Self.entry(.reminder(before: .days(2)), late: 7200),
      Self.entry(.reminder(before: .days(3)), late: 5, outcome: .skipped(.supersededByExpiry)),
    ])
    #expect(tally.lateness.count == 2, "skipped events are not fired late")
    #expect(tally.lateness.cumulative.map(\.count) == [1, 1, 1, 1, 2, 2])
    // 4 ms and 2 h, in seconds: the sum to the millisecond.
    #expect((tally.lateness.sum * 1000).rounded() == 7_200_004)
  }

  @Test func tally_OfEveryReason_CountsItUnderItsCode() {
    let reasons: [SkipReason] = [
      .alreadyDueAtStart, .alreadyDueAtExtension, .alreadyDueAtResume,
      .supersededByReminder(EventID(trialID: TrialID(7), revision: 1, kind: .expiry)), .supersededByExpiry,
      .beyondGrace(lateness: .hours(2), grace: .hours(1)), .cancelAtEnd, .calledOffByConversion,
      .calledOffByNewTrial, .trialEnded, .paused,
    ]
    var tally = EventTally()
    tally.logged(reasons.map { Self.entry(.reminder(before: .days(1)), late: 0, outcome: .skipped($0)) })
    #expect(tally.skipped == Dictionary(uniqueKeysWithValues: reasons.map { ($0.code, Int64(1)) }))
    #expect(Set(tally.skipped.keys) == Set(SkipReason.codes))
  }

  @Test func openByPlan_FromCohortsThenMoved_KeepsActiveAndPausedOfNamedPlans() {
    let cohorts: [(key: CohortKey, counts: CohortCounts)] = [
      (CohortKey(day: 20_000, plan: "pro"), CohortCounts(started: 10, converted: 2, expired: 1, paused: 3)),
      (CohortKey(day: 20_001, plan: "pro"), CohortCounts(started: 5, cancelled: 5)),
      (CohortKey(day: 20_001, plan: ""), CohortCounts(started: 9)),
    ]
    var open = OpenTrialsByPlan(cohorts: cohorts)
    #expect(open.plans == ["pro": .init(active: 4, paused: 3)])
    open.move("pro", from: .active, to: .paused)
    open.move("basic", from: nil, to: .active)
    open.move("pro", from: .paused, to: nil)
    open.move(nil, from: nil, to: .active)
    open.move("", from: nil, to: .active)
    #expect(open.plans == ["pro": .init(active: 3, paused: 3), "basic": .init(active: 1, paused: 0)])
  }
}
