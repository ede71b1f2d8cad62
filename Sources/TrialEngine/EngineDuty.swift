import FoundationEssentials
import TrialCore

/// A duty the engine runs beside firing events, on timers of its own: the log's pruning, the
/// trials' retention, the release of memory, the status and the watchdog, the far trials'
/// look-ahead. Each keeps its own
/// state and arms its own wake on the engine's one scheduler, whose context runs everything the
/// engine does; the engine only tells it of its life cycle.
protocol EngineDuty: AnyObject {
  /// The engine has started (`old` nil), or a reload changed its settings.
  func configure(_ settings: EngineSettings, was old: EngineSettings?)
  /// The engine stops: nothing is armed from now on.
  func stop()
}

/// The engine's duties, one of each.
struct EngineDuties {
  let status: StatusDuty
  let pruning: PruningDuty
  let retention: RetentionDuty
  let memory: MemoryDuty
  let lookahead: LookaheadDuty
  let webhooks: WebhookDuty
  let storeFaults: StoreFaultDuty

  var all: [any EngineDuty] { [status, pruning, retention, memory, lookahead, webhooks, storeFaults] }
}

/// A wake of a duty's, armed for a wall-clock time: re-armed only to come earlier, unless
/// replaced.
struct DutyWake {
  private var wake: (any ScheduledWake)?
  /// When it is armed for; nil when it is not armed.
  private(set) var at: Date?

  var isArmed: Bool { wake != nil }

  /// Arms the wake at `date` unless it is armed earlier already; returns whether it armed.
  @discardableResult
  mutating func arm(
    at date: Date, on scheduler: any WakeScheduler, label: String, replacing: Bool = false,
    _ action: @escaping () -> Void
  ) -> Bool {
    if !replacing, wake != nil, let at, at <= date { return false }
    wake?.cancel()
    at = date
    wake = scheduler.schedule(at: date, label: label, action)
    return true
  }

  /// Arms the wake after `delay` of monotonic time, replacing any.
  mutating func arm(
    after delay: TimeInterval, on scheduler: any WakeScheduler, label: String, _ action: @escaping () -> Void
  ) {
    wake?.cancel()
    at = nil
    wake = scheduler.schedule(after: delay, label: label, action)
  }

  /// The wake ran: it is no longer armed.
  mutating func fired() {
    wake = nil
    at = nil
  }

  mutating func cancel() {
    wake?.cancel()
    fired()
  }
}
