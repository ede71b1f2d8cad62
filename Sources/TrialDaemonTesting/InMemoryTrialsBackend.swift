import Dispatch
import Foundation
import Synchronization
import TrialControl
import TrialCore
import TrialDaemon
import TrialTesting

/// A `TrialsBackend` over an in-memory repository, for tests and benchmarks of the control
/// server. Like the daemon's engine it owns the repository and a planner on one serial queue
/// and carries out every change with the repository's operations (`startTrial`,
/// `extendTrial`, `endTrial`, `commit`), so it answers as the real daemon does. Time comes
/// from the injected clock; events fire only when the test calls `fireDue()`.
public final class InMemoryTrialsBackend: TrialsBackend, @unchecked Sendable {
  public let clock: any WallClock
  public let defaultLength: Days
  public let defaultReminders: ReminderSchedule
  private let startedAt: Date
  private let queue = DispatchQueue(label: "trialwatch.test-backend")
  // Owned by `queue`.
  private let repository = InMemoryTrialRepository()
  private let ids: any TrialIDGenerator
  private var planner = Planner()

  private let watchers = Mutex<[ObjectIdentifier: any WatchSubscriber]>([:])
  private let pauses = Mutex(0)
  private let answersInline: Bool

  /// With `answersInline`, each call runs on the caller's thread (serialized with the
  /// backend's queue) and completes before returning, as a backend answering reads from a
  /// snapshot on the calling thread would; otherwise calls run asynchronously on the
  /// backend's queue, as the engine does.
  public init(
    clock: any WallClock, ids: any TrialIDGenerator = RandomTrialIDGenerator(),
    defaultLength: Days = .defaultTrialLength, defaultReminders: ReminderSchedule = .default,
    answersInline: Bool = false
  ) {
    self.answersInline = answersInline
    self.clock = clock
    self.ids = ids
    self.defaultLength = defaultLength
    self.defaultReminders = defaultReminders
    self.startedAt = clock.now()
  }

  // MARK: TrialsBackend

  public func startTrial(_ parameters: StartTrialParameters, completion: @escaping Completion<TrialObject>) {
    run(completion) { [self] in
      let now = clock.now()
      let end =
        parameters.endsAt ?? now.addingTimeInterval((parameters.duration ?? defaultLength).timeInterval)
      let (trial, _) = try repository.startTrial(
        subject: parameters.subject, endDate: end, reminders: parameters.reminders ?? defaultReminders,
        now: now,
        ids: ids)
      planner.add(trial, now: now)
      return TrialObject(trial, now: now)
    }
  }

  public func getTrial(_ parameters: GetTrialParameters, completion: @escaping Completion<TrialObject>) {
    run(completion) { [self] in
      let now = clock.now()
      let trial: Trial? = try repository.read { txn in
        if let id = parameters.id { return try txn.trial(id) }
        guard let subject = parameters.subject, let id = try txn.latestTrialID(subject: subject) else {
          return nil
        }
        return try txn.trial(id)
      }
      guard let trial else {
        throw ControlError.trialNotFound(id: parameters.id, subject: parameters.subject)
      }
      return TrialObject(trial, now: now)
    }
  }

  public func listTrials(
    _ parameters: ListTrialsParameters, completion: @escaping Completion<ListTrialsReply>
  ) {
    run(completion) { [self] in
      let now = clock.now()
      var page: [Trial] = []
      var more = false
      try repository.read { txn in
        try txn.scanTrials(after: parameters.after) { trial in
          guard parameters.matches(trial, now: now) else { return true }
          if page.count == parameters.pageSize {
            more = true
            return false
          }
          page.append(trial)
          return true
        }
      }
      return ListTrialsReply(trials: page.map { TrialObject($0, now: now) }, next: more ? page.last?.id : nil)
    }
  }

  public func extendTrial(_ parameters: ExtendTrialParameters, completion: @escaping Completion<TrialObject>)
  {
    run(completion) { [self] in
      let now = clock.now()
      guard let current = try repository.read({ try $0.trial(parameters.id) }) else {
        throw ControlError.trialNotFound(id: parameters.id)
      }
      let (trial, _) = try repository.extendTrial(
        parameters.id, to: parameters.change.newEnd(from: current.period.endDate), now: now)
      planner.add(trial, now: now, reason: .alreadyDueAtExtension)
      return TrialObject(trial, now: now)
    }
  }

