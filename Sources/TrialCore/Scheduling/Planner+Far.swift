import FoundationEssentials

/// Far trials: those whose next event falls due after the horizon, held by id and due time alone
/// (`FarTrials`) until the horizon reaches them.
///
/// The horizon stands up to twice the lookahead ahead of now. When the earliest far trial comes
/// within the lookahead (`nextDeadline` is then), the engine moves the horizon to twice the
/// lookahead ahead of now again, reads the far trials it passes back from the store and restores
/// them (`farTrialsToHold`, `moveHorizon(at:lettingGo:)`, then `restore`): their events are held in full before
/// they fall due, however the wall clock moves, since `takeDue` is called after the same steps.
/// A trial whose next event, after one is taken, falls due beyond the horizon goes far again.
extension Planner {
  /// Holds far every trial whose next event falls due more than twice `lookahead` after `now`.
  /// For an empty planner, before a store is read into it.
  public mutating func holdFar(lookahead: Duration, now: Date) {
    precondition(trialCount == 0, "far trials are chosen before any trial is planned")
    precondition(lookahead > .zero, "a lookahead of \(lookahead)")
    self.lookahead = lookahead.timeInterval
    horizon = now.timeIntervalSinceReferenceDate + 2 * self.lookahead
  }

  /// Whether a trial whose next event falls due at `due` is held far: in a second after the
  /// horizon (`FarTrials.second(of:)`, so that a far trial is never due by the horizon) and,
  /// when `now` is known, after twice the lookahead from it.
  func isFar(_ due: Double, now: Double?) -> Bool {
    FarTrials.second(of: due) > horizon && now.map { due > $0 + 2 * lookahead } ?? true
  }

  /// Far trials held.
  public var farTrialCount: Int { far.count }

  /// The far trials `moveHorizon` lets go of at `now`, earliest first: to be read back from the
  /// store before it, and restored after it. None while the horizon is at least the lookahead
  /// ahead of `now`.
  public func farTrialsToHold(at now: Date) -> [TrialID] {
    let now = now.timeIntervalSinceReferenceDate
    guard lookahead > 0, horizon < now + lookahead else { return [] }
    return far.due(through: now + 2 * lookahead).map(TrialID.init)
  }

  /// Moves the horizon to twice the lookahead after `now`, when it is less than the lookahead
  /// ahead, and lets go of the far trials it passes: `ids`, as `farTrialsToHold(at: now)` gave
  /// them. Restored right after, they are held in full.
  public mutating func moveHorizon(at now: Date, lettingGo ids: [TrialID]) {
    let now = now.timeIntervalSinceReferenceDate
    guard lookahead > 0, horizon < now + lookahead else { return }
    horizon = now + 2 * lookahead
    pendingEventCount -= far.remove(ids.lazy.map(\.rawValue))
    precondition(far.earliest.map { $0.due > horizon } ?? true, "a far trial left at or before the horizon")
  }

  /// The far trial whose event is the earliest pending one, when `nextEvent` is nil for that
  /// reason: the event is read from its trial (`farEvent(of:)`).
  public var nextFarTrial: TrialID? {
    guard let earliest = far.earliest, nextEvent == nil else { return nil }
    return TrialID(earliest.trial)
  }

  /// Changes whenever `nextFarTrial` may name another trial or its trial was planned again:
  /// what was read for it stays right while this stays the same.
  public var nextFarTrialStamp: UInt64 { far.earliestChanges }

  /// The pending event of a far trial, read from the store: the next of its events, found from
  /// how many it has pending. Nil when the trial is not far, or is not as it was planned (a
  /// change in flight).
  public func farEvent(of trial: Trial) -> TrialEvent? {
    guard let held = far.due(of: trial.id.rawValue),
      trial.isRunning || (trial.state.isEnded && trial.hasFollowUps)
    else { return nil }
    let end = trial.period.endDate.timeIntervalSinceReferenceDate
    let seconds = Planner.eventSeconds(trial.reminders, grace: trial.expiryGrace, followUps: trial.followUps)
    let index = seconds.count - held.events
    guard seconds.indices.contains(index) else { return nil }
    let due = end - seconds[index]
    guard FarTrials.second(of: due) == held.second else { return nil }
    return TrialEvent(
      id: EventID(trialID: trial.id, revision: trial.revision, kind: trial.event(at: index).kind),
      due: Date(timeIntervalSinceReferenceDate: due))
  }

  /// Whether some far trial's next event falls due at or before `date` (what `simulate` leaves
  /// out).
  public func holdsFarTrials(dueThrough date: Date) -> Bool {
    far.earliest.map { $0.due <= date.timeIntervalSinceReferenceDate } ?? false
  }
}
