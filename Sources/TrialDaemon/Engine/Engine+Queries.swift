import Foundation
import TrialCore

/// A page of trials and the cursor for the next one.
public struct TrialPage: Hashable, Sendable {
  public var trials: [Trial]
  /// Pass as `after` to get the next page; nil on the last page.
  public var next: TrialID?
}

/// The engine's view of itself, for `GetStatus` and `systemctl status`.
public struct EngineStatus: Hashable, Sendable {
  public var counts: [TrialState: Int]
  public var pendingEvents: Int
  public var nextEvent: TrialEvent?
  public var nextSubject: String?
  public var fired: Int
  public var skipped: Int
  public var line: String
}

extension Engine {
  public func trial(id: TrialID) throws -> Trial {
    guard let trial = try repository.read({ try $0.trial(id) }) else {
      throw TrialError.notFound(id: id)
    }
    return trial
  }

  /// The subject's active trial, else its most recent one.
  public func trial(subject: String) throws -> Trial {
    let found = try repository.read { txn -> Trial? in
      // The active trial, if there is one, is the latest.
      try txn.latestTrialID(subject: subject).flatMap { try txn.trial($0) }
    }
    guard let found else { throw TrialError.notFound(subject: subject) }
    return found
  }

  /// Trials in id order after `after` that satisfy `include`, at most `limit`.
  public func listTrials(limit: Int, after: TrialID?, where include: (Trial) -> Bool) throws -> TrialPage {
    var page: [Trial] = []
    var more = false
    try repository.read { txn in
      try txn.scanTrials(after: after) { trial in
        guard include(trial) else { return true }
        if page.count == limit {
          more = true
          return false
        }
        page.append(trial)
        return true
      }
    }
    return TrialPage(trials: page, next: more ? page.last?.id : nil)
  }

  /// Deliveries made but not yet recorded in the store (see `DeliveryQueue`).
  public var unrecordedDeliveries: UnrecordedDeliveries { delivery.unrecorded }

  /// A trial and every ledger entry it has, over all revisions, read together; an event
  /// delivered shows as delivered even before the store records it.
  public func trialWithLedger(id: TrialID) throws -> (trial: Trial, ledger: [LedgerEntry]) {
    let (trial, ledger) = try repository.read { txn in (try txn.trial(id), try txn.ledgerEntries(trial: id)) }
    guard let trial else { throw TrialError.notFound(id: id) }
    return (trial, unrecordedDeliveries.apply(to: ledger))
  }

  /// The subjects of the given trials, read in one transaction.
  public func subjects(of ids: [TrialID]) throws -> [TrialID: String] {
    try repository.read { txn in
      var subjects: [TrialID: String] = [:]
      for id in Set(ids) { subjects[id] = try txn.trial(id)?.subject }
      return subjects
    }
  }

  /// What would fire from now until `date`, changing nothing.
  public func simulate(through date: Date) -> [DueEvent] {
    planner.simulate(now: clock.now(), through: date)
  }

  public func status() -> EngineStatus {
    let next = planner.nextEvent
    let subject = next.flatMap { event in (try? repository.read { try $0.trial(event.trialID) })??.subject }
    return EngineStatus(
      counts: counts, pendingEvents: planner.pendingEventCount, nextEvent: next, nextSubject: subject,
      fired: firedCount, skipped: skippedCount, line: statusLine())
  }
}
