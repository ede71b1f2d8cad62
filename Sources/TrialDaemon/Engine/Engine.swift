import FoundationEssentials
import Logging
import TrialCore

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
  let ids: any TrialIDGenerator
  /// How plans that grant a trial once fold subjects (`SubjectKey=`).
  let folding: SubjectFolding
  /// Where the engine's writes are carried out, off its context (see `CommitLane`).
  public let commits: any CommitLane
  /// The sinks, and the events held back from them (journald's rate limit, a failing sink).
  let delivery: DeliveryQueue
  public weak var observer: (any EngineObserver)?
  let logger: Logger

  private var wake: (any ScheduledWake)?
  private var armedDeadline: Date?
  var watchdogWake: (any ScheduledWake)?
  /// The watchdog ping is withheld while a write is stuck (see `watchdogTick`).
  var watchdogWithheld = false
  var statusWake: (any ScheduledWake)?
  var lastStatusUptime: TimeInterval?
  var lastStatus: String?
  /// The subject of the trial the status line names, read once for each trial it names.
  var statusSubject: (id: TrialID, subject: String)?
  /// The far trial whose event comes first, as read from the store, and the planner's
  /// `nextFarTrialStamp` then (see `nextPendingEvent`).
  var farNext: (stamp: UInt64, event: TrialEvent, trial: Trial)?
  private var retryWake: (any ScheduledWake)?
  var flushWake: (any ScheduledWake)?
  var pendingCommands: [(TrialCommand, (Result<CommandResult, any Error>) -> Void)] = []
  private var reference: (wall: Date, uptime: TimeInterval)?
  private(set) var stopped = false
  /// Told of every event logged, in cursor order.
  var logObservers: [any EventLogObserver] = []
  /// The newest event handed to the log observers.
  public internal(set) var publishedThrough = EventCursor.origin
  var pruneWake: (any ScheduledWake)?
  /// Called on the engine's context once writes have gone quiet (`EngineSettings.memoryQuiet`
  /// after the last): the daemon lets go of memory they left resident there (the store's
  /// mapped pages, free heap). Nil: nothing to do, no wake for it.
  public var releaseMemory: (() -> Void)?
  var memoryWake: (any ScheduledWake)?
  /// When the last write was done (the scheduler's monotonic time).
  var lastWrite: TimeInterval?
  /// Where the snapshot for reads off the engine's queue is published; nil until asked for
  /// (`snapshots()`).
  var snapshotCell: EngineSnapshots?
  var pruneAt: Date?
  /// The retention of ended trials (`Engine+Retention`): its wake, when it is armed for, and
  /// whether a pass is under way.
  var retireWake: (any ScheduledWake)?
  var retireAt: Date?
  var retiring = false
  /// The earliest end of an ended trial not yet of age that the pass under way knows of.
  var retireEarliest: Date?

  /// In a fleet, this node's part (see `FleetRole`): which trials it fires, how it hears of the
  /// shared log; nil for a daemon of its own, which fires every trial's.
  public var fleet: FleetRole? {
    didSet { delivery.rideWindow = fleet?.deliveryRecordWindow ?? DeliveryQueue.rideWindowAlone }
  }

  /// Trials by state, kept current as trials start, end and expire.
  public internal(set) var counts: [TrialState: Int] = [:]
  /// How many events were fired and skipped since start.
  public private(set) var firedCount = 0
  public private(set) var skippedCount = 0
  /// What the engine logged since start, by kind and outcome, and how late its timer fired
  /// (the metrics; see `EventTally`).
  public internal(set) var tally = EventTally()
  /// Open trials by plan, as `counts` by state.
  public internal(set) var openByPlan = OpenTrialsByPlan()

  public init(
    repository: any TrialRepository, scheduler: any WakeScheduler,
    settings: EngineSettings = EngineSettings(), ids: any TrialIDGenerator = RandomTrialIDGenerator(),
    folding: SubjectFolding = .unicode, sinks: [any EventSink] = [], commits: (any CommitLane)? = nil,
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
      committed: { [weak self] in
        delivery.marksRecorded($0)
        self?.wrote()
      })
    delivery.commitMarks = { [weak self] completion in self?.commitMarks(completion) }
    delivery.holdChanged = { [weak self] in self?.publishStatus() }
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
    farNext = nil
    if fleet == nil, let lookahead = settings.lookahead { planner.holdFar(lookahead: lookahead, now: now) }
    let summary = try repository.restore(into: &planner, progress: progress)
    counts = summary.byState
    openByPlan = OpenTrialsByPlan(cohorts: try repository.read { try $0.cohorts(from: .min, through: .max) })
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
    // READY=1 comes after the catch-up is durable and delivered.
    commits.drain()
    report.activeTrials = counts[.active, default: 0]
    reference = (now, scheduler.monotonicNow)
    scheduleWatchdog()
    if log.count > 0 { schedulePrune(at: now) }
    if settings.trialRetention != nil { scheduleRetire(at: now.adding(settings.trialRetentionStartDelay)) }
    publishStatus(force: true)
    return report
  }

  /// Applies new settings (after a reload). The catch-up policy and defaults apply from now on.
  public func reload(_ newSettings: EngineSettings) {
    let watchdogChanged = newSettings.watchdogInterval != settings.watchdogInterval
    let retentionChanged = newSettings.retention != settings.retention
    let trialRetentionChanged = newSettings.trialRetention != settings.trialRetention
    settings = newSettings
    planner.policy = newSettings.policy
    if watchdogChanged { scheduleWatchdog() }
    if retentionChanged { schedulePrune(at: clock.now()) }
    if trialRetentionChanged { restartRetention(newSettings.trialRetention) }
    publishStatus(force: true)
  }

  /// Commits the commands queued and waits for every write in progress (their events are
  /// delivered); then stops arming timers and records the wall time last seen.
  public func stop() {
    guard !stopped else { return }
    flushCommands()
    commits.drain()
    stopped = true
    for item in [wake, watchdogWake, statusWake, retryWake, flushWake, pruneWake, memoryWake, retireWake] {
      item?.cancel()
    }
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

  /// Takes everything due at `now` and hands its commit to the lane; re-arms. The events are
  /// delivered once the commit is done (`fired`), while the engine is free to wake for the
  /// next ones. Returns how many were taken.
  @discardableResult
  private func fireDue(at now: Date) -> Int {
    holdAhead(at: now)
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
      logger.error(
        "could not record due events; will retry", metadata: ["error": "\(error)", "count": "\(due.count)"])
      replan(Set(due.map(\.event.trialID)))
      // Hold the timer until the retry: re-arming at the overdue deadline would spin.
      wake?.cancel()
      wake = nil
      armedDeadline = nil
      scheduleRetry()
      return
    }
    // Beside the events due, a resume (a pause run out) records the reminders it skipped: logged
    // and delivered already, not journaled.
    let skippedAtResume = taken.count { Self.isSkippedAtResume($0.logged.entry) }
    if taken.count - skippedAtResume < due.count { replanRefused(due, taken: taken) }
    let delivering = skippedAtResume == 0 ? taken : taken.filter { !Self.isSkippedAtResume($0.logged.entry) }
    tally.taken(delivering.lazy.map(\.logged.entry))
    for (entry, trial) in taken.lazy.map({ ($0.logged.entry, $0.trial) }) {
      if entry.fired { firedCount += 1 } else { skippedCount += 1 }
      guard entry.fired else { continue }
      switch entry.event.kind {
      case .expiry:
        counts[.active, default: 0] -= 1
        counts[.expired, default: 0] += 1
        openByPlan.move(trial.plan, from: .active, to: nil)
        trialEnded(at: entry.takenAt)
      case .resumed:
        // A pause ran out: the trial is planned again from the moment it resumed.
        counts[.paused, default: 0] -= 1
        counts[.active, default: 0] += 1
        openByPlan.move(trial.plan, from: .paused, to: .active)
        planner.add(trial, now: entry.event.due, reason: .alreadyDueAtResume)
      case .reminder, .paused:
        break
      }
    }
    published(taken.map(\.logged))
    deliver(delivering.map(\.logged.entry), trials: delivering.map(\.trial))
    publishStatus()
    arm()
  }

  private static func isSkippedAtResume(_ entry: LedgerEntry) -> Bool {
    if case .skipped(.alreadyDueAtResume) = entry.outcome { true } else { false }
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
      logger.critical("could not re-read trials after a failed commit", metadata: ["error": "\(error)"])
    }
  }

  /// Reads back from the store, and holds in full, the far trials whose events come within the
  /// planner's lookahead (see `Planner+Far.swift`). When the store cannot be read, they stay
  /// far and the engine tries again after the retry delay.
  private func holdAhead(at now: Date) {
    let ids = planner.farTrialsToHold(at: now)
    guard !ids.isEmpty else {
      planner.moveHorizon(at: now, lettingGo: [])
      return
    }
    do {
      let read = try repository.read { txn in
        try ids.compactMap { id in try txn.trial(id).map { ($0, try txn.ledgerEntries(trial: id)) } }
      }
      planner.moveHorizon(at: now, lettingGo: ids)
      for (trial, ledger) in read { planner.restore(trial, ledger: ledger) }
    } catch {
      logger.error(
        "could not read the trials falling due soon; will retry",
        metadata: ["error": "\(error)", "count": "\(ids.count)"])
      scheduleRetry()
    }
  }

  /// Hands taken entries to the sinks, in order, behind any held back (see `DeliveryQueue`).
  func deliver(_ entries: [LedgerEntry], trials: [Trial?]) {
    delivery.deliver(entries, trials: trials, retryDelay: settings.retryDelay, nextDue: planner.nextEventDue)
  }

  /// A write transaction of its own, behind the writes in progress, waited for; it also
  /// records the deliveries made since the last write (see `CommitLane`).
  func write<R>(_ body: (any TrialWriteTransaction) throws -> R) throws -> R {
    try commits.perform(body)
  }

  /// Records the deliveries made since the last write, in a commit of their own (when no
  /// other write comes soon enough to carry them; see `DeliveryQueue`).
  func commitMarks(_ completion: @escaping (Result<Void, any Error>) -> Void) {
    commits.submit({ _ in () }, completion: completion)
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
}
