import FoundationEssentials
import TrialCore

/// The operations of `TrialBook`, each in one write transaction of its own: for tests and
/// benchmarks, which drive a store without an engine. The engine runs them in its commit lane's
/// transactions.
extension TrialRepository {
  /// Starts a trial for `subject`. Reminders already due are recorded as skipped.
  /// - Throws: `TrialError` when the subject already has an active trial, when the end
  ///   is not after `now`, or when no unused id is found.
  public func startTrial(
    subject: String, labels: TrialLabels = .none, endDate: Date, reminders: ReminderSchedule, now: Date,
    ids: any TrialIDGenerator
  ) throws -> (trial: Trial, skipped: [DueEvent]) {
    let started = try write { txn in
      try TrialBook.startTrial(
        in: txn, subject: subject, labels: labels, endDate: endDate, reminders: reminders, now: now, ids: ids)
    }
    return (started.trial, started.skipped)
  }

  /// Moves an active trial's end to `endDate`, starting a new revision.
  public func extendTrial(_ id: TrialID, to endDate: Date, now: Date) throws -> (
    trial: Trial, skipped: [DueEvent]
  ) {
    let extended = try write { txn in try TrialBook.extendTrial(in: txn, id, to: endDate, now: now) }
    return (extended.trial, extended.skipped)
  }

  /// Ends an active trial early: converted or cancelled. Its pending events never fire.
  public func endTrial(_ id: TrialID, outcome: TrialOutcome, now: Date) throws -> Trial {
    try write { txn in try TrialBook.endTrial(in: txn, id, outcome: outcome, now: now) }
  }

  /// Records taken events exactly once, in one transaction (see `TrialBook.commit`).
  public func commit(_ due: [DueEvent], now: Date) throws -> [LoggedEvent] {
    try write { txn in try TrialBook.commit(in: txn, due, now: now) }
  }

  /// Marks entries as delivered, taking them out of the outbox.
  public func markDelivered(_ ids: [EventID], at now: Date) throws {
    guard !ids.isEmpty else { return }
    try write { txn in try TrialBook.markDelivered(in: txn, ids.lazy.map { (id: $0, at: now) }) }
  }
}
