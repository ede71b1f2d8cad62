import FoundationEssentials

/// Cancelling trials at their end, and taking that back, inside a transaction the caller provides.
///
/// A trial cancelled at its end stays open (active or paused) until its end, marked
/// (`Trial.cancelMark`); its reminders that fall due meanwhile are skipped (`cancel-at-end`)
/// unless its plan said `RemindAfterCancel=yes` when the cancel was asked; at its end its expiry
/// fires and the trial is cancelled, not expired (`Trial.stateAtEnd`), its expiry carrying
/// `outcome=cancelled`. Neither the mark nor its removal changes the end or the revision: no
/// event is planned anew, the mark is read as each event is taken (`TrialBook.take`).
extension TrialBook {
  /// Marks an open trial to be cancelled at its end, as asked at `now`, with the label changes
  /// given; `remindAfterCancel` is its plan's `RemindAfterCancel=` now. A trial marked already
  /// keeps its mark (the answer is the same).
  /// - Throws: `TrialError` when the trial is ended, or in grace (past its end: it can only be
  ///   ended now).
  public static func cancelAtEnd(
    in txn: any TrialWriteTransaction, _ id: TrialID, remindAfterCancel: Bool,
    labels: [String: String?] = [:],
    now: Date
  ) throws -> Trial {
    guard let before = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    guard before.isOpen, before.state != .grace else { throw TrialError(.notActive(id, before.state)) }
    var trial = before
    trial.labels = try changedLabels(trial.labels, labels)
    if trial.cancelMark == nil {
      trial.cancelMark = TrialCancelMark(askedAt: now, remindAfterCancel: remindAfterCancel)
    }
    if trial != before { try write(trial, was: before, in: txn) }
    return trial
  }

  /// Takes back the cancel at the end of an open trial: its reminders not yet due fire again.
  /// - Throws: `TrialError` when the trial is ended, or not marked.
  public static func uncancel(in txn: any TrialWriteTransaction, _ id: TrialID) throws -> Trial {
    guard let before = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    guard before.isOpen else { throw TrialError(.notActive(id, before.state)) }
    guard before.cancelMark != nil else { throw TrialError(.notCancelling(id)) }
    var trial = before
    trial.cancelMark = nil
    try write(trial, was: before, in: txn)
    return trial
  }

  /// `due` as it is taken for `trial`: a reminder of a trial cancelled at its end is skipped
  /// (`cancel-at-end`) unless its mark keeps reminders; anything else as it was. What `take`
  /// records, and what Simulate shows.
  public static func disposition(of due: DueEvent, for trial: Trial) -> DueEvent {
    guard due.fires, due.event.kind.reminderOffset != nil, trial.skipsReminders else { return due }
    var skipped = due
    skipped.disposition = .skip(.cancelAtEnd)
    return skipped
  }
}

extension Trial {
  /// The attributes `event` of the trial carries when taken: its expiry, those of the trial as
  /// its end leaves it (`outcome=cancelled` of a trial cancelled at its end); any other event,
  /// the trial's own. For GetPlan and Simulate, which show events not yet taken.
  public func attributes(of event: TrialEvent) -> TrialAttributes {
    event.kind == .expiry ? expired(byExpiryTakenAt: event.due).attributes : attributes
  }
}
