import FoundationEssentials
import TrialCore

extension StatsPeriod: WireChoice {}

/// A UTC day as the wire gives it: `2026-11-27`, or an RFC 3339 time (its UTC day).
public struct CalendarDay: WireText, Hashable, Comparable, Sendable {
  public static let wireName = "a day (2026-11-27) or an RFC 3339 time"

  /// The number of days since 1970-01-01.
  public var day: Int32

  public init(_ day: Int32) {
    self.day = day
  }

  public init(_ date: Date) {
    day = CohortKey.day(of: date)
  }

  /// `2026-11-27`, or an RFC 3339 time; nil for anything else.
  public init?(_ text: String) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    if text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
      let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), (1...12).contains(month),
      (1...CivilTime.daysInMonth(month, of: year)).contains(day)
    {
      self.init(Int32(CivilTime.daysSince1970(year: year, month: month, day: day)))
    } else if let date = try? RFC3339.parse(text) {
      self.init(date)
    } else {
      return nil
    }
  }

  /// `2026-11-27`.
  public var description: String {
    String(RFC3339.format(Date(timeIntervalSince1970: Double(day) * 86_400)).prefix(10))
  }

  public static func < (lhs: CalendarDay, rhs: CalendarDay) -> Bool { lhs.day < rhs.day }
}

public struct GetStatsParameters: VarlinkParameters, Hashable {
  /// The cohorts of the trials started from the period holding `from` through the one holding
  /// `to` (default: today, UTC).
  public var from: CalendarDay
  public var to: CalendarDay?
  /// Default: week.
  public var by: StatsPeriod?
  /// The trials of this plan only; all trials when absent.
  public var plan: String?
  /// Also the figures of each variant of `plan` (which it needs) and, for two, their z-test.
  public var byVariant: Bool?

  public init(
    from: CalendarDay, to: CalendarDay? = nil, by: StatsPeriod? = nil, plan: String? = nil,
    byVariant: Bool? = nil
  ) {
    self.from = from
    self.to = to
    self.by = by
    self.plan = plan
    self.byVariant = byVariant
  }

  public func validate() throws(WireProblem) {
    if let to, to < from { throw .parameter("to", "must not be before from (\(from))") }
    if let plan, let problem = TrialPlan.validateName(plan) { throw .parameter("plan", problem) }
    if byVariant == true, plan == nil {
      throw .parameter("byVariant", "needs plan: the figures by variant are of one plan's variants")
    }
    let period = by ?? .week
    var count = 0
    var start = period.start(of: from.day)
    let last = (to ?? from).day
    while start <= last {
      count += 1
      guard count <= TrialStats.maximumPeriods else {
        throw .parameter(
          "from", "more than \(TrialStats.maximumPeriods) periods of a \(period.rawValue) to \(to ?? from)")
      }
      start = period.next(after: start)
    }
  }
}

/// The figures of the cohorts of one period, or of all of them (`io.trialwatch.Trials.Cohort`).
public struct CohortObject: Codable, Hashable, Sendable {
  /// The first and the last day of the period, UTC.
  public var start: CalendarDay
  public var end: CalendarDay
  public var started: Int64
  public var active: Int64
  public var paused: Int64
  public var converted: Int64
  public var cancelled: Int64
  public var expired: Int64
  /// Converted ÷ ended (converted, cancelled or expired), 0 to 1; absent while none ended.
  public var conversionRate: Double?
  /// The lower median of the times from start to conversion, in whole hours; absent without a
  /// conversion.
  public var medianTimeToConversion: Span?

  public init(first: Int32, last: Int32, _ counts: CohortCounts) {
    start = CalendarDay(first)
    end = CalendarDay(last)
    started = counts.started
    active = counts.active
    paused = counts.paused
    converted = counts.converted
    cancelled = counts.cancelled
    expired = counts.expired
    conversionRate = counts.conversionRate.map { ($0 * 1e6).rounded() / 1e6 }
    medianTimeToConversion = counts.medianHoursToConversion.map { Span(.seconds(Int64($0) * 3_600)) }
  }
}

public struct GetStatsReply: Codable, Hashable, Sendable {
  public var by: StatsPeriod
  public var plan: String?
  /// Every period from `from` through `to`, in order, those without trials too.
  public var periods: [CohortObject]
  public var total: CohortObject
  /// With `byVariant`: each variant's figures over the periods of `total`.
  public var variants: [VariantCohortObject]?
  /// With `byVariant` and exactly two variants, each with an ended trial: their z-test.
  public var comparison: VariantComparisonObject?

  public init(
    by: StatsPeriod, plan: String?, periods: [CohortObject], total: CohortObject,
    variants: [VariantCohortObject]? = nil, comparison: VariantComparisonObject? = nil
  ) {
    self.by = by
    self.plan = plan
    self.periods = periods
    self.total = total
    self.variants = variants
    self.comparison = comparison
  }
}

/// One variant's figures (`io.trialwatch.Trials.VariantCohort`): a cohort's, with the rate's
/// 95 % Wilson interval.
public struct VariantCohortObject: Codable, Hashable, Sendable {
  public var variant: String
  /// Its weight in the plan as loaded; absent for a variant the plan no longer has.
  public var weight: Int?
  public var started: Int64
  public var active: Int64
  public var paused: Int64
  public var converted: Int64
  public var cancelled: Int64
  public var expired: Int64
  /// Converted ÷ ended, and its 95 % Wilson score interval, 0 to 1; absent while none ended.
  public var conversionRate: Double?
  public var conversionLow: Double?
  public var conversionHigh: Double?
  public var medianTimeToConversion: Span?

  public init(_ figures: VariantFigures) {
    let counts = figures.counts
    variant = figures.name
    weight = figures.weight
    started = counts.started
    active = counts.active
    paused = counts.paused
    converted = counts.converted
    cancelled = counts.cancelled
    expired = counts.expired
    conversionRate = counts.conversionRate.map(Self.rounded)
    conversionLow = figures.interval.map { Self.rounded($0.lowerBound) }
    conversionHigh = figures.interval.map { Self.rounded($0.upperBound) }
    medianTimeToConversion = counts.medianHoursToConversion.map { Span(.seconds(Int64($0) * 3_600)) }
  }

  /// To six places, as a cohort's rate.
  static func rounded(_ value: Double) -> Double { (value * 1e6).rounded() / 1e6 }
}

/// Two variants' rates compared (`io.trialwatch.Trials.VariantComparison`).
public struct VariantComparisonObject: Codable, Hashable, Sendable {
  /// The second's rate less the first's (in the order of `variants`), and z with its sign.
  public var first: String
  public var second: String
  public var difference: Double
  public var z: Double
  /// Two-sided, of the pooled two-proportion z-test (relative error below 1.2e-7).
  public var pValue: Double

  public init(_ comparison: VariantComparison) {
    first = comparison.first
    second = comparison.second
    difference = VariantCohortObject.rounded(comparison.difference)
    z = comparison.z
    pValue = comparison.pValue
  }
}
