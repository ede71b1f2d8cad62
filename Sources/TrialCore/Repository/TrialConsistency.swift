import FoundationEssentials

/// What must hold between a trial and its ledger entries, whichever store keeps them. The
/// store's verification (`trialwatchd --verify-store`) runs it for every trial it reads.
///
/// The pending events of an active trial are not stored: a restore plans every event of the
/// current revision from the first one not in the ledger on. So the ledger must hold a prefix
/// of the current revision's events, in due order, and never the expiry of an active trial
/// (else the trial would never expire). A trial in grace has its `grace-started` in the ledger,
/// an active one not. An expired trial has its expiry fired in the ledger; a converted or
/// cancelled one does not.
public enum TrialConsistency {
  /// One thing wrong: the event concerned, if any, and what, in words.
  public struct Problem: Hashable, Sendable, CustomStringConvertible {
    public var event: EventID?
    public var message: String

    public init(event: EventID? = nil, _ message: String) {
      self.event = event
      self.message = message
    }

    public var description: String { message }
  }

  /// The problems of `trial` with `ledger`, its ledger entries over all revisions.
  public static func problems(of trial: Trial, ledger: [LedgerEntry]) -> [Problem] {
    var problems: [Problem] = []
    if let problem = Trial.validateSubject(trial.subject) {
      problems.append(Problem("invalid subject: \(problem)"))
    }
    if trial.period.endDate <= trial.period.startDate {
      problems.append(
        Problem(
          "it ends (\(RFC3339.format(trial.period.endDate))) before it starts "
            + "(\(RFC3339.format(trial.period.startDate)))"))
    }
    if trial.isOpen, let endedAt = trial.endedAt {
      problems.append(
        Problem("it is \(trial.state.rawValue) but has an end time (\(RFC3339.format(endedAt)))"))
    } else if !trial.isOpen, trial.endedAt == nil {
      problems.append(Problem("it is \(trial.state.rawValue) but has no end time"))
    }
    if trial.grace < .zero || trial.grace > Trial.maximumGrace {
      problems.append(Problem("its grace \(TimeSpan.format(trial.grace)) is out of range"))
    } else if trial.state == .grace, !trial.entersGrace {
      problems.append(Problem("it is in grace but has none"))
    }
    if trial.state == .paused, trial.pause == nil {
      problems.append(Problem("it is paused but has no pause recorded"))
    } else if trial.state == .active, let pause = trial.pause {
      problems.append(Problem("it is active but has a pause recorded (since \(RFC3339.format(pause.since)))"))
    }

    let events = trial.events
    var taken = [LedgerEntry?](repeating: nil, count: events.count)
    for entry in ledger {
      guard entry.event.trialID == trial.id else {
        problems.append(Problem(event: entry.id, "the ledger entry \(entry.id) is not of trial \(trial.id)"))
        continue
      }
      if entry.event.revision > trial.revision {
        problems.append(
          Problem(
            event: entry.id,
            "the ledger entry \(entry.id) is of revision \(entry.event.revision), after the trial's "
              + "current revision \(trial.revision)"))
      }
      guard entry.event.revision == trial.revision else { continue }
      if entry.event.kind.isPauseOrResume {
        problems += pauseProblems(of: trial, entry)
        continue
      }
      // A milestone is due at the start plus its span; one a pause or an end cut is no longer
      // the trial's (`Trial.cutting(_:)`).
      if let span = entry.event.kind.milestoneSpan {
        if entry.event.due != trial.period.startDate.adding(span) {
          problems.append(
            Problem(
              event: entry.id, "the ledger entry \(entry.id) is not due at the trial's start plus its span"))
        }
        continue
      }
      guard let index = events.firstIndex(where: { $0.id == entry.id }) else {
        problems.append(
          Problem(
            event: entry.id,
            "the ledger entry \(entry.id) is not an event of the trial's current revision "
              + "(reminders: \(trial.reminders))"))
        continue
      }
      if entry.event.due != events[index].due {
        problems.append(
          Problem(
            event: entry.id,
            "the ledger entry \(entry.id) is due at \(RFC3339.format(entry.event.due)), but the trial's "
              + "event is due at \(RFC3339.format(events[index].due))"))
      }
      taken[index] = entry
    }

    // Follow-ups come after the expiry, the last of the trial's own events.
    let expiry = events[trial.expiryIndex]
    let expiryEntry = taken[trial.expiryIndex]
    let graceIndex = trial.entersGrace ? trial.expiryIndex - 1 : nil
    let graceEntry = graceIndex.flatMap { taken[$0] }
    if trial.state == .grace, graceEntry?.fired != true {
      problems.append(
        Problem(
          event: graceIndex.map { events[$0].id },
          "the trial is in grace, but the start of its grace is not fired in the ledger"))
    } else if trial.state == .active || trial.state == .paused, let graceEntry {
      problems.append(
        Problem(
          event: graceEntry.id,
          "the trial is \(trial.state.rawValue), but the start of its grace \(graceEntry.id) is in the ledger"
        ))
    }
    switch trial.state {
    case .active, .paused, .grace:
      if expiryEntry != nil {
        problems.append(
          Problem(
            event: expiry.id,
            "the trial is \(trial.state.rawValue), but its expiry \(expiry.id) is in the ledger: "
              + "it would never expire"))
      } else if let missing = taken.firstIndex(where: { $0 == nil }),
        let later = taken.indices.last(where: { taken[$0] != nil }), later > missing
      {
        problems.append(
          Problem(
            event: events[later].id,
            "\(events[later].id) is in the ledger but the earlier \(events[missing].id) is not: "
              + "a restore plans from \(events[missing].id) on"))
      }
    // Ended at its end: expired, or cancelled at its end (`Trial.stateAtEnd`).
    case .expired, .cancelled:
      guard trial.state == .expired || trial.cancelMark != nil else { fallthrough }
      let state = trial.state.rawValue
      if let expiryEntry, expiryEntry.fired {
        break
      } else if expiryEntry != nil {
        problems.append(
          Problem(event: expiry.id, "the trial is \(state), but its expiry \(expiry.id) was skipped"))
      } else {
        problems.append(
          Problem(event: expiry.id, "the trial is \(state), but its expiry \(expiry.id) is not in the ledger")
        )
      }
    case .converted:
      if expiryEntry != nil {
        problems.append(
          Problem(
            event: expiry.id,
            "the trial is \(trial.state.rawValue), but its expiry \(expiry.id) is in the ledger"))
      }
    }
    return problems
  }

