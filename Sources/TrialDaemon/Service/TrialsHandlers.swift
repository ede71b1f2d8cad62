import Dispatch
import FoundationEssentials
import Synchronization
import TrialControl
import TrialControlServer
import TrialCore
import TrialEngine

/// The handlers of `io.trialwatch.Trials`. Changes go through the engine's group commit, so
/// each is durable before it is answered: commands straight from the caller's thread to the
/// commit lane (`CommandIntake`), other changes by way of the engine's queue. Reads are answered on the caller's
/// thread (the connection's), never on the engine's queue: trials, the ledger, the event log
/// and consumers from a read transaction of the store (which runs alongside a commit), and
/// what only the engine knows (counts, the next event, the catch-up policy) from the snapshot
/// it publishes after every change (`EngineSnapshots`). A read never waits for a commit. The one
/// read of the planner itself, GetOutlook, is answered on the engine's queue, which owns it: one
/// pass over it, under 10 ms with a million trials.
public final class TrialsHandlers: @unchecked Sendable {
  // @unchecked: `engine` is only touched on `queue`; the store's reads, the snapshots, the
  // clock, the hub and counters are thread-safe.
  private let engine: Engine
  /// Commands go in here, from the caller's thread.
  private let intake: CommandIntake
  private let queue: DispatchQueue
  let queries: StoreQueries
  let snapshots: EngineSnapshots
  private let clock: any WallClock
  let startedAt: Date
  let version: String
  private let storeBytes: @Sendable () -> Int?
  private let watchers: FeedHub
  /// The fleet this daemon is a node of; nil on a single host.
  private let fleetStatus: (@Sendable () -> FleetStatus?)?
  /// Connections and watchers, shared with the control server.
  public let counters = ControlCounters()
  /// The webhook methods.
  private let webhooks: WebhookHandlers

  public init(
    engine: Engine, queue: DispatchQueue, startedAt: Date, version: String,
    storeBytes: @escaping @Sendable () -> Int? = { nil }, fleetStatus: (@Sendable () -> FleetStatus?)? = nil
  ) {
    self.engine = engine
    self.intake = engine.intake
    self.queue = queue
    self.queries = engine.queries
    self.clock = engine.clock
    self.startedAt = startedAt
    self.version = version
    self.storeBytes = storeBytes
    self.fleetStatus = fleetStatus
    // Watches read the log on their connection's queue, in read transactions of their own.
    let queries = self.queries
    let read: @Sendable (EventCursor, Int) throws -> [LoggedEvent] = { after, limit in
      try queries.repository.loggedEvents(after: after, limit: limit)
    }
    // One step on the queue, so that no event is logged between reading `last` and observing.
    let bound = Bound(value: engine)
    (watchers, snapshots) = queue.sync {
      // A fleet's shared log reaches the hub through the log follower, only while a Watch runs.
      let demand = bound.value.fleet?.demand
      let head: @Sendable () throws -> EventCursor = { try queries.eventLogBounds().last }
      let hub = FeedHub(
        last: bound.value.publishedThrough, read: read, demand: demand, head: demand == nil ? nil : head)
      bound.value.addLogObserver(hub)
      return (hub, bound.value.snapshots())
    }
    webhooks = WebhookHandlers(engine: engine, queue: queue, queries: queries)
  }

  /// Every method of `io.trialwatch.Trials`, with its handler.
  public var routes: [Route] { trialRoutes + webhooks.routes }

