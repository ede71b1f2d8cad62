/// When a trial's follow-ups fall due, as spans after its expiry (`FollowUps=`): win-back
/// messages after a trial ran out. A trial takes its plan's at its start and keeps them.
public struct FollowUpSchedule: Hashable, Sendable, CustomStringConvertible {
  public static let none = FollowUpSchedule(uncheckedSpans: [])
  /// The most follow-ups one trial may carry.
  public static let maximumCount = EventSpans.maximumCount
  /// The longest span: 3,650 days.
  public static let maximumSpan = EventSpans.maximumSpan

  public struct InvalidSpans: Error, Equatable, CustomStringConvertible {
    public var description: String
  }

  /// Spans after the expiry, smallest first (so in the order they fall due), without duplicates.
  public let spans: [Duration]

  /// Spans are rounded to whole milliseconds; each must be at least a millisecond and at most
  /// `maximumSpan` (`EventSpans`).
  public init(_ spans: [Duration]) throws(InvalidSpans) {
    do {
      self.spans = try EventSpans.checked(spans, item: "follow-up", after: "the end")
    } catch {
      throw InvalidSpans(description: error.description)
    }
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
