/// Counts of observations in fixed buckets, with their sum: a distribution kept in a few
/// words, whatever the number of observations, and merged by adding. Each observation counts
/// in the first bucket whose upper bound holds it, or above the last bound.
public struct Histogram: Hashable, Sendable {
  /// The upper bounds of the buckets, ascending (seconds, for durations).
  public let bounds: [Double]
  /// Observations per bucket, not cumulative; one more than `bounds`: the last is above them.
  public private(set) var buckets: [Int64]
  public private(set) var sum: Double = 0
  public private(set) var count: Int64 = 0

  public init(bounds: [Double]) {
    precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bounds must ascend")
    self.bounds = bounds
    buckets = Array(repeating: 0, count: bounds.count + 1)
  }

  public mutating func record(_ value: Double) {
    var index = 0
    while index < bounds.count, value > bounds[index] { index += 1 }
    buckets[index] += 1
    sum += value
    count += 1
  }

  /// For each bound, the observations at or below it; then the count (the bound +Inf), as
  /// Prometheus's `le` buckets are.
  public var cumulative: [(bound: Double, count: Int64)] {
    var running: Int64 = 0
    var out: [(bound: Double, count: Int64)] = []
    out.reserveCapacity(buckets.count)
    for (index, bucket) in buckets.enumerated() {
      running += bucket
      out.append((index < bounds.count ? bounds[index] : .infinity, running))
    }
    return out
  }

  /// The bounds of the fire lateness (seconds): on time is within a few milliseconds; a busy
  /// machine makes a second; a suspend or a stop makes minutes to days.
  public static let latenessBounds: [Double] = [0.01, 1, 60, 3600, 86400]
  /// The bounds of a commit's duration (seconds): an fdatasync on a disk is milliseconds, one on
  /// a database across a network tens of them.
  public static let commitBounds: [Double] = [0.001, 0.01, 0.1]
}

/// What the engine logged since it started, by kind and by outcome, and how late its timer
/// fired events: counted as events are logged, never by reading them back. Counts sit in
/// arrays by position (`kinds`, `SkipReason.codes`): the tally costs an addition per event.
public struct EventTally: Hashable, Sendable {
  /// Every kind of event, in the order the metrics list them.
  public static let kinds = [
    "reminder", "expiry", "paused", "resumed", "grace-started", "follow-up",
    "milestone",
  ]

  private var firedByKind = [Int64](repeating: 0, count: kinds.count)
  private var skippedByReason = [Int64](repeating: 0, count: SkipReason.codes.count)
  /// Events fired later than the catch-up policy's late threshold after they fell due: after
  /// downtime, a suspend, a clock step.
  public private(set) var late: Int64 = 0
  /// How long after they fell due the timer fired events, in seconds.
  public private(set) var lateness = Histogram(bounds: Histogram.latenessBounds)

  public init() {}

  /// Fired events by kind name (`reminder`, `expiry`, `paused`, `resumed`, `grace-started`,
  /// `follow-up`, `milestone`),
  /// every kind.
  public var fired: [String: Int64] {
    Dictionary(uniqueKeysWithValues: zip(Self.kinds, firedByKind))
  }

  /// Skipped events by reason code (`already-due-at-start`, `beyond-grace`...), the reasons seen.
  public var skipped: [String: Int64] {
    Dictionary(uniqueKeysWithValues: zip(SkipReason.codes, skippedByReason).filter { $0.1 > 0 })
  }

  /// Counts events just logged.
  public mutating func logged(_ entries: some Sequence<LedgerEntry>) {
    for entry in entries {
      switch entry.outcome {
      case .fired:
        firedByKind[Self.index(of: entry.event.kind)] += 1
        if entry.isLate { late += 1 }
      case .skipped(let reason):
        skippedByReason[Self.index(of: reason)] += 1
      }
    }
  }

  /// Records the lateness of events the timer took (not those a caller's command made).
  public mutating func taken(_ entries: some Sequence<LedgerEntry>) {
    for entry in entries where entry.fired {
      lateness.record(Double(entry.lateness / .milliseconds(1)) / 1000)
    }
  }

  private static func index(of kind: EventKind) -> Int {
    switch kind {
    case .reminder: 0
    case .expiry: 1
    case .paused: 2
    case .resumed: 3
    case .graceStarted: 4
    case .followUp: 5
    case .milestone: 6
    }
  }

  /// The position of the reason's code in `SkipReason.codes`.
  private static func index(of reason: SkipReason) -> Int {
    switch reason {
    case .alreadyDueAtStart: 0
    case .alreadyDueAtExtension: 1
    case .alreadyDueAtResume: 2
    case .supersededByReminder: 3
    case .supersededByExpiry: 4
    case .beyondGrace: 5
    case .cancelAtEnd: 6
    case .calledOffByConversion: 7
    case .calledOffByNewTrial: 8
    case .trialEnded: 9
    case .paused: 10
    }
  }
}
