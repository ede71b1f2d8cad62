import FoundationEssentials

/// The trials started with one plan (`""`: none) on one UTC day: a cohort, as the stores keep
/// its figures.
public struct CohortKey: Hashable, Comparable, Sendable {
  /// The number of days since 1970-01-01, UTC.
  public var day: Int32
  public var plan: String

  public init(day: Int32, plan: String) {
    self.day = day
    self.plan = plan
  }

  public static func < (lhs: CohortKey, rhs: CohortKey) -> Bool {
    lhs.day != rhs.day ? lhs.day < rhs.day : Array(lhs.plan.utf8).lexicographicallyPrecedes(rhs.plan.utf8)
  }

  /// The UTC day of `date`, as days since 1970-01-01; a date beyond the days an `Int32` counts
  /// (a damaged record's) is held at the nearest end.
  public static func day(of date: Date) -> Int32 {
    let days = (date.timeIntervalSince1970 / 86_400).rounded(.down)
    return Int32(min(max(days, Double(Int32.min)), Double(Int32.max)))
  }
}

/// What a cohort's trials became, kept as they change: how many started, converted, were
/// cancelled, expired, are paused now, and how long each conversion took from its trial's start,
/// in whole hours (rounded down). Started less the others is still active (or in grace).
public struct CohortCounts: Hashable, Sendable {
  public var started: Int64 = 0
  public var converted: Int64 = 0
  public var cancelled: Int64 = 0
  public var expired: Int64 = 0
  public var paused: Int64 = 0
  /// Conversions by the whole hours from their trial's start.
  public var conversionHours = ConversionHours()

  public init(
    started: Int64 = 0, converted: Int64 = 0, cancelled: Int64 = 0, expired: Int64 = 0, paused: Int64 = 0,
    conversionHours: ConversionHours = ConversionHours()
  ) {
    self.started = started
    self.converted = converted
    self.cancelled = cancelled
    self.expired = expired
    self.paused = paused
    self.conversionHours = conversionHours
  }

  /// Started, and neither ended nor paused now: active or in grace.
  public var active: Int64 { started - converted - cancelled - expired - paused }
  /// Converted, cancelled or expired.
  public var ended: Int64 { converted + cancelled + expired }
  public var isZero: Bool {
    started == 0 && converted == 0 && cancelled == 0 && expired == 0 && paused == 0 && conversionHours.isEmpty
  }

  public mutating func add(_ other: CohortCounts, times sign: Int64 = 1) {
    addCounts(other, times: sign)
    conversionHours.add(other.conversionHours, times: sign)
  }

  /// Adds the counts of `other` times `sign`, leaving the conversions' hours as they are.
  public mutating func addCounts(_ other: CohortCounts, times sign: Int64 = 1) {
    started += sign * other.started
    converted += sign * other.converted
    cancelled += sign * other.cancelled
    expired += sign * other.expired
    paused += sign * other.paused
  }

  /// Converted ÷ ended (Stripe's trial conversion rate); nil while none has ended.
  public var conversionRate: Double? {
    ended == 0 ? nil : Double(converted) / Double(ended)
  }

  /// The lower median of the conversions' times (the ⌈n/2⌉-th shortest), in whole hours; nil
  /// without a conversion.
  public var medianHoursToConversion: UInt32? {
    let total = conversionHours.total
    guard total > 0 else { return nil }
    return conversionHours.hours(ofRank: (total + 1) / 2)
  }
}

/// The conversion figures: each trial counts in the cohort of its plan and start day, by its
/// state. Kept as aggregates, changed in the transaction of every change to a trial's state
/// (`TrialBook.write(_:was:in:)`), so that removing trials (retention) loses none and a
/// question over a year reads a few hundred records.
public enum TrialStats {
  /// The cohort of `trial`.
  public static func cohort(of trial: Trial) -> CohortKey {
    CohortKey(day: CohortKey.day(of: trial.period.startDate), plan: trial.attributes.plan ?? "")
  }

  /// What one trial counts for in its cohort.
  public static func contribution(of trial: Trial) -> CohortCounts {
    var counts = CohortCounts(started: 1)
    switch trial.state {
    // A trial in grace is open: it counts as the active ones do, until it converts or expires.
    case .active, .grace: break
    case .paused: counts.paused = 1
    case .expired: counts.expired = 1
    case .cancelled: counts.cancelled = 1
    case .converted:
      counts.converted = 1
      let end = trial.endedAt ?? trial.period.startDate
      let hours = max(0, end.timeIntervalSince(trial.period.startDate) / 3_600).rounded(.down)
      counts.conversionHours.add(hours: UInt32(min(hours, Double(UInt32.max))), 1)
    }
    return counts
  }

  /// The change to its cohort's figures of `trial` written over `before` (nil: a new trial);
  /// nil when nothing changes.
  public static func change(from before: Trial?, to trial: Trial) -> (CohortKey, CohortCounts)? {
    var delta = contribution(of: trial)
    if let before {
      guard before.state != trial.state || before.endedAt != trial.endedAt else { return nil }
      delta.add(contribution(of: before), times: -1)
    }
    return delta.isZero ? nil : (cohort(of: trial), delta)
  }
}
