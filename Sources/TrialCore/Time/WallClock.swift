import FoundationEssentials

/// Where the domain reads the time of day from. Named so as not to be confused with the
/// standard library's `Clock`, which measures instants rather than calendar dates.
public protocol WallClock: Sendable {
  func now() -> Date
}

/// The real clock: the one type in the project that reads the system time.
public struct SystemWallClock: WallClock {
  public init() {}

  public func now() -> Date {
    Date()
  }
}
