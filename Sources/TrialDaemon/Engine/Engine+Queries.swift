import Foundation
import TrialCore

/// One event of a trial's plan, past or future.
public struct PlanItem: Hashable, Sendable {
  public enum State: Hashable, Sendable {
    /// Waiting for its due time.
    case pending
    /// Fired; waiting to be delivered.
    case fired
    /// Fired and delivered.
    case delivered
    case skipped(SkipReason)
    /// The trial ended (converted, cancelled) before it fell due.
    case cancelled

    public var name: String {
      switch self {
      case .pending: "pending"
      case .fired: "fired"
      case .delivered: "delivered"
      case .skipped: "skipped"
      case .cancelled: "cancelled"
      }
    }
  }

  public var event: TrialEvent
  public var state: State
  public var takenAt: Date?
  public var lateness: TimeInterval?
  public var isLate: Bool
}

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
      throw TrialError(.notFound("with id \(id)"))
    }
    return trial
  }

  /// The subject's active trial.
  public func trial(subject: String) throws -> Trial {
    let found = try repository.read { txn -> Trial? in
      guard let id = try txn.activeTrialID(subject: subject) else { return nil }
      return try txn.trial(id)
    }
    guard let found else { throw TrialError(.notFound("active for subject \"\(subject)\"")) }
    return found
  }

  /// Trials in id order after `after`, filtered by state and by how soon they end.
  public func listTrials(state: TrialState?, expiringWithin: Days?, limit: Int, after: TrialID?) throws
    -> TrialPage
  {
    let now = clock.now()
    let horizon = expiringWithin.map { now.addingTimeInterval($0.timeInterval) }
    var page: [Trial] = []
    var more = false
    try repository.read { txn in
      try txn.scanTrials(after: after) { trial in
        if let state, trial.state != state { return true }
        if let horizon, !(trial.isActive && trial.period.endDate <= horizon) { return true }
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

  /// Every event of the trial: what was taken (all revisions), then what is still to come.
  public func plan(id: TrialID) throws -> (trial: Trial, items: [PlanItem]) {
    let (trial, entries) = try repository.read { txn -> (Trial?, [LedgerEntry]) in
      (try txn.trial(id), try txn.ledgerEntries(trial: id))
    }
    guard let trial else { throw TrialError(.notFound("with id \(id)")) }
    var items: [PlanItem] = entries.map { entry in
      let state: PlanItem.State
      switch entry.outcome {
      case .fired: state = entry.isDelivered ? .delivered : .fired
      case .skipped(let reason): state = .skipped(reason)
      }
      return PlanItem(
        event: entry.event, state: state, takenAt: entry.takenAt,
        lateness: entry.fired ? entry.lateness : nil, isLate: entry.isLate)
    }
    let taken = Set(entries.map(\.id))
    for event in trial.events where !taken.contains(event.id) {
      let state: PlanItem.State = planner.pendingEvent(event.id) != nil ? .pending : .cancelled
      if state == .cancelled && trial.state == .expired { continue }
      items.append(PlanItem(event: event, state: state, takenAt: nil, lateness: nil, isLate: false))
    }
    items.sort { $0.event.due != $1.event.due ? $0.event.due < $1.event.due : $0.event.id < $1.event.id }
    return (trial, items)
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
