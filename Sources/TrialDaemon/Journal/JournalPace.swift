import FoundationEssentials
import TrialConfiguration
import TrialCore
import TrialEngine

/// Keeps event entries under journald's rate limit: at most `burst` entries in any window of
/// `interval` of monotonic time, a sliding window.
///
/// journald counts a unit's entries in windows that begin with the first entry after the
/// previous window ended, so windows aligned on the daemon's side are not enough: a window of
/// journald's may straddle two of them. Here every window of the interval's length, wherever it
/// begins, holds at most `burst` entries, so journald's does too. Pure: times come from the
/// caller (the engine's `WakeScheduler.monotonicNow`), to the microsecond, as journald counts.
public struct JournalPace: Sendable {
  /// At most `burst` entries in any window of `interval` (`[Journal]` of the configuration).
  public typealias Limit = JournalRateLimit

  /// Nil: entries go as they come.
  public private(set) var limit: Limit?
  /// The times of the last `burst` entries (microseconds), oldest at `head` once full.
  private var times: [Int64] = []
  private var head = 0

  public init(_ limit: Limit?) {
    self.limit = limit
  }

  /// Nil when an entry may go at `now`; otherwise the monotonic time from which it may: just
  /// after the window that ends with the `burst`-th most recent entry.
  public func nextSlot(at now: TimeInterval) -> TimeInterval? {
    guard let limit, times.count == limit.burst else { return nil }
    let opens = times[head] + limit.interval.roundedMicroseconds + 1
    let current = Self.microseconds(now)
    return current >= opens ? nil : TimeInterval(opens) / 1_000_000
  }

  /// Counts an entry sent at `now`.
  public mutating func record(at now: TimeInterval) {
    guard let limit else { return }
    let time = Self.microseconds(now)
    if times.count < limit.burst {
      times.append(time)
    } else {
      times[head] = time
      head = (head + 1) % times.count
    }
  }

  /// Counts a whole burst as sent at `now`: for a start that cannot know what the run before
  /// it sent (it stopped with events undelivered, perhaps in the middle of a burst).
  public mutating func fill(at now: TimeInterval) {
    guard let limit else { return }
    times = Array(repeating: Self.microseconds(now), count: limit.burst)
    head = 0
  }

  /// Applies a new limit from now on, keeping what was sent: with a lower burst the most recent
  /// entries count; with a higher one, entries older than the ones kept are taken to have been
  /// sent with the oldest kept (they were sent no later). Nil turns pacing off and forgets.
  public mutating func reconfigure(_ newLimit: Limit?) {
    let full = limit.map { times.count == $0.burst } ?? false
    var ordered = Array(times[head...] + times[..<head])
    limit = newLimit
    head = 0
    guard let newLimit else {
      times = []
      return
    }
    if ordered.count > newLimit.burst {
      ordered.removeFirst(ordered.count - newLimit.burst)
    } else if full, let oldest = ordered.first {
      ordered.insert(contentsOf: repeatElement(oldest, count: newLimit.burst - ordered.count), at: 0)
    }
    times = ordered
  }

  /// How many entries the window ending at `now` holds (for tests and the status).
  public func count(at now: TimeInterval) -> Int {
    guard let limit else { return 0 }
    let start = Self.microseconds(now) - limit.interval.roundedMicroseconds
    return times.lazy.filter { $0 >= start }.count
  }

  private static func microseconds(_ seconds: TimeInterval) -> Int64 {
    Int64((seconds * 1_000_000).rounded())
  }
}
