/// A trial's identity: 64 bits, written as 16 lower-case hex digits.
public struct TrialID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var rawValue: UInt64

  public init(_ rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// Parses the 16-hex-digit form (shorter forms are accepted and zero-extended).
  public init?(_ text: some StringProtocol) {
    guard let value = SixteenHexDigits.value(text, digits: 1...16) else { return nil }
    self.rawValue = value
  }

  public var description: String { SixteenHexDigits.text(rawValue) }

  public static func < (lhs: TrialID, rhs: TrialID) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}

/// The written form of trial ids and event cursors: 16 hexadecimal digits.
enum SixteenHexDigits {
  /// `value` as 16 lower-case digits, zero-padded.
  static func text(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// The value of `text` when it is as many ASCII hexadecimal digits (either case) as
  /// `digits` allows.
  static func value(_ text: some StringProtocol, digits: ClosedRange<Int>) -> UInt64? {
    guard digits.contains(text.utf8.count), text.utf8.allSatisfy(isDigit) else { return nil }
    return UInt64(text, radix: 16)
  }

  private static func isDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
      || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
      || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
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
