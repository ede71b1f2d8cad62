import FoundationEssentials

/// The span of a trial: from its start to the moment it expires.
public struct TrialPeriod: Hashable, Sendable {
  public var startDate: Date
  public var endDate: Date

  public init(startDate: Date, endDate: Date) {
    self.startDate = startDate
    self.endDate = endDate
  }

  /// A period starting now and lasting `numberOfDays`.
  public init(numberOfDays: Days = .defaultTrialLength, clock: any WallClock) {
    let start = clock.now()
    self.init(startDate: start, endDate: start.addingTimeInterval(numberOfDays.timeInterval))
  }

  /// Expired at and after the end date.
  public func isExpired(clock: any WallClock) -> Bool {
    clock.now() >= endDate
  }

  /// Signed: negative once the period has ended.
  public func daysLeft(clock: any WallClock) -> Days {
    Days(timeInterval: endDate.timeIntervalSince(clock.now()))
  }

  public var length: Days {
    Days(timeInterval: endDate.timeIntervalSince(startDate))
  }
}