  /// The problems of a pause or resume in the ledger, of the trial's current revision: a resume
  /// starts the next revision, and a pause is of a trial paused (or ended while paused) then,
  /// with the time left it froze.
  private static func pauseProblems(of trial: Trial, _ entry: LedgerEntry) -> [Problem] {
    guard case .paused(let left) = entry.event.kind else {
      return [
        Problem(
          event: entry.id,
          "the ledger entry \(entry.id) resumes the trial's current revision \(trial.revision), "
            + "but a resume starts the next one")
      ]
    }
    guard let pause = trial.pause else {
      return [
        Problem(
          event: entry.id, "the ledger entry \(entry.id) pauses the trial, but it is \(trial.state.rawValue)")
      ]
    }
    guard entry.event.due == pause.since, trial.timeLeft == left else {
      return [
        Problem(
          event: entry.id,
          "the ledger entry \(entry.id) differs from the trial's pause (since "
            + "\(RFC3339.format(pause.since)), \(TimeSpan.format(trial.timeLeft ?? .zero)) left)")
      ]
    }
    return []
  }

  /// The problems of a logged event with the ledger's entry of the same event (nil when the
  /// ledger has none): every event logged was taken, so the ledger holds it, taken the same
  /// way at the same time.
  public static func problems(ofLogged event: LoggedEvent, ledger entry: LedgerEntry?) -> [Problem] {
    guard let entry else {
      return [Problem(event: event.id, "the logged event \(event.id) is not in the ledger")]
    }
    var problems: [Problem] = []
    if entry.outcome != event.entry.outcome {
      problems.append(
        Problem(
          event: event.id,
          "the logged event \(event.id) is \(describe(event.entry.outcome)), but its ledger entry is "
            + describe(entry.outcome)))
    }
    var differences: [String] = []
    if entry.event.due != event.event.due { differences.append("due") }
    if entry.takenAt != event.entry.takenAt { differences.append("taken at") }
    if entry.isLate != event.entry.isLate { differences.append("late") }
    if !differences.isEmpty {
      problems.append(
        Problem(
          event: event.id,
          "the logged event \(event.id) differs from its ledger entry in: "
            + differences.joined(separator: ", ")))
    }
    return problems
  }

  private static func describe(_ outcome: LedgerEntry.Outcome) -> String {
    switch outcome {
    case .fired: "fired"
    case .skipped(let reason): "skipped (\(reason))"
    }
  }
}
