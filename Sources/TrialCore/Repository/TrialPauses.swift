import FoundationEssentials

/// Pausing and resuming trials, inside a transaction the caller provides.
///
/// A pause freezes the time left (from the pause to the end, to the millisecond) and stops
/// every event; the trial keeps its subject. A resume moves the end to the resume plus the time
/// left, starting a new revision: reminders of the new revision due at or before the resume
/// fell due before the pause (they fired then, or were passed over) and are recorded as
/// skipped, so none fires twice. Each pause and resume is an event of the trial (`paused`,
/// `resumed`), recorded exactly once in the ledger and the outbox, to be delivered as the
/// reminders are; a pause that runs out (`TrialPause.until`) brings the same resume event, so
/// that the caller and the limit cannot both resume it.
extension TrialBook {
  /// Pauses an active trial at `now`; with `maxPause`, it resumes by itself that long after.
  /// Returns the trial as paused and its `paused` event as logged.
  /// - Throws: `TrialError` when the trial is not active, or its end is not after `now`.
  public static func pauseTrial(
    in txn: any TrialWriteTransaction, _ id: TrialID, maxPause: Duration?, now: Date
  ) throws -> (trial: Trial, logged: [LoggedEvent]) {
    guard let before = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    guard before.isActive else { throw TrialError(.notActive(id, before.state)) }
    var trial = before
    let left = trial.period.endDate.duration(since: now).roundedMilliseconds
    guard left >= 1 else {
      throw TrialError.invalid(
        .trial, "trial \(id) ends at \(RFC3339.format(trial.period.endDate)): nothing is left to pause")
    }
    trial.state = .paused
    trial.pause = TrialPause(since: now, until: maxPause.map { now.adding($0) })
    // Its milestones that have not come are skipped: none fires after a pause.
    let skipped = try pendingMilestones(of: before, in: txn, now: now, reason: .paused)
    trial = trial.cutting(skipped)
    try write(trial, was: before, in: txn)
    let event = TrialEvent(
      id: EventID(trialID: id, revision: trial.revision, kind: .paused(left: .milliseconds(left))), due: now)
    let entry = LedgerEntry(event: event, outcome: .fired, takenAt: now, isLate: false)
    try txn.putLedgerEntry(entry)
    let logged = try txn.appendEvent(entry, attributes: trial.attributes)
    return (trial, [logged] + (try recordSkipped(skipped, of: trial, in: txn, now: now)))
  }

  /// Resumes a paused trial at `now` (at its pause, when the wall clock stands before it), as its
  /// caller asks. Returns the trial as resumed, the
  /// reminders skipped (already due), and its events as logged: the `resumed` event, then the
  /// skipped reminders.
  /// - Throws: `TrialError` when the trial is not paused.
  public static func resumeTrial(in txn: any TrialWriteTransaction, _ id: TrialID, now: Date) throws -> (
    trial: Trial, skipped: [DueEvent], logged: [LoggedEvent]
  ) {
    guard let trial = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    // A wall clock stepped back past the pause resumes the trial as of its pause: its end never
    // moves before where the pause left it (nor before its start).
    let at = max(now, trial.pause?.since ?? now)
    guard let event = trial.resumeEvent(at: at) else { throw TrialError(.notPaused(id, trial.state)) }
    return try resume(
      trial, DueEvent(event: event, takenAt: now, disposition: .fire, isLate: false), in: txn, now: now)
  }

  /// Resumes `trial` by its resume event `due` (the caller's, or its pause running out): the end
  /// moves to the resume's due time plus the time left. The caller has checked that the trial is
  /// paused in the event's revision and the event is not in the ledger.
  static func resume(_ trial: Trial, _ due: DueEvent, in txn: any TrialWriteTransaction, now: Date) throws
    -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent])
  {
    var resumed = trial
    let at = due.event.due
    resumed.state = .active
    resumed.pause = nil
    resumed.reschedule(endDate: due.event.trialEnd)
    try write(resumed, was: trial, in: txn)
    let entry = LedgerEntry(due)
    try txn.putLedgerEntry(entry)
    let logged = try txn.appendEvent(entry, attributes: resumed.attributes)
    let skipped =
      (resumed.events.filter { $0.kind.reminderOffset != nil && $0.due <= at }
      + resumed.milestoneEvents.filter { $0.due <= at }).map {
        DueEvent(event: $0, takenAt: now, disposition: .skip(.alreadyDueAtResume), isLate: false)
      }
    return (resumed, skipped, [logged] + (try recordSkipped(skipped, of: resumed, in: txn, now: now)))
  }
}
