import Foundation
import Logging
import TrialCore

/// A change to trials, asked for by a client.
public enum TrialCommand: Hashable, Sendable {
  /// Starts a trial. With neither `length` nor `endsAt`, the configured default length.
  case start(subject: String, length: Days?, endsAt: Date?, reminders: ReminderSchedule?)
  /// Moves the end: by a span from the current end, or to a date.
  case extend(TrialID, by: Days?, endsAt: Date?)
  case end(TrialID, TrialOutcome)
}

/// A command carried out: the trial as it now is, and reminders skipped because already due.
public struct CommandResult: Hashable, Sendable {
  public var trial: Trial
  public var skipped: [DueEvent]
}

/// The scheduling engine: owns the planner, fires due events exactly once, delivers them.
///
/// Every method must be called on the one serial context that also runs the scheduler's
/// actions (the daemon's queue; in tests, the test itself). The engine never reads the
/// system time: `now` comes from the scheduler's clock, and the timer it arms is only a
/// wake-up hint — every wake re-reads the clock and takes whatever is due.
public final class Engine {
  public let repository: any TrialRepository
  public private(set) var settings: EngineSettings
  public internal(set) var planner: Planner
  let scheduler: any WakeScheduler
  private let ids: any TrialIDGenerator
  /// The sinks, and the events held back from them (journald's rate limit, a failing sink).
  let delivery: DeliveryQueue
  public weak var observer: (any EngineObserver)?
  let logger: Logger

  private var wake: (any ScheduledWake)?
  private var armedDeadline: Date?
  var watchdogWake: (any ScheduledWake)?
  var statusWake: (any ScheduledWake)?
  var lastStatusUptime: TimeInterval?
  var lastStatus: String?
  private var retryWake: (any ScheduledWake)?
  private var flushWake: (any ScheduledWake)?
  private var pendingCommands: [(TrialCommand, (Result<CommandResult, any Error>) -> Void)] = []
  private var reference: (wall: Date, uptime: TimeInterval)?
  private(set) var stopped = false
  /// Told of every event logged, in cursor order.
  var logObservers: [any EventLogObserver] = []
  /// The newest event handed to the log observers.
  public internal(set) var publishedThrough = EventCursor.origin
  /// In a fleet: wakes the reader of the shared log, which hands the observers what every
  /// node logged (`handOverFollowed`), so that the engine's queue never waits for that read.
  public var logFollower: (@Sendable () -> Void)?
  /// Whether the snapshot carries the next event's subject, read after every change. Off in
  /// a fleet, where that read crosses the network: `GetStatus` reads it when asked.
  public var resolvesNextSubject = true
  var pruneWake: (any ScheduledWake)?
  /// Where the snapshot for reads off the engine's queue is published; nil until asked for
  /// (`snapshots()`).
  var snapshotCell: EngineSnapshots?
  var pruneAt: Date?

  /// In a fleet, whether this node fires the trial's events (it owns the trial's shard);
  /// nil for a daemon of its own, which fires every trial's.
  public var owns: ((TrialID) -> Bool)?

  /// Trials by state, kept current as trials start, end and expire.
  public internal(set) var counts: [TrialState: Int] = [:]
  /// How many events were fired and skipped since start.
  public private(set) var firedCount = 0
  public private(set) var skippedCount = 0

  public init(
    repository: any TrialRepository, scheduler: any WakeScheduler,
    settings: EngineSettings = EngineSettings(), ids: any TrialIDGenerator = RandomTrialIDGenerator(),
    sinks: [any EventSink] = [], logger: Logger = Logger(label: "trialwatch.engine")
  ) {
    self.repository = repository
    self.scheduler = scheduler
    self.settings = settings
    self.ids = ids
    self.delivery = DeliveryQueue(repository: repository, scheduler: scheduler, sinks: sinks, logger: logger)
    self.logger = logger
    self.planner = Planner(policy: settings.policy)
  }

  public var clock: any WallClock { scheduler.clock }

  public func addSink(_ sink: any EventSink) {
    delivery.add(sink)
  }

  // MARK: Life cycle

  /// What start-up found and did.
  public struct StartReport: Hashable, Sendable {
    public var trials = 0
    public var activeTrials = 0
    /// Events taken before the daemon was stopped but never delivered, delivered now.
    public var redelivered = 0
    /// Events that fell due while the daemon was down: fired or skipped at start.
    public var caughtUp = 0
    /// The wall clock stood earlier than the last time the store saw it.
    public var backwardStep: ClockStep?
  }

