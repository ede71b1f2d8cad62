import Foundation

/// A duration measured in days. Every duration in the domain is a `Days`, never a bare number.
public struct Days: Hashable, Comparable, Sendable, CustomStringConvertible {
  public static let secondsPerDay: TimeInterval = 86_400

  /// The default length of a trial.
  public static let defaultTrialLength = Days(5)

  public var amount: Double

  public init(_ amount: Double) {
    self.amount = amount
  }

  public init(amount: Double) {
    self.amount = amount
  }

  public init(timeInterval: TimeInterval) {
    self.amount = timeInterval / Days.secondsPerDay
  }

  public var timeInterval: TimeInterval {
    amount * Days.secondsPerDay
  }

  /// The amount a person reads: rounded up, so 2.1 days left is shown as 3.
  public var userFacingAmount: Int {
    Int(amount.rounded(.up))
  }

  /// True once the amount is negative: the moment it measures lies behind us.
  public var isPast: Bool {
    amount < 0
  }

  public static func < (lhs: Days, rhs: Days) -> Bool {
    lhs.amount < rhs.amount
  }

  public var description: String {
    TimeSpan.format(self)
  }
}
