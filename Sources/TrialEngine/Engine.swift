import FoundationEssentials
import Logging
import TrialCore

/// The scheduling engine: owns the planner, fires due events exactly once, delivers them.
/// Beside it, its duties (`EngineDuties`) keep the log's and the trials' retention, memory, the
/// status and the far trials' look-ahead, each on timers of its own.
///
/// Every method must be called on the one serial context that also runs the scheduler's
/// actions (the daemon's queue; in tests, the test itself). The engine never reads the
/// system time: `now` comes from the scheduler's clock, and the timer it arms is only a
/// wake-up hint — every wake re-reads the clock and takes whatever is due. Every write goes
/// through the commit lane, asynchronously (one at stop waits): the engine's context never
/// waits for a commit.
public final class Engine {
  public let repository: any TrialRepository
  public private(set) var settings: EngineSettings
  public internal(set) var planner: Planner
  let scheduler: any WakeScheduler
  let ids: any TrialIDGenerator
  /// How plans that grant a trial once fold subjects (`SubjectKey=`).
  let folding: SubjectFolding
  /// Where the engine's writes are carried out, off its context (see `CommitLane`).
  public let commits: any CommitLane
  /// The sinks, and the events held back from them (journald's rate limit, a failing sink).
  let delivery: DeliveryQueue
  public weak var observer: (any EngineObserver)?
  let logger: Logger

  /// The one timer, armed at the planner's next deadline; and, after a failed commit or read,
  /// the retry that holds it.
  private var wake: (any ScheduledWake)?
  private var armedDeadline: Date?
  private var retryWake: (any ScheduledWake)?
  /// The wall and monotonic times of the last wake, to tell a wall-clock step.
  private var reference: (wall: Date, uptime: TimeInterval)?
  public private(set) var stopped = false
  /// The I/O error that stopped the engine's writes (`CommitLane`), if one did: the engine
  /// stopped with it, and only a new process writes again.
  public private(set) var storeFailure: (any Error)?
  /// Told of every event logged, in cursor order.
  var logObservers: [any EventLogObserver] = []
  /// The newest event handed to the log observers.
  public internal(set) var publishedThrough = EventCursor.origin
  /// In a fleet, this node's part (see `FleetRole`): which trials it fires, how it hears of the
  /// shared log; nil for a daemon of its own, which fires every trial's.
  public var fleet: FleetRole? {
    didSet { delivery.rideWindow = fleet?.deliveryRecordWindow ?? DeliveryQueue.rideWindowAlone }
  }
  /// Trials by state and open trials by plan: changed only by the transitions the commits
  /// report (`TrialWriteTransaction.transitions`), whatever wrote them.
  public internal(set) var trials = TrialStateCounts()
  /// What the engine logged since start, by kind and outcome, and how late its timer fired
  /// (the metrics; see `EventTally`).
  public internal(set) var tally = EventTally()
  /// Where commands enter from any thread (a connection's), straight to the lane.
  public private(set) lazy var intake = CommandIntake(engine: self, defaults: settings.defaults)
  lazy var duties = EngineDuties(
    status: StatusDuty(engine: self), pruning: PruningDuty(engine: self),
    retention: RetentionDuty(engine: self), memory: MemoryDuty(engine: self),
    lookahead: LookaheadDuty(engine: self), webhooks: WebhookDuty(engine: self),
    storeFaults: StoreFaultDuty(engine: self))

  public init(
    repository: any TrialRepository, scheduler: any WakeScheduler,
    settings: EngineSettings = EngineSettings(), ids: any TrialIDGenerator = RandomTrialIDGenerator(),
    folding: SubjectFolding = .ascii, sinks: [any EventSink] = [], commits: (any CommitLane)? = nil,
    logger: Logger = Logger(label: "trialwatch.engine")
  ) {
    self.repository = repository
    self.commits = commits ?? ImmediateCommitLane(repository: repository)
    self.scheduler = scheduler
    self.settings = settings
    self.ids = ids
    self.folding = folding
    self.delivery = DeliveryQueue(repository: repository, scheduler: scheduler, sinks: sinks, logger: logger)
    self.logger = logger
    self.planner = Planner(policy: settings.policy)
    let delivery = self.delivery
    self.commits.hooks = CommitHooks(
      prelude: { txn in try delivery.recordMarks(in: txn) },
      committed: { [weak self] record in
        delivery.marksRecorded(record.deliveries)
        self?.committed(record.transitions)
        self?.duties.storeFaults.committed()
      },
      settled: { [weak self] in self?.settled() },
      refused: { [weak self] error, writes in self?.duties.storeFaults.refused(error, writes: writes) },
      storeFailed: { [weak self] error in self?.storeFailed(error) })
    delivery.commitMarks = { [weak self] completion in
      // The prelude records them; the engine shows nothing of it.
      self?.commits.submit(ClosureWrite({ _ in () }, isBookkeeping: true, completion: completion))
    }
    delivery.holdChanged = { [weak self] in self?.duties.status.publish() }
    _ = intake  // made here, on the engine's context: read from other threads from now on
  }