  /// A wall-clock step: where the clock should have been, and where it was.
  public struct ClockStep: Hashable, Sendable {
    public var from: Date
    public var to: Date
  }

  /// Loads the store, delivers what a previous run left undelivered, fires what fell due
  /// while the daemon was down, and arms the timer. The daemon sends `READY=1` after this.
  /// `beforeRedelivery` is called, before they are delivered, when a previous run left
  /// events undelivered.
  public func start(progress: (Int) -> Void = { _ in }, beforeRedelivery: () -> Void = {}) throws
    -> StartReport
  {
    var report = StartReport()
    let now = clock.now()
    if let lastSeen = try repository.read({ try $0.lastSeenWallTime() }),
      now.duration(since: lastSeen) < .zero - settings.stepTolerance
    {
      report.backwardStep = ClockStep(from: lastSeen, to: now)
      logger.warning(
        "wall clock is behind the last time seen by the store",
        metadata: ["last_seen": "\(lastSeen)", "now": "\(now)"])
      observer?.engineDetectedClockStep(from: lastSeen, to: now)
    }
    planner = Planner(policy: settings.policy)
    let summary = try repository.restore(into: &planner, progress: progress)
    counts = summary.byState
    report.trials = summary.trials
    let outbox = try repository.outbox()
    report.redelivered = outbox.count
    if !outbox.isEmpty {
      beforeRedelivery()
      logger.notice("delivering events taken before the last stop", metadata: ["count": "\(outbox.count)"])
      let trials = try repository.read { txn in try outbox.map { try txn.trial($0.event.trialID) } }
      deliver(outbox, trials: trials)
    }
    let log = try repository.read { try $0.eventLogBounds() }
    publishedThrough = log.last
    report.caughtUp = fireDue(at: now)
    report.activeTrials = counts[.active, default: 0]
    reference = (now, scheduler.monotonicNow)
    scheduleWatchdog()
    if log.count > 0 { schedulePrune(at: now) }
    publishStatus(force: true)
    return report
  }

  /// Applies new settings (after a reload). The catch-up policy and defaults apply from now on.
  public func reload(_ newSettings: EngineSettings) {
    let watchdogChanged = newSettings.watchdogInterval != settings.watchdogInterval
    let retentionChanged = newSettings.retention != settings.retention
    settings = newSettings
    planner.policy = newSettings.policy
    if watchdogChanged { scheduleWatchdog() }
    if retentionChanged { schedulePrune(at: clock.now()) }
    publishStatus(force: true)
  }

  /// Stops arming timers; records the wall time last seen. Commands still queued fail.
  public func stop() {
    guard !stopped else { return }
    flushCommands()
    stopped = true
    for item in [wake, watchdogWake, statusWake, retryWake, flushWake, pruneWake] { item?.cancel() }
    delivery.stop()
    wake = nil
    do {
      try write { try $0.setLastSeenWallTime(clock.now()) }
    } catch {
      logger.error(
        "could not record the deliveries made; they will be delivered again at start",
        metadata: ["error": "\(error)", "count": "\(delivery.unrecordedCount)"])
    }
  }

  // MARK: Firing

  /// The timer's action and the clock-step handler: re-reads the clock, takes all that is due.
  public func wakeUp() {
    guard !stopped else { return }
    let now = clock.now()
    detectStep(now: now)
    _ = fireDue(at: now)
  }

  /// Called when the system reports a wall-clock change (timerfd cancel-on-set): takes
  /// whatever became due at once and re-arms for the new wall time.
  public func clockChanged() {
    wakeUp()
  }

  private func detectStep(now: Date) {
    let uptime = scheduler.monotonicNow
    defer { reference = (now, uptime) }
    guard let reference else { return }
    let expected = reference.wall.addingTimeInterval(uptime - reference.uptime)
    if abs(now.timeIntervalSince(expected)) > settings.stepTolerance.timeInterval {
      logger.notice(
        "wall clock stepped",
        metadata: [
          "expected": "\(expected)", "now": "\(now)", "offset_s": "\(now.timeIntervalSince(expected))",
        ])
      observer?.engineDetectedClockStep(from: expected, to: now)
    }
  }

