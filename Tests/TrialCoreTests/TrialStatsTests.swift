import Foundation
import Testing
import TrialCore
import TrialTesting

/// The conversion figures: cohorts by plan and start day, what each change of a trial counts
/// for, the periods they are grouped in, the rate and the median.
@Suite struct TrialStatsTests {
  static let utc: Calendar = {
    var calendar = Calendar(identifier: .iso8601)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar
  }()

  static func day(_ text: String) -> Int32 {
    let parts = text.split(separator: "-").map { Int($0)! }
    let date = utc.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))!
    return Int32(date.timeIntervalSince1970 / 86_400)
  }

  @Test(arguments: [
    ("2026-11-27", "2026-11-23", "2026-11-01"), ("2026-11-23", "2026-11-23", "2026-11-01"),
    ("2026-11-22", "2026-11-16", "2026-11-01"), ("2024-02-29", "2024-02-26", "2024-02-01"),
    ("1969-12-31", "1969-12-29", "1969-12-01"), ("2027-01-01", "2026-12-28", "2027-01-01"),
  ])
  func periodStart_OfADay_IsItsMondayAndFirstOfTheMonth(day: String, monday: String, first: String) {
    #expect(StatsPeriod.day.start(of: Self.day(day)) == Self.day(day))
    #expect(StatsPeriod.week.start(of: Self.day(day)) == Self.day(monday))
    #expect(StatsPeriod.month.start(of: Self.day(day)) == Self.day(first))
    let month = StatsPeriod.month.start(of: Self.day(day))
    let next = Self.utc.date(
      byAdding: .month, value: 1, to: Date(timeIntervalSince1970: Double(month) * 86_400))!
    #expect(StatsPeriod.month.next(after: month) == Int32(next.timeIntervalSince1970 / 86_400))
  }

  @Test func changes_OfATrialsLife_CountItOnceInItsCohort() throws {
    let start = Date(timeIntervalSince1970: Double(Self.day("2026-11-27")) * 86_400 + 3_600)
    var trial = Trial(
      id: TrialID(1), attributes: TrialAttributes(subject: "a", plan: "pro"),
      period: TrialPeriod(startDate: start, endDate: start + 14 * 86_400))
    var total = CohortCounts()
    func change(to next: Trial, was before: Trial?) {
      if let (key, delta) = TrialStats.change(from: before, to: next) {
        #expect(key == CohortKey(day: Self.day("2026-11-27"), plan: "pro"))
        total.add(delta)
      }
    }
    change(to: trial, was: nil)
    #expect(total == CohortCounts(started: 1) && total.active == 1)
    var paused = trial
    paused.state = .paused
    paused.pause = TrialPause(since: start + 60)
    change(to: paused, was: trial)
    #expect(total.paused == 1 && total.active == 0)
    var converted = paused
    converted.state = .converted
    converted.endedAt = start + 3 * 86_400 + 7_199
    change(to: converted, was: paused)
    #expect(total == CohortCounts(started: 1, converted: 1, conversionHours: [73: 1]))
    #expect(total.conversionRate == 1 && total.medianHoursToConversion == 73)
    // An extension changes nothing; an expiry of another trial counts as expired.
    trial.reschedule(endDate: start + 20 * 86_400)
    #expect(
      TrialStats.change(from: Trial(id: TrialID(2), subject: "b", period: trial.period), to: trial) == nil)
  }

  /// Found by the store-file fuzz target (FuzzTesting/Regressions/store-file/
  /// trial-start-beyond-the-days-of-a-cohort): a trial record with a start (or an end) no
  /// calendar reaches, as a damaged store holds one, crashed the engine's start when it changed
  /// the trial's cohort.
  @Test func cohort_OfATrialBeyondTheDaysAnInt32Counts_IsHeldAtTheEnd() throws {
    let far = Date(timeIntervalSince1970: 1e300)
    let trial = Trial(
      id: TrialID(1), subject: "a", period: TrialPeriod(startDate: far, endDate: far), state: .expired)
    #expect(TrialStats.cohort(of: trial).day == .max)
    var before = trial
    before.period = TrialPeriod(startDate: Date(timeIntervalSince1970: -1e300), endDate: far)
    #expect(TrialStats.cohort(of: before).day == .min)
    before.state = .converted
    before.endedAt = far
    #expect(TrialStats.contribution(of: before).conversionHours.hours == [UInt32.max])
  }

  @Test func median_OfTheConversions_IsTheLowerMiddleOne() {
    #expect(CohortCounts(converted: 1, conversionHours: [5: 1]).medianHoursToConversion == 5)
    #expect(CohortCounts(converted: 2, conversionHours: [5: 1, 9: 1]).medianHoursToConversion == 5)
    #expect(CohortCounts(converted: 3, conversionHours: [5: 1, 9: 1, 30: 1]).medianHoursToConversion == 9)
    #expect(CohortCounts(converted: 4, conversionHours: [1: 3, 40: 1]).medianHoursToConversion == 1)
    #expect(CohortCounts(cancelled: 2).medianHoursToConversion == nil && CohortCounts().conversionRate == nil)
    #expect(CohortCounts(started: 9, converted: 1, cancelled: 1, expired: 2).conversionRate == 0.25)
  }

  @Test func report_GroupsCohortsIntoEveryPeriod_OfOnePlanOrAll() {
    let monday = Self.day("2026-11-02")
    let records: [(key: CohortKey, counts: CohortCounts)] = [
      (CohortKey(day: monday - 1, plan: "pro"), CohortCounts(started: 100)),
      (CohortKey(day: monday, plan: ""), CohortCounts(started: 2, converted: 1, conversionHours: [10: 1])),
      (CohortKey(day: monday + 6, plan: "pro"), CohortCounts(started: 3, expired: 1)),
      (
        CohortKey(day: monday + 15, plan: "pro"),
        CohortCounts(started: 4, converted: 2, conversionHours: [3: 2])
      ),
      (CohortKey(day: monday + 30, plan: "pro"), CohortCounts(started: 100)),
    ]
    let all = TrialStats.report(records, from: monday + 3, through: monday + 20, by: .week, plan: nil)
    #expect(all.periods.map(\.first) == [monday, monday + 7, monday + 14])
    #expect(all.periods.map(\.last) == [monday + 6, monday + 13, monday + 20])
    #expect(all.periods.map(\.counts.started) == [5, 0, 4])
    #expect(all.total == CohortCounts(started: 9, converted: 3, expired: 1, conversionHours: [10: 1, 3: 2]))
    #expect(all.total.medianHoursToConversion == 3 && all.total.conversionRate == 0.75)
    let pro = TrialStats.report(records, from: monday, through: monday + 20, by: .week, plan: "pro")
    #expect(pro.periods.map(\.counts.started) == [3, 0, 4])
    let months = TrialStats.report(records, from: monday, through: monday, by: .month, plan: "pro")
    #expect(months.periods.count == 1 && months.total.started == 107)
  }

  @Test func importedTrials_CountInTheirCohorts_OnceEach() throws {
    let start = Date(timeIntervalSince1970: Double(Self.day("2026-11-02")) * 86_400)
    var converted = Trial(
      id: TrialID(1), attributes: TrialAttributes(subject: "a", plan: "pro"),
      period: TrialPeriod(startDate: start, endDate: start + 86_400 * 14))
    converted.state = .converted
    converted.endedAt = start + 5 * 3_600
    let active = Trial(
      id: TrialID(2), subject: "b", period: TrialPeriod(startDate: start, endDate: start + 86_400))
    let lines = [TrialTransfer.Line(1, .trial(converted)), TrialTransfer.Line(2, .trial(active))]
    let repository = InMemoryTrialRepository()
    for _ in 1...2 { _ = try repository.write { try TrialTransfer.apply(lines, in: $0) } }
    let cohorts = try repository.read {
      try $0.cohorts(from: Self.day("2026-11-02"), through: Self.day("2026-11-02"))
    }
    #expect(cohorts.map(\.key.plan) == ["", "pro"])
    #expect(
      cohorts.map(\.counts) == [
        CohortCounts(started: 1), CohortCounts(started: 1, converted: 1, conversionHours: [5: 1]),
      ])
  }
}
