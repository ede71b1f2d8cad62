import FoundationEssentials
import TrialCore

/// Where taken events go once they are committed: the journal, watchers, hooks.
/// A sink that throws leaves the entry in the outbox; it is delivered again later, with
/// the same event id, and the entries taken after it wait behind it, in order. A sink that
/// throws `DeliveryDeferred` is asked again at the time it names; any other error, after
/// `EngineSettings.retryDelay`.
public protocol EventSink: AnyObject {
  /// `event` as the event log holds it (its trial's attributes as they were when it was
  /// taken, delivered again or not); `trial` as it is now, nil when retention removed it.
  func deliver(_ event: LoggedEvent, trial: Trial?) throws
}

/// Told of every event the engine logs (fired or skipped), once committed, in cursor order
/// and without gaps: the running Watches are fed from here.
public protocol EventLogObserver: AnyObject {
  func eventsLogged(_ events: [LoggedEvent])
  /// The log reaches `cursor`, and the events up to it were not handed over (a fleet node's
  /// log follower skipped them while nobody watched): an observer that needs them reads them
  /// from the log.
  func logSkipped(to cursor: EventCursor)
}

extension EventLogObserver {
  public func logSkipped(to cursor: EventCursor) {}
}

/// A sink's "not now": it took nothing, and can take the entry from `until` on (monotonic
/// time, as `WakeScheduler.monotonicNow`), e.g. when journald's rate limit allows.
public struct DeliveryDeferred: Error, Hashable, Sendable, CustomStringConvertible {
  public var until: TimeInterval
  /// Why, in words: `at most 9000 journal entries per 30s`.
  public var reason: String

  public init(until: TimeInterval, reason: String) {
    self.until = until
    self.reason = reason
  }

  public var description: String { "deferred: \(reason)" }
}

/// What the engine tells its host (the systemd notifier, the log) as it runs.
public protocol EngineObserver: AnyObject {
  /// The one-line status changed (rate-limited by the engine).
  func engineStatusChanged(_ status: String)
  /// The engine's queue is responsive: time to send `WATCHDOG=1`.
  func engineWatchdogPing()
  /// The wall clock was stepped by `offset` seconds (negative: backwards).
  func engineDetectedClockStep(from expected: Date, to actual: Date)
  /// A commit failed with an I/O error of the store (a failed write or `fdatasync`): the engine
  /// has stopped, and writes nothing more (see `CommitLane`). The host ends the process, for a
  /// new one to start from what is durable on disk.
  func engineStoreFailed(_ error: any Error)
}

extension EngineObserver {
  public func engineStoreFailed(_ error: any Error) {}
}

/// The engine's settings that configuration can change at run time.
public struct EngineSettings: Hashable, Sendable {
  public var defaultLength: Duration
  public var defaultReminders: ReminderSchedule
  /// The plans a start may name, by name.
  public var plans: [String: TrialPlan]
  public var policy: CatchUpPolicy
  /// `WATCHDOG=1` is sent at this interval (half of `WATCHDOG_USEC`); nil: no watchdog.
  public var watchdogInterval: Duration?
  /// The least time between two status updates.
  public var statusInterval: Duration
  /// A wall-clock jump larger than this, relative to monotonic time, counts as a step.
  public var stepTolerance: Duration
  /// Delay before retrying a failed commit or delivery.
  public var retryDelay: Duration
  /// How long the event log keeps events.
  public var retention: EventRetention
  /// The most events one pruning step removes (each step is one short transaction); the most
  /// trials one step of the trials' retention examines.
  public var pruneBatch: Int
  /// How long ended trials are kept (`[Trials] Retention=`); nil: for ever.
  public var trialRetention: Duration?
  /// How long after the start the first pass of the trials' retention runs: not while the daemon
  /// starts, so that it neither holds up `READY=1` nor leaves the pages of every trial it reads
  /// resident right after it.
  public var trialRetentionStartDelay: Duration = .seconds(60)
  /// What a start leaves open, as configured.
  public var defaults: TrialDefaults {
    TrialDefaults(length: defaultLength, reminders: defaultReminders, plans: plans)
  }
  /// How long after the last write the engine lets go of memory writes left resident
  /// (`Engine.releaseMemory`): past the 5 s after which Dispatch ends a worker thread left idle,
  /// so that what the threads a burst started kept for themselves is back in the heap by then.
  public var memoryQuiet: Duration
  /// How long before its next event a trial is held in full; trials whose events fall due
  /// later are held by id and due time alone (see `Planner+Far.swift`). Nil: every trial is
  /// held in full. Not in a fleet, whose trials are always held in full.
  public var lookahead: Duration? = .seconds(3600)
  /// The webhook endpoints, by name (`WebhookDuty`).
  public var webhooks: [String: WebhookEndpoint] = [:]

  public init(
    defaultLength: Duration = TrialDefaults.standard.length,
    defaultReminders: ReminderSchedule = TrialDefaults.standard.reminders, plans: [String: TrialPlan] = [:],
    policy: CatchUpPolicy = CatchUpPolicy(), watchdogInterval: Duration? = nil,
    statusInterval: Duration = .milliseconds(250), stepTolerance: Duration = .seconds(1),
    retryDelay: Duration = .seconds(1), retention: EventRetention = EventRetention(), pruneBatch: Int = 1_000,
    trialRetention: Duration? = nil,
    memoryQuiet: Duration = .seconds(6)
  ) {
    self.defaultLength = defaultLength
    self.defaultReminders = defaultReminders
    self.plans = plans
    self.policy = policy
    self.watchdogInterval = watchdogInterval
    self.statusInterval = statusInterval
    self.stepTolerance = stepTolerance
    self.retryDelay = retryDelay
    self.retention = retention
    self.pruneBatch = pruneBatch
    self.trialRetention = trialRetention
    self.memoryQuiet = memoryQuiet
  }
}
