import Foundation
import Synchronization
import TrialCore

/// A clock that always reads the same instant.
public struct StaticWallClock: WallClock {
  public let date: Date

  public init(_ date: Date) {
    self.date = date
  }

  public func now() -> Date { date }
}

/// A clock that moves only when told to.
public final class ManualWallClock: WallClock {
  private let current: Mutex<Date>

  public init(_ date: Date) {
    current = Mutex(date)
  }

  public func now() -> Date {
    current.withLock { $0 }
  }

  public func set(_ date: Date) {
    current.withLock { $0 = date }
  }

  public func advance(by interval: TimeInterval) {
    current.withLock { $0 = $0.addingTimeInterval(interval) }
  }
}

/// Hands out chosen ids in order, then counts up from a fallback start (so a test that
/// needs more ids than it chose still gets distinct ones); `handedOut` records every id.
public final class SequenceTrialIDGenerator: TrialIDGenerator {
  private var ids: [TrialID]
  private var fallback: UInt64

  /// After the chosen ids run out, counts up from `fallbackStart`.
  public init(_ ids: [UInt64], fallbackStart: UInt64 = 0x1000) {
    self.ids = ids.map(TrialID.init).reversed()
    self.fallback = fallbackStart
  }

  public private(set) var handedOut: [TrialID] = []

  public func nextID() -> TrialID {
    let id: TrialID
    if let next = ids.popLast() {
      id = next
    } else {
      fallback += 1
      id = TrialID(fallback)
    }
    handedOut.append(id)
    return id
  }
}
