import FoundationEssentials

/// When a failed event is tried again: Standard Webhooks 1.0's example schedule by default, each
/// step counted from the failure before it (the first attempt is at once). The last step
/// repeats: an event is never given up, its endpoint is disabled instead (`disableAfter`), and
/// resumes where it stopped once enabled again.
public struct WebhookRetrySchedule: Hashable, Sendable {
  /// Immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
  public static let standard = WebhookRetrySchedule(
    unchecked: [
      .zero, .seconds(5), .minutes(5), .minutes(30), .hours(2), .hours(5), .hours(10), .hours(14),
      .hours(20), .hours(24),
    ])
  /// How much later than its step a server's `Retry-After` may put the next attempt.
  public static let retryAfterAllowance = Duration.hours(2)

  /// The waits before each attempt: the first before the first attempt, then each after a failure.
  public let steps: [Duration]

  /// A schedule of `steps`: at least one, none negative, the first usually zero.
  public init(_ steps: [Duration]) throws(WebhookScheduleError) {
    guard !steps.isEmpty else { throw .empty }
    if let negative = steps.first(where: { $0 < .zero }) { throw .negative(negative) }
    self.steps = steps
  }

  private init(unchecked steps: [Duration]) {
    self.steps = steps
  }

  /// The wait before attempt `number` (1 is the first), after the failure of the one before.
  public func wait(beforeAttempt number: Int) -> Duration {
    steps[min(max(number, 1), steps.count) - 1]
  }

  /// When attempt `number` comes after the one before failed at `failedAt`; a server's
  /// `Retry-After` (`asked`) wins over the step, though never by more than
  /// `retryAfterAllowance` past it.
  public func attempt(_ number: Int, after failedAt: Date, asked: Duration? = nil) -> Date {
    let step = wait(beforeAttempt: number)
    guard let asked else { return failedAt.adding(step) }
    return failedAt.adding(min(max(asked, .zero), step + Self.retryAfterAllowance))
  }
}

public enum WebhookScheduleError: Error, Hashable, Sendable, CustomStringConvertible {
  case empty
  case negative(Duration)

  public var description: String {
    switch self {
    case .empty: "a retry schedule has at least one step"
    case .negative(let step): "a retry schedule's step is not negative: \(TimeSpan.format(step))"
    }
  }
}

/// What one attempt came to, as the sender saw it: an HTTP status (with `Retry-After` read
/// into a wait), or no answer at all (no connection, a timeout, TLS refused).
public enum WebhookAttempt: Hashable, Sendable {
  case answered(status: Int, retryAfter: Duration?)
  case failed(String)

  /// Only a 2xx delivers; a redirect is a failure as any other status is.
  public var delivered: Bool {
    if case .answered(let status, _) = self { (200...299).contains(status) } else { false }
  }

  /// 410 Gone: the receiver wants no more, and the endpoint is disabled at once.
  public var gone: Bool {
    if case .answered(410, _) = self { true } else { false }
  }

  /// The server asked to be left alone for a while: its `Retry-After` on a status that throttles
  /// (429 Too Many Requests, 502, 503, 504).
  public var askedWait: Duration? {
    guard case .answered(let status, let retryAfter) = self, [429, 502, 503, 504].contains(status) else {
      return nil
    }
    return retryAfter
  }

  /// The attempt in a few words, for the endpoint's record and the journal.
  public var summary: String {
    switch self {
    case .answered(let status, _): "HTTP \(status)"
    case .failed(let reason): reason
    }
  }
}

/// An endpoint's health: its failures since it last delivered, and whether it is disabled and
/// why. Every attempt's outcome moves it (`record`); durable beside the events it holds.
public struct WebhookEndpointHealth: Hashable, Sendable {
  /// Why an endpoint was disabled.
  public enum Disabled: Hashable, Sendable {
    /// The receiver answered 410 Gone.
    case gone(at: Date)
    /// No attempt delivered from `since` to `at`, longer than `DisableAfter=`.
    case failing(since: Date, at: Date)

    public var description: String {
      switch self {
      case .gone(let at): "the receiver answered 410 Gone at \(RFC3339.format(at))"
      case .failing(let since, let at):
        "no delivery since \(RFC3339.format(since)), \(TimeSpan.format(at.duration(since: since), style: .brief)) "
          + "of failures"
      }
    }
  }

  /// Attempts that failed since the last that delivered.
  public var consecutiveFailures = 0
  /// When the first of those failed.
  public var failingSince: Date?
  /// The last attempt's outcome.
  public var lastAttempt: WebhookAttempt?
  /// When it was made.
  public var lastAttemptAt: Date?
  public var disabled: Disabled?

  public init() {}

  /// Takes in an attempt made at `at`: a delivery clears the failures; a 410 disables at once;
  /// a failure disables once the endpoint has failed for `disableAfter`. True when this attempt
  /// disabled the endpoint.
  @discardableResult
  public mutating func record(_ attempt: WebhookAttempt, at: Date, disableAfter: Duration) -> Bool {
    (lastAttempt, lastAttemptAt) = (attempt, at)
    if attempt.delivered {
      consecutiveFailures = 0
      failingSince = nil
      return false
    }
    consecutiveFailures += 1
    let since = failingSince ?? at
    failingSince = since
    guard disabled == nil else { return false }
    if attempt.gone {
      disabled = .gone(at: at)
    } else if at.duration(since: since) >= disableAfter {
      disabled = .failing(since: since, at: at)
    }
    return disabled != nil
  }

  /// Enabled again (`trialwatchctl webhooks enable`): its events go on from where they stopped.
  public mutating func enable() {
    disabled = nil
    consecutiveFailures = 0
    failingSince = nil
  }
}
