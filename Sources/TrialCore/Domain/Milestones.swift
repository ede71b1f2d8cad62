import FoundationEssentials

/// When a trial's milestones fall due, as spans after its start (`Milestones=`): "still active a
/// day after starting". A trial takes its plan's at its start; a pause or an end cuts the ones
/// that have not come (`Trial.cutting(_:)`).
public struct MilestoneSchedule: Hashable, Sendable, CustomStringConvertible {
  public static let none = MilestoneSchedule(uncheckedSpans: [])
  /// The most milestones one trial may carry.
  public static let maximumCount = EventSpans.maximumCount
  /// The longest span: 3,650 days.
  public static let maximumSpan = EventSpans.maximumSpan

  public struct InvalidSpans: Error, Equatable, CustomStringConvertible {
    public var description: String
  }

  /// Spans after the start, smallest first (so in the order they fall due), without duplicates.
  public let spans: [Duration]

  /// Spans are rounded to whole milliseconds; each must be at least a millisecond and at most
  /// `maximumSpan` (`EventSpans`).
  public init(_ spans: [Duration]) throws(InvalidSpans) {
    do {
      self.spans = try EventSpans.checked(spans, item: "milestone", after: "the start")
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
  /// The milestones of the current revision, in the order they fall due: each at the start plus
  /// its span, whatever the end. Not among `events`: the planner holds them apart
  /// (`PlannerMilestones`).
  public var milestoneEvents: [TrialEvent] {
    milestones.spans.map {
      TrialEvent(
        id: EventID(trialID: id, revision: revision, kind: .milestone(after: $0)),
        due: period.startDate.adding($0))
    }
  }

  /// The milestones the planner holds for the trial: those of an active trial due after `now`
  /// (when given) and before its end.
  func plannedMilestones(after now: Date?) -> [TrialEvent] {
    guard state == .active, !milestones.isEmpty else { return [] }
    return milestoneEvents.filter { event in
      event.due < period.endDate && (now.map { event.due > $0 } ?? true)
    }
  }

  /// The trial without the milestones `skipped` (by a pause or an end: those that had not
  /// come), so that no later revision plans them again: it keeps those that came.
  public func cutting(_ skipped: [DueEvent]) -> Trial {
    guard !milestones.isEmpty, !skipped.isEmpty else { return self }
    var cut = self
    let gone = Set(skipped.compactMap(\.event.kind.milestoneSpan))
    cut.milestones = (try? MilestoneSchedule(milestones.spans.filter { !gone.contains($0) })) ?? .none
    return cut
  }
}
