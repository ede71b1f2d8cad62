import Foundation
import Logging
import TrialCore

/// Hands taken events to the sinks in the order they were taken, and holds them back, in
/// that order, when a sink cannot take one now.
///
/// A sink that throws `DeliveryDeferred` (the journal, at its rate limit) stops the batch
/// there: what went before is marked delivered, the rest waits in a `DeliveryBacklog`, and
/// one wake at the time the sink named delivers on from it. Any other error stops the batch
/// the same way and is tried again after the retry delay. Events taken meanwhile wait behind
/// the backlog. Their entries stay in the store's outbox the whole time, so a restart
/// delivers them too. A hold is logged when it begins or changes cause, and when it ends,
/// never per event. Runs on the engine's context.
final class DeliveryQueue {
  private let repository: any TrialRepository
  private let scheduler: any WakeScheduler
  private let logger: Logger
  private var sinks: [any EventSink]
  private var backlog = DeliveryBacklog()
  private var retryDelay: Duration = .seconds(1)
  private var stopped = false
  /// How many held entries are read from the store at a time.
  static let chunk = 512

  /// Why a run of deliveries stopped.
  private enum Stop {
    case deferred(DeliveryDeferred)
    case sinkFailed(any Error)
    case storeFailed(any Error)
  }

  init(repository: any TrialRepository, scheduler: any WakeScheduler, sinks: [any EventSink], logger: Logger)
  {
    self.repository = repository
    self.scheduler = scheduler
    self.sinks = sinks
    self.logger = logger
  }

  func add(_ sink: any EventSink) {
    sinks.append(sink)
  }

  /// Events waiting for the sinks behind a deferral or a failure.
  var heldCount: Int { backlog.count }

  /// Delivers `entries`, in order, or puts them behind the events already held.
  func deliver(_ entries: [LedgerEntry], retryDelay: Duration) {
    self.retryDelay = retryDelay
    guard !entries.isEmpty, !stopped else { return }
    guard !backlog.isHolding else {
      backlog.append(entries.lazy.map(\.id))
      return
    }
    var run: (delivered: [EventID], stop: (index: Int, cause: Stop)?)
    do {
      let trials = try repository.read { txn in try entries.map { try txn.trial($0.event.trialID) } }
      run = offer(entries, trials)
      try repository.markDelivered(run.delivered, at: scheduler.clock.now())
    } catch {
      // Nothing is known to be recorded: every entry goes again (some may reach a sink twice).
      run = ([], (0, .storeFailed(error)))
    }
    guard let stop = run.stop else { return }
    backlog.append(entries[stop.index...].lazy.map(\.id))
    hold(stop.cause)
  }

  /// Delivers what is held now rather than at the wake (after a reload changed the pace).
  func resumeNow() {
    guard backlog.isHolding, !stopped else { return }
    backlog.wake?.cancel()
    resume()
  }

  func stop() {
    stopped = true
    backlog.wake?.cancel()
    backlog.wake = nil
  }

  /// The wake's action: delivers held events, oldest first, until a sink stops again or none
  /// is left. Entries no longer in the outbox are passed over.
  private func resume() {
    backlog.wake = nil
    guard !stopped else { return }
    var delivered: [EventID] = []
    var consumed = 0
    var stop: Stop?
    do {
      while stop == nil, consumed < backlog.count {
        let ids = backlog.slice(from: consumed, limit: Self.chunk)
        let (entries, trials) = try repository.read { txn in
          let entries = try ids.compactMap { try txn.ledgerEntry($0) }.filter { !$0.isDelivered }
          return (entries, try entries.map { try txn.trial($0.event.trialID) })
        }
        let run = offer(entries, trials)
        delivered += run.delivered
        if let stopped = run.stop {
          consumed += ids.firstIndex(of: entries[stopped.index].id)!
          stop = stopped.cause
        } else {
          consumed += ids.count
        }
      }
      try repository.markDelivered(delivered, at: scheduler.clock.now())
      backlog.removeFirst(consumed, delivered: delivered.count)
    } catch {
      // Nothing taken off the backlog: the entries sent in this run go again.
      stop = .storeFailed(error)
    }
    if let stop {
      hold(stop)
      return
    }
    let (count, heldFor) = backlog.release(at: scheduler.monotonicNow)
    logger.notice(
      "delivered the held events",
      metadata: ["count": "\(count)", "held_for": "\(TimeSpan.format(.seconds(heldFor), style: .brief))"])
  }

  /// Offers each entry to every sink until one stops; entries of trials no longer in the store
  /// count as delivered.
  private func offer(_ entries: [LedgerEntry], _ trials: [Trial?]) -> (
    delivered: [EventID], stop: (index: Int, cause: Stop)?
  ) {
    var delivered: [EventID] = []
    delivered.reserveCapacity(entries.count)
    for (index, (entry, trial)) in zip(entries, trials).enumerated() {
      do {
        if let trial {
          for sink in sinks { try sink.deliver(entry, trial: trial) }
        }
        delivered.append(entry.id)
      } catch let deferral as DeliveryDeferred {
        return (delivered, (index, .deferred(deferral)))
      } catch {
        return (delivered, (index, .sinkFailed(error)))
      }
    }
    return (delivered, nil)
  }

  /// Holds the backlog until the stop's time and arms the one wake; logs a hold that begins
  /// or changes cause.
  private func hold(_ stop: Stop) {
    let now = scheduler.monotonicNow
    let until: TimeInterval
    let cause: DeliveryBacklog.Cause
    // What is logged: at `level` when the hold is news, with `detail` added to the metadata.
    let level: Logger.Level
    let message: Logger.Message
    let detail: (key: String, value: String)
    switch stop {
    case .deferred(let deferral):
      until = deferral.until
      cause = .deferred(deferral.reason)
      level = .notice
      message = "holding events back from the journal"
      detail = ("reason", "\(deferral.reason)")
    case .sinkFailed(let error):
      until = now + retryDelay.timeInterval
      cause = .sinkFailed
      level = .error
      message = "could not deliver events; keeping them in the outbox"
      detail = ("error", "\(error)")
    case .storeFailed(let error):
      until = now + retryDelay.timeInterval
      cause = .storeFailed
      level = .error
      message = "could not read or record deliveries; will deliver again"
      detail = ("error", "\(error)")
    }
    // Never sooner than a millisecond: a sink that keeps naming the past cannot spin.
    let delay = max(until - now, 0.001)
    backlog.wake?.cancel()
    backlog.wake = scheduler.schedule(after: delay, label: "deliver") { [weak self] in self?.resume() }
    let news = backlog.hold(since: now, cause: cause)
    let metadata: Logger.Metadata = [
      "held": "\(backlog.count)", "resume_in": "\(TimeSpan.format(.seconds(delay), style: .brief))",
      detail.key: "\(detail.value)",
    ]
    logger.log(level: news ? level : .debug, message, metadata: metadata)
  }
}