  public var clock: any WallClock { scheduler.clock }

  public func addSink(_ sink: any EventSink) {
    delivery.add(sink)
  }

  /// Trials by state.
  public var counts: [TrialState: Int] { trials.byState }
  /// Open trials by plan.
  public var openByPlan: OpenTrialsByPlan { trials.openByPlan }

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
    duties.lookahead.reset()
    if fleet == nil, let lookahead = settings.lookahead { planner.holdFar(lookahead: lookahead, now: now) }
    let summary = try repository.restore(into: &planner, progress: progress)
    trials = TrialStateCounts(
      byState: summary.byState,
      openByPlan: OpenTrialsByPlan(cohorts: try repository.read { try $0.cohorts(from: .min, through: .max) })
    )
    report.trials = summary.trials
    let outbox = try repository.outbox()
    report.redelivered = outbox.count
    if !outbox.isEmpty {
      beforeRedelivery()
      logger.notice("delivering events taken before the last stop", metadata: ["count": "\(outbox.count)"])
      try delivery.redeliver(outbox, retryDelay: settings.retryDelay)
    }
    let log = try repository.read { try $0.eventLogBounds() }
    publishedThrough = log.last
    report.caughtUp = fireDue(at: now)
    // READY=1 comes after the catch-up is durable and delivered.
    commits.drain()
    report.activeTrials = counts[.active, default: 0]
    reference = (now, scheduler.monotonicNow)
    for duty in duties.all { duty.configure(settings, was: nil) }
    if log.count > 0 { duties.pruning.schedule(at: now) }
    return report
  }

  /// Applies new settings (after a reload). The catch-up policy and defaults apply from now on.
  public func reload(_ newSettings: EngineSettings) {
    let old = settings
    settings = newSettings
    intake.defaults = newSettings.defaults
    planner.policy = newSettings.policy
    for duty in duties.all { duty.configure(newSettings, was: old) }
  }

  /// Refuses further writes and waits for every write in progress (their events are
  /// delivered); then stops arming timers and records, in the one write the engine waits for,
  /// the wall time last seen and the deliveries made.
  public func stop() {
    guard !stopped else { return }
    commits.close()
    commits.drain()
    halt()
    // After an I/O error, nothing more is written (`storeFailed`).
    guard storeFailure == nil else { return }
    do {
      let now = clock.now()
      try commits.perform { try $0.setLastSeenWallTime(now) }
    } catch {
      logger.error(
        "could not record the deliveries made; they will be delivered again at start",
        metadata: ["error": "\(error)", "count": "\(delivery.unrecordedCount)"])
    }
  }

  /// Arms nothing from now on: no timer, no duty, no delivery.
  private func halt() {
    stopped = true
    for item in [wake, retryWake] { item?.cancel() }
    wake = nil
    retryWake = nil
    for duty in duties.all { duty.stop() }
    delivery.stop()
  }

  /// A commit failed with an I/O error, and the lane takes no write from now on (see
  /// `CommitLane`): the engine stops where it is, writing nothing more (not even at `stop`),
  /// and tells its host, which ends the process so that a new one starts from what is durable
  /// on disk. Runs before the failed writes' completions, so a failed firing is not retried.
  private func storeFailed(_ error: any Error) {
    guard storeFailure == nil else { return }
    storeFailure = error
    halt()
    observer?.engineStoreFailed(error)
  }

  // MARK: Commits

  /// A transaction of the lane is durable: the changes of trials' states it wrote count now,
  /// before its writes' completions run.
  private func committed(_ transitions: [TrialTransition]) {
    duties.memory.wrote()
    guard !transitions.isEmpty else { return }
    trials.apply(transitions)
    if transitions.contains(where: { $0.to?.isEnded == true }) {
      duties.retention.trialEnded(at: clock.now())
    }
  }

  /// A transaction's writes are taken in: the timer follows the planner, the status and the
  /// snapshot the change; then the changes are answered (`CommitWrite.settled`), so that a
  /// client that reads after its answer sees the change.
  private func settled() {
    arm()
    duties.status.publish()
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

  /// Takes everything due at `now` and hands its commit to the lane; re-arms. The events are
  /// delivered once the commit is done (`fired`), while the engine is free to wake for the
  /// next ones. Returns how many were taken.
  @discardableResult
  private func fireDue(at now: Date) -> Int {
    if !duties.lookahead.holdAhead(at: now) { scheduleRetry() }
    let due = planner.takeDue(at: now)
    if !due.isEmpty {
      commits.submit({ txn in try TrialBook.take(in: txn, due, now: now) }) { [weak self] result in
        self?.fired(due, result)
      }
    }
    arm()
    return due.count
  }

  /// The commit of taken events is done: delivers them, or puts them back for a retry.
  private func fired(_ due: [DueEvent], _ result: Result<[TakenEvent], any Error>) {
    let taken: [TakenEvent]
    switch result {
    case .success(let value): taken = value
    case .failure(let error):
      // An I/O error stopped the engine (`storeFailed`): nothing is retried.
      guard storeFailure == nil else { return }
      if !error.isStoreFault {
        logger.error(
          "could not record due events; will retry", metadata: ["error": "\(error)", "count": "\(due.count)"])
      }
      replan(Set(due.map(\.event.trialID)))
      // Hold the timer until the retry: re-arming at the overdue deadline would spin.
      wake?.cancel()
      wake = nil
      armedDeadline = nil
      scheduleRetry()
      return
    }
    // Beside the events due, a resume (a pause run out) records the reminders it skipped, and an
    // end the milestones it skipped: logged and delivered already, not journaled.
    let skippedAtResume = taken.count { Self.isSkippedAtResume($0.logged.entry) }
    if taken.count - skippedAtResume < due.count { replanRefused(due, taken: taken) }
    let delivering = skippedAtResume == 0 ? taken : taken.filter { !Self.isSkippedAtResume($0.logged.entry) }
    tally.taken(delivering.lazy.map(\.logged.entry))
    for (entry, trial) in taken.lazy.map({ ($0.logged.entry, $0.trial) }) where entry.fired {
      // A pause ran out: the trial is planned again from the moment it resumed.
      if case .resumed = entry.event.kind {
        planner.add(trial, now: entry.event.due, reason: .alreadyDueAtResume)
      }
    }
    published(taken.map(\.logged))
    delivery.deliver(
      delivering.map(\.logged), trials: delivering.map(\.trial), retryDelay: settings.retryDelay,
      nextDue: planner.nextEventDue)
  }

  /// Recorded beside the events due, delivered already: the reminders and milestones a resume
  /// skipped, the milestones an end skipped.
  private static func isSkippedAtResume(_ entry: LedgerEntry) -> Bool {
    switch entry.outcome {
    case .skipped(.alreadyDueAtResume), .skipped(.trialEnded): true
    default: false
    }
  }

  /// A store shared by a fleet may refuse due events (`admit`): not due yet by its clock, or
  /// of a shard this node no longer owns. The first kind goes back into the planner.
  private func replanRefused(_ due: [DueEvent], taken: [TakenEvent]) {
    guard let fleet else { return }
    let recorded = Set(taken.map(\.logged.id))
    let refused = Set(due.lazy.filter { !recorded.contains($0.event.id) }.map(\.event.trialID))
    replan(refused.filter(fleet.owns))
  }

  /// Puts trials back into the planner from the store, after a failed commit took them out.
  func replan(_ trialIDs: Set<TrialID>) {
    do {
      try repository.read { txn in
        for id in trialIDs {
          guard let trial = try txn.trial(id) else { continue }
          planner.restore(trial, ledger: try txn.ledgerEntries(trial: id))
        }
      }
    } catch {
      // A store that refuses writes may refuse reads too (a fleet's database away): the engine
      // reads the trials again when it is back, and its refusals are logged already.
      if !error.isStoreFault {
        logger.critical("could not re-read trials after a failed commit", metadata: ["error": "\(error)"])
      }
    }
  }

  /// Delivers held events now, without waiting for their wake (the pace changed).
  public func resumeDelivery() {
    delivery.resumeNow()
  }

  /// Events taken but waiting for the sinks: journald's rate limit, or a failing sink.
  public var heldEvents: Int { delivery.heldCount }

  /// Events held back from the sinks (journald's rate limit, a failing sink), from any thread.
  public var heldGauge: SharedCount { delivery.held }

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

  // MARK: Memory

  /// Called on the engine's context once writes have gone quiet (`EngineSettings.memoryQuiet`
  /// after the last): the daemon lets go of memory they left resident there (the store's
  /// mapped pages, free heap). Nil: nothing to do, no wake for it.
  public var releaseMemory: (() -> Void)? {
    get { duties.memory.release }
    set { duties.memory.release = newValue }
  }

  /// Start-up leaves behind what a spell of writes does: counted as a write, so that the memory
  /// is let go once it has gone quiet.
  public func wrote() { duties.memory.wrote() }
}
