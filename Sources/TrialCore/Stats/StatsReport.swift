import FoundationEssentials

/// How cohorts are grouped: by UTC day, ISO week (from Monday) or calendar month.
public enum StatsPeriod: String, CaseIterable, Hashable, Sendable {
  case day, week, month

  /// The first day of the period that holds `day` (days since 1970-01-01, UTC).
  public func start(of day: Int32) -> Int32 {
    switch self {
    case .day:
      return day
    case .week:
      // 1970-01-01 was a Thursday: Monday is 3 days before it.
      let weekday = ((Int64(day) + 3) % 7 + 7) % 7
      return Int32(Int64(day) - weekday)
    case .month:
      let date = CivilTime.date(daysSince1970: Int64(day))
      return Int32(CivilTime.daysSince1970(year: date.year, month: date.month, day: 1))
    }
  }

  /// The first day of the period after the one starting on `start`.
  public func next(after start: Int32) -> Int32 {
    switch self {
    case .day: return start + 1
    case .week: return start + 7
    case .month:
      let date = CivilTime.date(daysSince1970: Int64(start))
      return start + Int32(CivilTime.daysInMonth(date.month, of: date.year))
    }
  }
}

/// The figures of one period's cohorts: the trials started from its first day to its last.
public struct PeriodFigures: Hashable, Sendable {
  /// The first and the last day, days since 1970-01-01 (UTC).
  public var first: Int32
  public var last: Int32
  public var counts: CohortCounts

  public init(first: Int32, last: Int32, counts: CohortCounts = CohortCounts()) {
    self.first = first
    self.last = last
    self.counts = counts
  }
}

extension TrialStats {
  /// The most periods one question may cover.
  public static let maximumPeriods = 1_000

  /// The periods of `by` from the one holding day `from` through the one holding day `through`,
  /// each with the figures of the cohorts of `records` started in it (of `plan` only, when given;
  /// a period without trials has zeros), and their total.
  public static func report(
    _ records: [(key: CohortKey, counts: CohortCounts)], from: Int32, through: Int32, by period: StatsPeriod,
    plan: String?
  ) -> (periods: [PeriodFigures], total: CohortCounts) {
    var periods: [PeriodFigures] = []
    var start = period.start(of: from)
    while start <= through && periods.count < maximumPeriods {
      let next = period.next(after: start)
      periods.append(PeriodFigures(first: start, last: next - 1))
      start = next
    }
    // The conversions of each period, summed at the end in one pass each.
    var conversions = [[ConversionHours]](repeating: [], count: periods.count)
    for (key, counts) in records where plan == nil || key.plan == plan {
      guard let first = periods.first?.first, key.day >= first else { continue }
      // Periods are in order: the last whose first day is not after the cohort's.
      var low = 0
      var high = periods.count - 1
      while low < high {
        let middle = (low + high + 1) / 2
        if periods[middle].first <= key.day { low = middle } else { high = middle - 1 }
      }
      guard key.day <= periods[low].last else { continue }
      periods[low].counts.addCounts(counts)
      if !counts.conversionHours.isEmpty { conversions[low].append(counts.conversionHours) }
    }
    var total = CohortCounts()
    for index in periods.indices {
      periods[index].counts.conversionHours = ConversionHours.sum(conversions[index])
      total.addCounts(periods[index].counts)
    }
    total.conversionHours = ConversionHours.sum(periods.map(\.counts.conversionHours))
    return (periods, total)
  }
}
