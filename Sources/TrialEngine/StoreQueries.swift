import FoundationEssentials
import TrialCore

/// A page of trials and the cursor for the next one.
public struct TrialPage: Hashable, Sendable {
  public var trials: [Trial]
  /// Pass as `after` to get the next page; nil on the last page.
  public var next: TrialID?
}

/// The reads of trials, the ledger, the event log and consumers, each in one read
/// transaction of the store: answered on any thread, beside the engine (a store's reads run
/// alongside its writes), never waiting for a commit.
public struct StoreQueries: @unchecked Sendable {
  // @unchecked: the repositories are safe to read from any thread (see TrialRepository's
  // implementations); nothing else is held.
  public let repository: any TrialRepository
  /// Deliveries made but not yet recorded in the store (see `DeliveryQueue`).
  public let unrecordedDeliveries: UnrecordedDeliveries

  public init(
    _ repository: any TrialRepository, unrecordedDeliveries: UnrecordedDeliveries = UnrecordedDeliveries()
  ) {
    self.repository = repository
    self.unrecordedDeliveries = unrecordedDeliveries
  }

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

  /// A trial and every ledger entry it has, over all revisions, read together; an event
  /// delivered shows as delivered even before the store records it.
  public func trialWithLedger(id: TrialID) throws -> (trial: Trial, ledger: [LedgerEntry]) {
    let (trial, ledger) = try repository.read { txn in (try txn.trial(id), try txn.ledgerEntries(trial: id)) }
    guard let trial else { throw TrialError.notFound(id: id) }
    return (trial, unrecordedDeliveries.apply(to: ledger))
  }

  /// The attributes (subject, labels) of the given trials, read in one transaction.
  public func attributes(of ids: [TrialID]) throws -> [TrialID: TrialAttributes] {
    try repository.read { txn in
      var attributes: [TrialID: TrialAttributes] = [:]
      for id in Set(ids) { attributes[id] = try txn.trial(id)?.attributes }
      return attributes
    }
  }

  /// What would fire from `now` until `date` under `policy`, changing nothing: the planner a
  /// restarted engine would build from the store (every active trial's events of its current
  /// revision not yet in the ledger), asked what falls due. O(trials); for a rare command.
  /// Events of different trials due at the same instant come in trial-id order (the running
  /// engine takes them in the order the trials were planned).
  public func simulate(now: Date, through date: Date, policy: CatchUpPolicy) throws -> [DueEvent] {
    try simulateWithTrials(now: now, through: date, policy: policy).due
  }

  /// The same, with the trials of the events (read in one transaction), each reminder of a
  /// trial cancelled at its end skipped as it would be (`TrialBook.disposition`), and each
  /// follow-up called off as it would be (`TrialBook.followUp`: the trial converted, or its
  /// subject's latest trial another).
  public func simulateWithTrials(now: Date, through date: Date, policy: CatchUpPolicy) throws -> (
    due: [DueEvent], trials: [TrialID: Trial]
  ) {
    var planner = Planner(policy: policy)
    try repository.restore(into: &planner, progress: { _ in })
    let due = planner.simulate(now: now, through: date)
    let (trials, latest) = try repository.read { txn in
      var trials: [TrialID: Trial] = [:]
      var latest: [String: TrialID] = [:]
      for id in Set(due.map(\.event.trialID)) {
        guard let trial = try txn.trial(id) else { continue }
        trials[id] = trial
        if trial.hasFollowUps, latest[trial.subject] == nil {
          latest[trial.subject] = try txn.latestTrialID(subject: trial.subject)
        }
      }
      return (trials, latest)
    }
    return (
      due.map { item in
        guard let trial = trials[item.event.trialID] else { return item }
        return item.event.kind.followUpSpan == nil
          ? TrialBook.disposition(of: item, for: trial)
          : TrialBook.followUp(item, for: trial, latest: latest[trial.subject])
      },
      trials
    )
  }

  /// Where the event log stands.
  public func eventLogBounds() throws -> EventLogBounds {
    try repository.read { try $0.eventLogBounds() }
  }

  public func consumer(named name: String) throws -> (ConsumerRecord, EventCursor) {
    try repository.read { txn in
      guard let consumer = try txn.consumer(named: name) else {
        throw TrialError(.consumerNotFound(name: name))
      }
      return (consumer, try txn.eventLogBounds().last)
    }
  }

  public func consumers() throws -> ([ConsumerRecord], EventCursor) {
    try repository.read { txn in (try EventFeed.consumers(in: txn), try txn.eventLogBounds().last) }
  }
}

extension Engine {
  /// The store's reads (the same the control socket answers off the engine's queue).
  public var queries: StoreQueries { StoreQueries(repository, unrecordedDeliveries: delivery.unrecorded) }

  /// Deliveries made but not yet recorded in the store (see `DeliveryQueue`).
  public var unrecordedDeliveries: UnrecordedDeliveries { delivery.unrecorded }
}