  private var trialRoutes: [Route] {
    [
      Route(Trials.startTrial) { p, done in
        self.change(Result { () throws(TrialError) in try p.command() }, done)
      },
      Route(Trials.extendTrial) { p, done in
        self.change(Result { () throws(TrialError) in try p.command() }, done)
      },
      Route(Trials.endTrial) { p, done in
        self.change(.success(.end(p.id, p.outcome, labels: p.labels ?? [:])), done)
      },
      Route(Trials.pauseTrial) { p, done in
        self.change(Result { () throws(TrialError) in try .pause(p.target) }, done)
      },
      Route(Trials.resumeTrial) { p, done in
        self.change(Result { () throws(TrialError) in try .resume(p.target) }, done)
      },
      Route(Trials.cancelTrial) { p, done in
        self.change(Result { () throws(TrialError) in try p.command() }, done)
      },
      Route(Trials.uncancelTrial) { p, done in
        self.change(Result { () throws(TrialError) in try .uncancel(p.target) }, done)
      },
      Route(Trials.getTrial) { p, done in
        self.read(done) {
          let trial = try p.id.map($0.trial(id:)) ?? $0.trial(subject: p.subject ?? "")
          return TrialReply(trial: TrialObject(trial, now: self.clock.now()))
        }
      },
      Route(Trials.listTrials) { p, done in
        self.read(done) {
          let now = self.clock.now()
          let matches = try p.matcher(now: now)
          let page = try $0.listTrials(limit: p.pageSize, after: p.after, where: matches)
          return ListTrialsReply(trials: page.trials.map { TrialObject($0, now: now) }, next: page.next)
        }
      }.scanning(),
      Route(Trials.getPlan) { p, done in
        self.read(done) {
          let (trial, ledger) = try $0.trialWithLedger(id: p.id)
          // Its subject's latest trial, for follow-ups a later trial calls off.
          let latest = trial.hasFollowUps ? try $0.trial(subject: trial.subject).id : nil
          return EventsReply(events: EventObject.plan(of: trial, ledger: ledger, latestTrial: latest))
        }
      },
      Route(Trials.simulate) { p, done in
        self.read(done) { queries in
          let now = self.clock.now()
          let policy = self.snapshots.current.settings.policy
          let (due, trials) = try queries.simulateWithTrials(
            now: now, through: p.at.resolve(now: now), policy: policy)
          return EventsReply(
            events: due.map {
              EventObject($0, attributes: trials[$0.event.trialID]?.attributes(of: $0.event))
            })
        }
      }.scanning(),
      Route(Trials.getStatus) { _, done in
        self.read(done) { queries in
          let now = self.clock.now()
          var status = self.snapshots.current
          if let next = status.nextEvent, status.nextAttributes == nil {
            status.nextAttributes = try queries.attributes(of: [next.trialID])[next.trialID]
          }
          let fleet = self.fleetStatus?()
          return GetStatusReply(
            version: self.version, startedAt: self.startedAt, uptime: now.duration(since: self.startedAt),
            trials: TrialCounts(fleet?.counts ?? status.counts), pendingEvents: status.pendingEvents,
            nextEvent: status.nextEvent.map { EventObject(pending: $0, attributes: status.nextAttributes) },
            storeBytes: self.storeBytes(), connections: self.counters.connections,
            watchers: self.counters.watchers, fleet: fleet?.fleet,
            held: status.heldEvents > 0
              ? HeldEvents(events: status.heldEvents, reason: status.heldReason ?? "delivery held") : nil,
            storeFault: status.storeFault.map {
              StoreFaultObject(
                reason: $0.reason.rawValue, message: $0.message, since: $0.since, refusedWrites: $0.refused)
            })
        }
      },
      Route(Trials.getOutlook) { p, done in
        self.onEngineQueue(done) { engine in
          let due = engine.trialsDue(within: p.within.map(\.duration))
          return GetOutlookReply(windows: zip(p.within, due).map { DueWithin(within: $0.text, trials: $1) })
        }
      },
      Route(Trials.listPlans) { p, done in
        self.read(done) { queries in
          let active = p.activeTrials == false ? nil : try queries.repository.activeTrialsByPlan()
          let plans = self.snapshots.current.settings.plans.values.sorted { $0.name < $1.name }
          return ListPlansReply(
            plans: plans.map { plan in PlanObject(plan, activeTrials: active.map { $0[plan.name] ?? 0 }) })
        }
      }.scanning(),
      Route(Trials.getFleet) { _, done in self.read(done) { _ in GetFleetReply(fleet: self.fleet()) } },
      Route(Trials.getStats) { p, done in
        self.read(done) { queries in
          let by = p.by ?? .week
          let to = p.to?.day ?? CohortKey.day(of: self.clock.now())
          let first = by.start(of: p.from.day)
          let last = by.next(after: by.start(of: max(p.from.day, to))) - 1
          let records = try queries.repository.read { try $0.cohorts(from: first, through: last) }
          let report = TrialStats.report(records, from: p.from.day, through: to, by: by, plan: p.plan)
          let (start, end) = (report.periods.first?.first ?? first, report.periods.last?.last ?? to)
          var reply = GetStatsReply(
            by: by, plan: p.plan,
            periods: report.periods.map { CohortObject(first: $0.first, last: $0.last, $0.counts) },
            total: CohortObject(first: start, last: end, report.total))
          if p.byVariant == true, let plan = p.plan {
            try self.addVariants(to: &reply, plan: plan, from: start, through: end, queries: queries)
          }
          return reply
        }
      },
      Route(Trials.export) { p, done in
        self.read(done) {
          p.uses == true
            ? try $0.exportUses(after: p.afterUse, limit: p.pageSize)
            : try $0.export(after: p.after, limit: p.pageSize)
        }
      }.scanning(),
      Route(stream: Trials.watch) { p, sink in self.watchers.watch(after: p.after, sink) },
      Route(Trials.getEventLog) { _, done in
        self.read(done) {
          GetEventLogReply(
            log: EventLogObject(try $0.eventLogBounds(), retention: self.snapshots.current.settings.retention)
          )
        }
      },
      Route(Trials.getConsumer) { p, done in
        self.read(done) {
          let (consumer, last) = try $0.consumer(named: p.name)
          return ConsumerReply(consumer: ConsumerObject(consumer, last: last))
        }
      },
      Route(Trials.listConsumers) { _, done in
        self.read(done) {
          let (consumers, last) = try $0.consumers()
          return ListConsumersReply(consumers: consumers.map { ConsumerObject($0, last: last) })
        }
      },
      Route(Trials.createConsumer) { p, done in
        self.write(done, { ConsumerReply(consumer: ConsumerObject($0.0, last: $0.1)) }) {
          engine, completion in
          engine.createConsumer(named: p.name, after: p.after, completion: completion)
        }
      },
      Route(Trials.acknowledgeEvent) { p, done in
        self.write(done, { ConsumerReply(consumer: ConsumerObject($0.0, last: $0.1)) }) {
          engine, completion in
          engine.acknowledge(consumer: p.consumer, through: p.cursor, completion: completion)
        }
      },
      Route(Trials.removeConsumer) { p, done in
        self.write(done, { EmptyReply() }) { engine, completion in
          engine.removeConsumer(named: p.name, completion: completion)
        }
      },
      Route(Trials.grantAgain) { p, caller, done in
        self.write(done, { GrantAgainReply(used: $0.map(SubjectUseObject.init)) }) { engine, completion in
          engine.grantAgain(
            subject: p.subject, plan: p.plan, caller: ControlSocket.metadata(of: caller),
            completion: completion)
        }
      },
    ]
  }

