import FoundationEssentials
import Logging
import Synchronization
import TrialCore

/// Deliveries made but not recorded in the store yet, with when they were made: kept by the
/// engine's `DeliveryQueue`, readable from any thread, so that a plan read from the store
/// shows them delivered (`apply(to:)`).
public final class UnrecordedDeliveries: Sendable {
  private let marks = Mutex<[EventID: Date]>([:])

  public init() {}

  var count: Int { marks.withLock { $0.count } }

  /// Every delivery not recorded yet.
  var all: [EventID: Date] { marks.withLock { $0 } }

  func contains(_ id: EventID) -> Bool { marks.withLock { $0[id] != nil } }

  func insert(_ ids: [EventID], at date: Date) {
    marks.withLock { marks in for id in ids { marks[id] = date } }
  }

  func remove(_ ids: some Sequence<EventID>) {
    marks.withLock { marks in for id in ids { marks[id] = nil } }
  }

  /// `entries` with the deliveries not recorded yet filled in.
  public func apply(to entries: [LedgerEntry]) -> [LedgerEntry] {
    guard entries.contains(where: { !$0.isDelivered }) else { return entries }
    return marks.withLock { marks in
      entries.map { entry in
        guard !entry.isDelivered, let at = marks[entry.id] else { return entry }
        var delivered = entry
        delivered.deliveredAt = at
        return delivered
      }
    }
  }
}

/// Hands taken events to the sinks in the order they were taken, and holds them back, in
/// that order, when a sink cannot take one now.
///
/// A sink that throws `DeliveryDeferred` (the journal, at its rate limit) stops the batch
/// there: what went before counts as delivered, the rest waits in a `DeliveryBacklog`, and
/// one wake at the time the sink named delivers on from it. Any other error stops the batch
/// the same way and is tried again after the retry delay. Events taken meanwhile wait behind
/// the backlog. Their entries stay in the store's outbox the whole time, so a restart
/// delivers them too. A hold is logged when it begins or changes cause, and when it ends,
/// never per event. Runs on the engine's context.
///
/// Deliveries are recorded in the store (the entries leave the outbox) by the engine's next
/// write, so that firing costs one durable commit; see `recordMarks(in:)`.
final class DeliveryQueue {
  private let repository: any TrialRepository
  private let scheduler: any WakeScheduler
  private let logger: Logger
  private var sinks: [any EventSink]
  private var backlog = DeliveryBacklog() {
    didSet { held.set(backlog.count) }
  }
  /// How many events are held, readable from any thread (the metrics).
  let held = SharedCount()
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
  /// Called when delivery becomes held, or its hold ends (the status line says so).
  var holdChanged: () -> Void = {}

  /// Why events are held, in words: `at most 9000 entries per 30s to the journal`.
  var heldReason: String? {
    switch backlog.cause {
    case .deferred(let reason): reason
    case .sinkFailed: "a sink failed to take them"
    case .storeFailed: "the store could not be read or record deliveries"
    case nil: nil
    }
  }

  /// Delivers `events` (each with its trial as the commit that took it left it), in order, or
  /// puts them behind the events already held. `nextDue`: when the engine wakes next to take
  /// events (see `addMarks`).
  func deliver(_ events: [LoggedEvent], trials: [Trial?], retryDelay: Duration, nextDue: Date?) {
    self.retryDelay = retryDelay
    guard !events.isEmpty, !stopped else { return }
    guard !backlog.isHolding else {
      backlog.append(events.lazy.map { DeliveryBacklog.Held(id: $0.id, cursor: $0.cursor) })
      return
    }
    let run = offer(events, trials)
    addMarks(run.delivered, nextDue: nextDue)
    guard let stop = run.stop else { return }
    backlog.append(events[stop.index...].lazy.map { DeliveryBacklog.Held(id: $0.id, cursor: $0.cursor) })
    hold(stop.cause)
  }

  /// Delivers again entries taken but not delivered before (the outbox, at start or when a fleet
  /// node gains shards), as the event log holds them: with the attributes their trials had when
  /// taken, in the order taken. An entry whose event the log no longer holds goes last, with its
  /// trial's attributes now.
  func redeliver(_ entries: [LedgerEntry], retryDelay: Duration) throws {
    let (events, trials) = try repository.read { txn in
      try Self.loggedEvents(entries.map { (id: $0.id, cursor: nil) }, in: txn)
    }
    deliver(events, trials: trials, retryDelay: retryDelay, nextDue: nil)
  }

  // MARK: Delivery marks

  /// Deliveries not recorded in the store yet. When the engine takes more events
  /// within `rideWindow`, that commit records them (`recordMarks(in:)`, as does any write of
  /// the engine's); otherwise the mark wake records them at once, in a commit of their own,
  /// once the engine is idle (at the latest `markDelay` after the first). Until then their
  /// entries stay in the outbox, so a crash delivers them again: at most the deliveries of the
  /// last `rideWindow`, when events fall due that densely.
  let unrecorded = UnrecordedDeliveries()
  private var markWake: (any ScheduledWake)?
  /// How long a delivery may wait for a write to ride in before it gets a commit of its own.
  static let markDelay: TimeInterval = 1
  /// Deliveries ride in the next wake's commit when it comes this soon (the engine sets a
  /// longer one in a fleet, where a commit of their own costs a transaction on the shared
  /// database: `FleetRole.deliveryRecordWindow`).
  var rideWindow: TimeInterval = rideWindowAlone
  /// The window of a daemon of its own: a crash delivers again at most what fell due that
  /// densely.
  static let rideWindowAlone: TimeInterval = 0.005

