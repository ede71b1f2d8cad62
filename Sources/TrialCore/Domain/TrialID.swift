/// A trial's identity: 64 bits, written as 16 lower-case hex digits.
public struct TrialID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var rawValue: UInt64

  public init(_ rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// Parses the 16-hex-digit form (shorter forms are accepted and zero-extended).
  public init?(_ text: some StringProtocol) {
    guard (1...16).contains(text.count), let value = UInt64(text, radix: 16),
      text.allSatisfy({ $0.isHexDigit })
    else { return nil }
    self.rawValue = value
  }

  public var description: String {
    let hex = String(rawValue, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  public static func < (lhs: TrialID, rhs: TrialID) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}

/// Where new trial ids come from. Injected, so that tests choose the ids.
public protocol TrialIDGenerator: AnyObject {
  func nextID() -> TrialID
}

/// The default generator: uniformly random 64-bit ids (zero is never handed out).
public final class RandomTrialIDGenerator: TrialIDGenerator {
  private var generator = SystemRandomNumberGenerator()

  public init() {}

  public func nextID() -> TrialID {
    while true {
      let value = generator.next()
      if value != 0 { return TrialID(value) }
    }
  }
}