  /// Ends every Watch (the daemon is stopping).
  public func finishWatchers() {
    watchers.finishAll()
  }

  /// The fleet as its last lease round read it; nil on a single host.
  private func fleet() -> FleetObject? {
    fleetStatus?()?.fleet
  }

  /// Carries a non-Sendable value across to the engine queue.
  private struct Bound<T>: @unchecked Sendable { let value: T }

  /// A read, on the caller's thread (the connection's queue), so that the answer needs no
  /// thread hop either way; it never touches the engine's queue.
  private func read<R>(_ done: Completion<R>, _ body: (StoreQueries) throws -> R) {
    done(Self.result { try body(queries) })
  }

  /// A read of what only the engine holds (its planner), on the engine's queue.
  private func onEngineQueue<R>(_ done: @escaping Completion<R>, _ body: @escaping (Engine) throws -> R) {
    let bound = Bound(value: (engine, body))
    queue.async { done(Self.result { try bound.value.1(bound.value.0) }) }
  }

  /// A change other than a command (consumers, grants), handed to the engine on its queue;
  /// answered once durable, its result made a reply by `reply`.
  private func write<V, R>(
    _ done: @escaping Completion<R>, _ reply: @escaping @Sendable (V) -> R,
    _ body: @escaping (Engine, @escaping (Result<V, any Error>) -> Void) -> Void
  ) {
    let bound = Bound(value: (engine, body))
    queue.async {
      bound.value.1(bound.value.0) { result in done(Self.result { reply(try result.get()) }) }
    }
  }

  /// Hands a command made of a call's parameters to the engine; one whose values were refused
  /// is answered with the refusal.
  private func change(_ made: Result<TrialCommand, TrialError>, _ done: @escaping Completion<TrialReply>) {
    let command: TrialCommand
    switch made {
    case .success(let made): command = made
    case .failure(let error): return done(.failure(ControlError(error)))
    }
    // Straight to the lane, from this thread: the engine's context sees the command once durable.
    let clock = self.clock
    let counters = self.counters
    intake.submit(command) { result in
      if case .failure(let error as TrialError) = result, case .extensionRefused(let refusal) = error.code {
        counters.extensionRefused(limit: refusal.limit.rawValue)
      }
      done(Self.result { TrialReply(trial: TrialObject(try result.get().trial, now: clock.now())) })
    }
  }

  private static func result<T>(_ body: () throws -> T) -> Result<T, ControlError> {
    do {
      return .success(try body())
    } catch {
      return .failure(ControlError(answering: error))
    }
  }
}

extension ControlError {
  /// Any error as the one a client receives: a `ControlError` as it is, a `TrialError` as its
  /// reply, a fault of the storage as `StoreUnavailable`, anything else as an internal error
  /// whose message is `context` and the error.
  init(answering error: any Error, context: String = "") {
    switch error {
    case let error as ControlError: self = error
    case let error as TrialError: self.init(error)
    default:
      if let reason = (error as? any StoreFaultError)?.storeFault {
        self = .storeUnavailable(reason, message: "\(context)\(error)")
      } else {
        self = .internalError("\(context)\(error)")
      }
    }
  }
}