  /// Deliveries not recorded in the store yet.
  var unrecordedCount: Int { unrecorded.count }

  /// Whether the entry is with this queue already: held back, or delivered and not recorded.
  func isPending(_ id: EventID) -> Bool {
    unrecorded.contains(id) || backlog.contains(id)
  }

  private func addMarks(_ ids: [EventID], nextDue: Date? = nil) {
    guard !ids.isEmpty else { return }
    let now = scheduler.clock.now()
    unrecorded.insert(ids, at: now)
    let rides = nextDue.map { $0.timeIntervalSince(now) <= rideWindow } ?? false
    armMarkWake(after: rides ? Self.markDelay : 0)
  }

  private var markWakeDelay: TimeInterval?

  /// Arms the mark wake, or brings it forward to `delay`.
  private func armMarkWake(after delay: TimeInterval) {
    guard !stopped, unrecordedCount > 0 else { return }
    if markWake != nil {
      guard let armed = markWakeDelay, delay < armed else { return }
      markWake?.cancel()
    }
    markWakeDelay = delay
    markWake = scheduler.schedule(after: delay, label: "record deliveries") { [weak self] in
      guard let self else { return }
      self.markWake = nil
      self.markWakeDelay = nil
      self.writeMarks()
    }
  }

  /// Records the pending deliveries in `txn`, a write of the engine's; returns them, for
  /// `marksRecorded` once `txn` has committed. May run more than once for one write.
  func recordMarks(in txn: any TrialWriteTransaction) throws -> [EventID] {
    // In id order, which visits the ledger's pages in key order.
    let marks = unrecorded.all.sorted { $0.key < $1.key }
    try TrialBook.markDelivered(in: txn, marks.lazy.map { (id: $0.key, at: $0.value) })
    return marks.map(\.key)
  }

  /// These deliveries are in the store.
  func marksRecorded(_ ids: [EventID]) {
    guard !ids.isEmpty else { return }
    unrecorded.remove(ids)
    guard unrecordedCount == 0 else { return }
    markWake?.cancel()
    markWake = nil
    markWakeDelay = nil
  }

  /// Commits the deliveries not recorded yet in a write of their own, on the engine's commit
  /// lane; set by the engine.
  var commitMarks: ((@escaping (Result<Void, any Error>) -> Void) -> Void)?

  /// The mark wake's action: the deliveries in a commit of their own.
  private func writeMarks() {
    commitMarks? { [weak self] result in
      guard let self, case .failure(let error) = result else { return }
      if !error.isStoreFault {
        self.logger.error(
          "could not record deliveries; will try again",
          metadata: ["error": "\(error)", "count": "\(self.unrecordedCount)"])
      }
      self.armMarkWake(after: self.retryDelay.timeInterval)
    }
  }

  /// Delivers what is held now rather than at the wake (after a reload changed the pace).
  func resumeNow() {
    guard backlog.isHolding, !stopped else { return }
    backlog.wake?.cancel()
    resume()
  }

  /// Stops the wakes; deliveries not recorded yet wait for the engine's last write.
  func stop() {
    stopped = true
    backlog.wake?.cancel()
    backlog.wake = nil
    markWake?.cancel()
    markWake = nil
    markWakeDelay = nil
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
        let held = backlog.slice(from: consumed, limit: Self.chunk)
        let (events, trials) = try repository.read { txn in
          try Self.loggedEvents(held.map { ($0.id, $0.cursor) }, in: txn)
        }
        let run = offer(events, trials)
        delivered += run.delivered
        if let stopped = run.stop {
          consumed += held.firstIndex { $0.id == events[stopped.index].id }!
          stop = stopped.cause
        } else {
          consumed += held.count
        }
      }
      addMarks(delivered)
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
    holdChanged()
    logger.notice(
      "delivered the held events",
      metadata: ["count": "\(count)", "held_for": "\(TimeSpan.format(.seconds(heldFor), style: .brief))"])
  }

  /// Offers each event to every sink until one stops.
  private func offer(_ events: [LoggedEvent], _ trials: [Trial?]) -> (
    delivered: [EventID], stop: (index: Int, cause: Stop)?
  ) {
    var delivered: [EventID] = []
    delivered.reserveCapacity(events.count)
    for (index, (event, trial)) in zip(events, trials).enumerated() {
      do {
        for sink in sinks { try sink.deliver(event, trial: trial) }
        delivered.append(event.id)
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
    // What is logged: at `level` when the hold is news, with `detail` added to the metadata. A
    // deferral names its time; a failure is tried again after the retry delay.
    let until: TimeInterval
    let cause: DeliveryBacklog.Cause
    let level: Logger.Level
    let message: Logger.Message
    let detail: (key: String, value: String)
    switch stop {
    case .deferred(let deferral):
      (until, cause, level) = (deferral.until, .deferred(deferral.reason), .notice)
      (message, detail) = ("holding events back from the journal", ("reason", deferral.reason))
    case .sinkFailed(let error), .storeFailed(let error):
      (until, level, detail) = (now + retryDelay.timeInterval, .error, ("error", "\(error)"))
      if case .sinkFailed = stop {
        (cause, message) = (.sinkFailed, "could not deliver events; keeping them in the outbox")
      } else {
        (cause, message) = (.storeFailed, "could not read or record deliveries; will deliver again")
      }
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
    if news { holdChanged() }
  }
}
