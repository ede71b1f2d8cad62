import FoundationEssentials
import Synchronization

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
    zeroPadded(value, width: 16, radix: 16)
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

/// The default generator: time-ordered ids with random low bits. The high 42 bits are the
/// milliseconds since 1970 of the clock's time (enough until the year 2109), the low 22 bits
/// random; an id is never below the one handed out before it (a clock step back, or more ids
/// in one millisecond, continue from the last one by a random step of 1 to 2^20). So ids
/// handed out one after another are ascending, and a store inserts them at the end of its
/// trials B-tree rather than all over it, while the low bits stay unguessable. Zero is never
/// handed out. The store still checks each id is unused (`TrialBook.startTrial`).
/// Safe to share between threads.
public final class RandomTrialIDGenerator: TrialIDGenerator, Sendable {
  /// Bits below the time.
  public static let randomBits = 22
  private let clock: any WallClock
  /// The id handed out last.
  private let last = Mutex<UInt64>(0)

  public init(clock: any WallClock = SystemWallClock()) {
    self.clock = clock
  }

  public func nextID() -> TrialID {
    let now = clock.now()
    return last.withLock { last in
      var generator = SystemRandomNumberGenerator()
      last = Self.next(after: last, at: now, using: &generator)
      return TrialID(last)
    }
  }

  /// The id after `last` at `now`: the time's id when above `last`, else `last` plus a random
  /// step (a uniformly random id, should that overflow).
  static func next(after last: UInt64, at now: Date, using generator: inout some RandomNumberGenerator)
    -> UInt64
  {
    let millis = now.timeIntervalSince1970 * 1_000
    let time: UInt64 = millis > 0 && millis < 0x3FF_FFFF_FFFF ? UInt64(millis) : 0
    let random = generator.next() & (1 << UInt64(randomBits) - 1)
    let candidate = time << UInt64(randomBits) | random
    if candidate > last { return candidate }
    let (stepped, overflow) = last.addingReportingOverflow(1 + random & 0xF_FFFF)
    if !overflow { return stepped }
    while true {
      let value = generator.next()
      if value != 0 { return value }
    }
  }
}