extension StoreQueries {
  /// A page of Export: up to `limit` trials after `after`, each with its ledger entries, read
  /// in one transaction; an event delivered shows as delivered even before the store records it.
  func export(after: TrialID?, limit: Int) throws -> ExportReply {
    var records: [ExportRecord] = []
    var count = 0
    var more = false
    var last: TrialID?
    try repository.read { txn in
      try txn.scanTrials(after: after) { trial in
        if count == limit {
          more = true
          return false
        }
        let ledger = unrecordedDeliveries.apply(to: try txn.ledgerEntries(trial: trial.id))
        records += ExportRecord.records(of: trial, ledger: ledger)
        count += 1
        last = trial.id
        return true
      }
    }
    return ExportReply(records: records, next: more ? last : nil)
  }

  /// A page of Export's uses: up to `limit` records of subjects granted a trial once, after
  /// `after`, in one transaction.
  func exportUses(after: SubjectUse.Position?, limit: Int) throws -> ExportReply {
    var records: [ExportRecord] = []
    var last: SubjectUse.Position?
    var more = false
    try repository.read { txn in
      try txn.scanSubjectUses(after: after) { use in
        guard records.count < limit else {
          more = true
          return false
        }
        records.append(ExportRecord(use))
        last = use.position
        return true
      }
    }
    return ExportReply(records: records, nextUse: more ? last : nil)
  }
}

extension ListTrialsParameters {
  /// Whether a trial passes the filters, as of `now`.
  func matches(_ trial: Trial, now: Date) -> Bool {
    (try? matcher(now: now))?(trial) ?? false
  }

  /// The filters as one test of a trial, as of `now`, for a listing (the label asked for read
  /// once, not for each trial).
  func matcher(now: Date) throws(WireProblem) -> (Trial) -> Bool {
    let label = try labelFilter
    let plan = plan
    let state = state
    let end = expiringWithin.map { now.addingTimeInterval($0.timeInterval) }
    return { trial in
      if let state, trial.state != state { return false }
      if let label, trial.labels[label.key] != label.value { return false }
      if let plan, trial.attributes.plan != plan { return false }
      // Active trials by their end; trials in grace by their expiry, at the grace's end.
      if let end {
        return trial.isRunning && (trial.isActive ? trial.period.endDate : trial.expiresAt) <= end
      }
      return true
    }
  }
}

extension EventObject {
  /// Every event of a trial, past and future, in due order: the ledger's entries over all
  /// revisions, then the current revision's events not in the ledger, pending while the
  /// trial is active and skipped (reason `trial-<state>`) once it has ended.
  /// A pending follow-up to be called off carries its reason (`latestTrial`: the subject's
  /// latest trial's id, when known).
  static func plan(of trial: Trial, ledger: [LedgerEntry], latestTrial: TrialID? = nil) -> [EventObject] {
    var events = ledger.map { EventObject($0, attributes: trial.attributes) }
    let taken = Set(ledger.map(\.id))
    // A paused trial's events are pending at the end its pause froze (a resume moves them), and
    // its resume when the pause runs out.
    if let resume = trial.pendingResume {
      events.append(EventObject(pending: resume, attributes: trial.attributes))
    }
    for event in trial.events where !taken.contains(event.id) {
      if event.kind.followUpSpan != nil {
        // A follow-up is pending until taken; of a converted trial, to be called off.
        var pending = EventObject(pending: event, attributes: trial.attributes)
        if case .skip(let reason) = trial.followUpDisposition(latestTrial: latestTrial) {
          pending.reason = reason.code
          pending.detail = "to be skipped: \(reason)"
        }
        events.append(pending)
      } else if trial.isOpen {
        var pending = EventObject(pending: event, attributes: trial.attributes(of: event))
        // A reminder of a trial cancelled at its end: to be skipped when it falls due.
        if event.kind.reminderOffset != nil, trial.skipsReminders {
          pending.reason = SkipReason.cancelAtEnd.code
          pending.detail = "to be skipped: \(SkipReason.cancelAtEnd)"
        }
        events.append(pending)
      } else {
        events.append(
          EventObject(
            id: event.id, attributes: trial.attributes, state: .skipped, due: event.due,
            reason: "trial-\(trial.state.rawValue)",
            detail: "the trial was \(trial.state.rawValue) before it fell due", takenAt: trial.endedAt))
      }
    }
    // Milestones not taken: pending while the trial is active (to be skipped, trial-ended, when
    // due at or after its end); a paused trial's were skipped at its pause.
    for event in trial.milestoneEvents where !taken.contains(event.id) && trial.isActive {
      var pending = EventObject(pending: event, attributes: trial.attributes)
      if event.due >= trial.period.endDate {
        pending.reason = SkipReason.trialEnded.code
        pending.detail = "to be skipped: \(SkipReason.trialEnded)"
      }
      events.append(pending)
    }
    return events.sorted { $0.due != $1.due ? $0.due < $1.due : $0.id < $1.id }
  }
}