  public func endTrial(_ parameters: EndTrialParameters, completion: @escaping Completion<TrialObject>) {
    run(completion) { [self] in
      let now = clock.now()
      let trial = try repository.endTrial(parameters.id, outcome: parameters.outcome, now: now)
      planner.cancel(trial.id)
      return TrialObject(trial, now: now)
    }
  }

  public func getPlan(_ parameters: GetPlanParameters, completion: @escaping Completion<[EventObject]>) {
    run(completion) { [self] in
      try repository.read { txn in
        guard let trial = try txn.trial(parameters.id) else {
          throw ControlError.trialNotFound(id: parameters.id)
        }
        return EventObject.plan(of: trial, ledger: try txn.ledgerEntries(trial: trial.id))
      }
    }
  }

  public func simulate(_ parameters: SimulateParameters, completion: @escaping Completion<[EventObject]>) {
    run(completion) { [self] in
      let now = clock.now()
      let due = planner.simulate(now: now, through: parameters.at.resolve(now: now))
      return try repository.read { txn in
        try due.map { EventObject($0, subject: try txn.trial($0.event.trialID)?.subject) }
      }
    }
  }

  public func getStatus(completion: @escaping Completion<DaemonStatus>) {
    run(completion) { [self] in
      let now = clock.now()
      var counts = TrialCounts()
      let next: EventObject? = try repository.read { txn in
        try txn.scanTrials(after: nil) { trial in
          counts[trial.state] += 1
          return true
        }
        return try planner.nextEvent.map {
          EventObject(pending: $0, subject: try txn.trial($0.trialID)?.subject)
        }
      }
      return DaemonStatus(
        startedAt: startedAt, uptime: now.duration(since: startedAt), trials: counts,
        pendingEvents: planner.pendingEventCount, nextEvent: next)
    }
  }

  public func watch(_ subscriber: any WatchSubscriber) -> any WatchSubscription {
    let key = ObjectIdentifier(subscriber)
    watchers.withLock { $0[key] = subscriber }
    return Subscription { [weak self] in _ = self?.watchers.withLock { $0.removeValue(forKey: key) } }
  }

  // MARK: For tests

  /// Takes every event due at the clock's now, records it exactly once, hands it to every
  /// watcher and marks it delivered. Returns what was taken, as watchers received it.
  @discardableResult
  public func fireDue() throws -> [EventObject] {
    try queue.sync {
      let now = clock.now()
      let due = planner.takeDue(at: now)
      let entries = try repository.commit(due, now: now)
      let events = try repository.read { txn in
        try entries.map { EventObject($0, subject: try txn.trial($0.event.trialID)?.subject) }
      }
      let subscribers = watchers.withLock { Array($0.values) }
      for event in events {
        for subscriber in subscribers { subscriber.deliver(event) }
      }
      try repository.markDelivered(entries.map(\.id), at: now)
      return events
    }
  }

  /// Ends every Watch, as a stopping daemon does.
  public func finishWatchers() {
    let subscribers = watchers.withLock { dictionary in
      defer { dictionary.removeAll() }
      return Array(dictionary.values)
    }
    for subscriber in subscribers { subscriber.finish() }
  }

  /// Watchers currently registered.
  public var watcherCount: Int { watchers.withLock { $0.count } }

  /// Holds every call until `resume()`, as a busy engine would.
  public func pause() {
    pauses.withLock { $0 += 1 }
    queue.suspend()
  }

  public func resume() {
    pauses.withLock { $0 -= 1 }
    queue.resume()
  }

  /// Waits until every call submitted so far has been carried out.
  public func drain() {
    queue.sync {}
  }

  // MARK: Running operations

  private func run<T: Sendable>(_ completion: @escaping Completion<T>, _ body: @escaping () throws -> T) {
    nonisolated(unsafe) let body = body
    let work: @Sendable () -> Result<T, ControlError> = {
      do {
        return .success(try body())
      } catch let error as ControlError {
        return .failure(error)
      } catch let error as TrialError {
        return .failure(ControlError(error))
      } catch {
        return .failure(.internalError("\(error)"))
      }
    }
    if answersInline {
      completion(queue.sync(execute: work))
    } else {
      queue.async { completion(work()) }
    }
  }
}

private final class Subscription: WatchSubscription, @unchecked Sendable {
  private let onCancel: Mutex<(@Sendable () -> Void)?>

  init(_ onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = Mutex(onCancel)
  }

  func cancel() {
    let action = onCancel.withLock { action in
      defer { action = nil }
      return action
    }
    action?()
  }
}
