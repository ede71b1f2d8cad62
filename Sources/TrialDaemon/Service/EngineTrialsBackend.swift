import Dispatch
import Foundation
import Synchronization
import TrialControl
import TrialCore

/// The control server's view of the engine: every `io.trialwatch.Trials` call is carried
/// out on the engine's queue. Changes go through the engine's group commit, so each is
/// durable before it is answered; reads are answered from the store and the planner.
public final class EngineTrialsBackend: TrialsBackend, @unchecked Sendable {
  // @unchecked: `engine` is only touched on `queue`; the watcher list has its own lock.
  private let engine: Engine
  private let queue: DispatchQueue
  private let startedAt: Date
  private let storeBytes: @Sendable () -> Int?
  private let watchers = WatcherHub()

  /// - Parameter storeBytes: the size of the store file, for `GetStatus`.
  public init(
    engine: Engine, queue: DispatchQueue, startedAt: Date, storeBytes: @escaping @Sendable () -> Int?
  ) {
    self.engine = engine
    self.queue = queue
    self.startedAt = startedAt
    self.storeBytes = storeBytes
    queue.sync { engine.addSink(watchers) }
  }

  /// Carries a non-Sendable value across to the engine queue.
  private struct Bound<T>: @unchecked Sendable { let value: T }

  /// A read: runs on the engine's queue, but on the caller's thread (`sync`), so that the
  /// answer needs no thread hop either way; the completion runs back on the caller's queue.
  /// Reads touch no disk beyond LMDB's mapped pages; one that arrives while the engine
  /// commits waits for that commit, and sees it.
  private func run<T>(_ completion: @escaping Completion<T>, _ body: @escaping (Engine) throws -> T) {
    let bound = Bound(value: body)
    let result = queue.sync { [self] in Bound(value: Self.result { try bound.value(engine) }) }
    completion(result.value)
  }

  private static func result<T>(_ body: () throws -> T) -> Result<T, ControlError> {
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

  private func submit(
    _ command: @escaping (Engine) throws -> TrialCommand, completion: @escaping Completion<TrialObject>
  ) {
    let bound = Bound(value: command)
    queue.async { [self] in
      let command: TrialCommand
      do {
        command = try bound.value(engine)
      } catch {
        completion(Self.result { throw error })
        return
      }
      engine.submit(command) { result in
        completion(Self.result { TrialObject(try result.get().trial, now: self.engine.clock.now()) })
      }
    }
  }

  public func startTrial(_ parameters: StartTrialParameters, completion: @escaping Completion<TrialObject>) {
    submit(
      { _ in
        .start(
          subject: parameters.subject, length: parameters.duration, endsAt: parameters.endsAt,
          reminders: parameters.reminders)
      }, completion: completion)
  }

  public func extendTrial(_ parameters: ExtendTrialParameters, completion: @escaping Completion<TrialObject>)
  {
    submit(
      { _ in
        switch parameters.change {
        case .by(let span): .extend(parameters.id, by: span, endsAt: nil)
        case .to(let date): .extend(parameters.id, by: nil, endsAt: date)
        }
      }, completion: completion)
  }

  public func endTrial(_ parameters: EndTrialParameters, completion: @escaping Completion<TrialObject>) {
    submit({ _ in .end(parameters.id, parameters.outcome) }, completion: completion)
  }

  public func getTrial(_ parameters: GetTrialParameters, completion: @escaping Completion<TrialObject>) {
    run(completion) { engine in
      let trial: Trial
      if let id = parameters.id {
        trial = try engine.trial(id: id)
      } else {
        trial = try engine.trial(subject: parameters.subject ?? "")
      }
      return TrialObject(trial, now: engine.clock.now())
    }
  }

  public func listTrials(
    _ parameters: ListTrialsParameters, completion: @escaping Completion<ListTrialsReply>
  ) {
    run(completion) { engine in
      let now = engine.clock.now()
      let page = try engine.listTrials(
        limit: parameters.pageSize, after: parameters.after, where: { parameters.matches($0, now: now) })
      return ListTrialsReply(trials: page.trials.map { TrialObject($0, now: now) }, next: page.next)
    }
  }

  public func getPlan(_ parameters: GetPlanParameters, completion: @escaping Completion<[EventObject]>) {
    run(completion) { engine in
      let (trial, ledger) = try engine.trialWithLedger(id: parameters.id)
      return EventObject.plan(of: trial, ledger: ledger)
    }
  }

  public func simulate(_ parameters: SimulateParameters, completion: @escaping Completion<[EventObject]>) {
    run(completion) { engine in
      let due = engine.simulate(through: parameters.at.resolve(now: engine.clock.now()))
      let subjects = try engine.subjects(of: due.map(\.event.trialID))
      return due.map { EventObject($0, subject: subjects[$0.event.trialID]) }
    }
  }

  public func getStatus(completion: @escaping Completion<DaemonStatus>) {
    let storeBytes = self.storeBytes
    let startedAt = self.startedAt
    run(completion) { engine in
      let status = engine.status()
      var counts = TrialCounts()
      for (state, count) in status.counts { counts[state] = count }
      let now = engine.clock.now()
      return DaemonStatus(
        startedAt: startedAt, uptime: now.duration(since: startedAt), trials: counts,
        pendingEvents: status.pendingEvents,
        nextEvent: status.nextEvent.map { EventObject(pending: $0, subject: status.nextSubject) },
        storeBytes: storeBytes())
    }
  }

  public func watch(_ subscriber: any WatchSubscriber) -> any WatchSubscription {
    watchers.add(subscriber)
  }

  /// Ends every Watch (the daemon is stopping).
  public func finishWatchers() {
    watchers.finishAll()
  }
}

/// Hands every delivered event to the running Watches. Never throws and never blocks: the
/// server buffers per watcher and cuts off one that falls behind.
final class WatcherHub: EventSink, Sendable {
  private let subscribers = Mutex<[ObjectIdentifier: any WatchSubscriber]>([:])

  func add(_ subscriber: any WatchSubscriber) -> any WatchSubscription {
    let key = ObjectIdentifier(subscriber)
    subscribers.withLock { $0[key] = subscriber }
    return Subscription { [weak self] in _ = self?.subscribers.withLock { $0.removeValue(forKey: key) } }
  }

  func deliver(_ entry: LedgerEntry, trial: Trial) {
    let current = subscribers.withLock { Array($0.values) }
    guard !current.isEmpty else { return }
    let event = EventObject(entry, subject: trial.subject)
    for subscriber in current { subscriber.deliver(event) }
  }

  func finishAll() {
    let all = subscribers.withLock { dictionary in
      defer { dictionary.removeAll() }
      return Array(dictionary.values)
    }
    for subscriber in all { subscriber.finish() }
  }

  private final class Subscription: WatchSubscription, Sendable {
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
}
