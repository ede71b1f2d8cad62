import FoundationEssentials

/// A duration measured in days: a trial's length and the days left of it. Other spans
/// (reminder offsets, lateness, timeouts) are `Duration`s; none is ever a bare number.
public struct Days: Hashable, Comparable, Sendable, CustomStringConvertible {
  public static let secondsPerDay: TimeInterval = 86_400

  /// The default length of a trial.
  public static let defaultTrialLength = Self(5)

  public var amount: Double

  public init(_ amount: Double) {
    self.amount = amount
  }

  public init(amount: Double) {
    self.amount = amount
  }

  public init(timeInterval: TimeInterval) {
    self.amount = timeInterval / Self.secondsPerDay
  }

  /// The days of `duration`, as a parsed `DefaultLength=` or `duration` becomes a length.
  public init(_ duration: Duration) {
    self.init(timeInterval: duration.timeInterval)
  }

  public var timeInterval: TimeInterval {
    amount * Self.secondsPerDay
  }

  /// The same span as a `Duration`, to the microsecond.
  public var duration: Duration {
    Duration(timeInterval: timeInterval)
  }

  /// The amount a person reads: rounded up, so 2.1 days left is shown as 3.
  public var userFacingAmount: Int {
    Int(amount.rounded(.up))
  }

  /// True once the amount is negative: the moment it measures lies behind us.
  public var isPast: Bool {
    amount < 0
  }

  public static func < (lhs: Self, rhs: Self) -> Bool {
    lhs.amount < rhs.amount
  }

  /// systemd's span form (`1d 12h`, see `TimeSpan.format(_:)`).
  public var description: String {
    amount.isFinite ? TimeSpan.format(duration) : "\(amount) days"
  }
}
