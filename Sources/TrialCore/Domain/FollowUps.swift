/// When a trial's follow-ups fall due, as spans after its expiry (`FollowUps=`): win-back
/// messages after a trial ran out. A trial takes its plan's at its start and keeps them.
public struct FollowUpSchedule: Hashable, Sendable, CustomStringConvertible {
  public static let none = FollowUpSchedule(uncheckedSpans: [])
  /// The most follow-ups one trial may carry.
  public static let maximumCount = 32
  /// The longest span after the expiry: 3,650 days.
  public static let maximumSpan = Duration.days(3650)

  public struct InvalidSpans: Error, Equatable, CustomStringConvertible {
    public var description: String
  }

  /// Spans after the expiry, smallest first (so in the order they fall due), without duplicates.
  public let spans: [Duration]

  /// Spans are rounded to whole milliseconds; each must be at least a millisecond and at most
  /// `maximumSpan`.
  public init(_ spans: [Duration]) throws(InvalidSpans) {
    var seen = Set<Duration>()
    var cleaned: [Duration] = []
    for span in spans {
      guard span >= .milliseconds(1) else {
        throw InvalidSpans(
          description: "follow-up \(TimeSpan.format(span)) must be a positive span after the end")
      }
      guard span <= Self.maximumSpan else {
        throw InvalidSpans(
          description:
            "follow-up \(TimeSpan.format(span)) is longer than \(TimeSpan.format(Self.maximumSpan))")
      }
      let rounded = Duration.milliseconds(span.roundedMilliseconds)
      if seen.insert(rounded).inserted { cleaned.append(rounded) }
    }
    guard cleaned.count <= Self.maximumCount else {
      throw InvalidSpans(
        description: "at most \(Self.maximumCount) follow-ups per trial, got \(cleaned.count)")
    }
    self.spans = cleaned.sorted()
  }

  private init(uncheckedSpans: [Duration]) {
    self.spans = uncheckedSpans
  }

  public var isEmpty: Bool { spans.isEmpty }

  public var description: String {
    spans.isEmpty ? "none" : spans.map(TimeSpan.format).joined(separator: ", ")
  }
}

extension Trial {
  /// How a follow-up of the trial due now is taken: it fires for a trial that ended by its
  /// expiry or was cancelled; it is called off for a converted trial
  /// (`called-off-by-conversion`) and when the subject started a later trial
  /// (`called-off-by-new-trial`, `latestTrial` being the subject's latest trial's id).
  public func followUpDisposition(latestTrial: TrialID?) -> DueEvent.Disposition {
    if state == .converted { return .skip(.calledOffByConversion) }
    if let latestTrial, latestTrial != id { return .skip(.calledOffByNewTrial) }
    return .fire
  }

  /// Whether the planner still holds events of the trial: it is running, paused with a resume,
  /// or ended with follow-ups.
  public var hasFollowUps: Bool { !followUps.isEmpty }
}