  /// Takes, commits and delivers everything due at `now`; re-arms. Returns how many were taken.
  @discardableResult
  private func fireDue(at now: Date) -> Int {
    let due = planner.takeDue(at: now)
    if !due.isEmpty {
      let taken: [TakenEvent]
      do {
        taken = try write { txn in try TrialBook.take(in: txn, due, now: now) }
      } catch {
        logger.error(
          "could not record due events; will retry", metadata: ["error": "\(error)", "count": "\(due.count)"])
        replan(Set(due.map(\.event.trialID)))
        // Hold the timer until the retry: re-arming at the overdue deadline would spin.
        wake?.cancel()
        wake = nil
        armedDeadline = nil
        scheduleRetry()
        return 0
      }
      if taken.count < due.count { replanRefused(due, taken: taken) }
      let entries = taken.map(\.logged.entry)
      for entry in entries {
        if entry.fired { firedCount += 1 } else { skippedCount += 1 }
        if entry.fired, entry.event.kind == .expiry {
          counts[.active, default: 0] -= 1
          counts[.expired, default: 0] += 1
        }
      }
      published(taken.map(\.logged))
      deliver(entries, trials: taken.map(\.trial))
      publishStatus()
    }
    arm()
    return due.count
  }

  /// A store shared by a fleet may refuse due events (`admit`): not due yet by its clock, or
  /// of a shard this node no longer owns. The first kind goes back into the planner.
  private func replanRefused(_ due: [DueEvent], taken: [TakenEvent]) {
    guard let owns else { return }
    let recorded = Set(taken.map(\.logged.id))
    let refused = Set(due.lazy.filter { !recorded.contains($0.event.id) }.map(\.event.trialID))
    replan(refused.filter(owns))
  }

  /// Puts trials back into the planner from the store, after a failed commit took them out.
  func replan(_ trialIDs: Set<TrialID>) {
    do {
      try repository.read { txn in
        for id in trialIDs {
          guard let trial = try txn.trial(id) else { continue }
          let done = Set(
            try txn.ledgerEntries(trial: id).filter { $0.event.revision == trial.revision }.map(\.id))
          planner.restore(trial) { done.contains($0) }
        }
      }
    } catch {
      logger.critical("could not re-read trials after a failed commit", metadata: ["error": "\(error)"])
    }
  }

  /// Hands taken entries to the sinks, in order, behind any held back (see `DeliveryQueue`).
  func deliver(_ entries: [LedgerEntry], trials: [Trial?]) {
    delivery.deliver(entries, trials: trials, retryDelay: settings.retryDelay, nextDue: planner.nextDeadline)
  }

  /// A write transaction that also records the deliveries made since the last write, so that
  /// they ride in its commit rather than costing one of their own (see `DeliveryQueue`).
  func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    var recorded: [EventID] = []
    let result = try repository.write { txn in
      recorded = try delivery.recordMarks(in: txn)
      return try body(txn)
    }
    delivery.marksRecorded(recorded)
    return result
  }

  /// Delivers held events now, without waiting for their wake (the pace changed).
  public func resumeDelivery() {
    delivery.resumeNow()
  }

  /// Events taken but waiting for the sinks: journald's rate limit, or a failing sink.
  public var heldEvents: Int { delivery.heldCount }

  private func scheduleRetry() {
    guard retryWake == nil, !stopped else { return }
    retryWake = scheduler.schedule(after: settings.retryDelay.timeInterval, label: "retry") { [weak self] in
      guard let self else { return }
      self.retryWake = nil
      self.armedDeadline = nil
      self.wakeUp()
    }
  }

  /// Arms the one timer at the planner's next deadline (or disarms it).
  func arm() {
    guard !stopped, retryWake == nil else { return }
    let deadline = planner.nextDeadline
    guard deadline != armedDeadline || wake == nil else { return }
    wake?.cancel()
    wake = nil
    armedDeadline = deadline
    guard let deadline else { return }
    wake = scheduler.schedule(at: deadline, label: "due") { [weak self] in
      guard let self else { return }
      self.wake = nil
      self.armedDeadline = nil
      self.wakeUp()
    }
  }

  /// When the timer is armed for; nil when nothing is pending.
  public var nextWake: Date? { wake == nil ? nil : armedDeadline }

  // MARK: Commands (group commit)

  /// Queues a change. Changes queued before the engine's context next runs are committed
  /// together, in one durable transaction, then answered in order.
  public func submit(
    _ command: TrialCommand, completion: @escaping (Result<CommandResult, any Error>) -> Void
  ) {
    guard !stopped else {
      completion(.failure(TrialError.invalid("daemon", "the daemon is stopping")))
      return
    }
    pendingCommands.append((command, completion))
    guard flushWake == nil else { return }
    flushWake = scheduler.schedule(after: 0, label: "commit") { [weak self] in
      self?.flushWake = nil
      self?.flushCommands()
    }
  }

  /// Carries out one command at once, alone in its transaction.
  public func perform(_ command: TrialCommand) throws -> CommandResult {
    var outcome: Result<CommandResult, any Error>?
    pendingCommands.append((command, { outcome = $0 }))
    flushCommands()
    return try outcome!.get()
  }

  private func flushCommands() {
    flushWake?.cancel()
    flushWake = nil
    let batch = pendingCommands
    pendingCommands = []
    guard !batch.isEmpty else { return }
    let now = clock.now()
    var results: [Result<CommandResult, any Error>] = []
    // The reminders skipped as trials start or move, as the event log holds them.
    var logged: [LoggedEvent] = []
    do {
      (results, logged) = try write { txn in
        var logged: [LoggedEvent] = []
        let results = try batch.map { command, _ -> Result<CommandResult, any Error> in
          do {
            let (result, events) = try apply(command, in: txn, now: now)
            logged += events
            return .success(result)
          } catch let error as TrialError {
            return .failure(error)
          }
        }
        return (results, logged)
      }
    } catch {
      logger.error("could not commit changes", metadata: ["error": "\(error)", "count": "\(batch.count)"])
      results = batch.map { _ in .failure(error) }
    }
    for ((command, _), result) in zip(batch, results) {
      guard case .success(let done) = result else { continue }
      // In a fleet, the owner of another shard plans the trial when the commit wakes it.
      let planned = owns?(done.trial.id) ?? true
      switch command {
      case .start:
        if planned { planner.add(done.trial, now: now, reason: .alreadyDueAtStart) }
        counts[.active, default: 0] += 1
      case .extend:
        if planned { planner.add(done.trial, now: now, reason: .alreadyDueAtExtension) }
      case .end:
        planner.cancel(done.trial.id)
        counts[.active, default: 0] -= 1
        counts[done.trial.state, default: 0] += 1
      }
    }
    published(logged)
    arm()
    publishStatus()
    for ((_, completion), result) in zip(batch, results) { completion(result) }
  }

  /// Carries out one command; returns its result and the events it logged.
  private func apply(_ command: TrialCommand, in txn: any TrialWriteTransaction, now: Date) throws
    -> (CommandResult, [LoggedEvent])
  {
    switch command {
    case .start(let subject, let length, let endsAt, let reminders):
      let end: Date
      if let endsAt {
        end = endsAt
      } else {
        let span = length ?? settings.defaultLength
        guard span.timeInterval > 0 else { throw TrialError.invalid("duration", "must be positive") }
        end = now.addingTimeInterval(span.timeInterval)
      }
      let started = try TrialBook.startTrial(
        in: txn, subject: subject, endDate: end, reminders: reminders ?? settings.defaultReminders, now: now,
        ids: ids)
      return (CommandResult(trial: started.trial, skipped: started.skipped), started.logged)
    case .extend(let id, let by, let endsAt):
      guard let current = try txn.trial(id) else { throw TrialError.notFound(id: id) }
      let end: Date
      if let endsAt {
        end = endsAt
      } else if let by {
        guard by.timeInterval > 0 else { throw TrialError.invalid("by", "must be positive") }
        end = current.period.endDate.addingTimeInterval(by.timeInterval)
      } else {
        throw TrialError.invalid("by", "give either by or endsAt")
      }
      let extended = try TrialBook.extendTrial(in: txn, id, to: end, now: now)
      return (CommandResult(trial: extended.trial, skipped: extended.skipped), extended.logged)
    case .end(let id, let outcome):
      let trial = try TrialBook.endTrial(in: txn, id, outcome: outcome, now: now)
      return (CommandResult(trial: trial, skipped: []), [])
    }
  }
}
