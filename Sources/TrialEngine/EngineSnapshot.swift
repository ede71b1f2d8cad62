import FoundationEssentials
import Synchronization
import TrialCore

/// What the engine knows beyond the store, as of its last change, for reads answered off its
/// queue (`GetStatus`, `Simulate`, `GetEventLog`): an immutable value, a few words, never the
/// planner itself.
public struct EngineSnapshot: Hashable, Sendable {
  /// Trials by state.
  public var counts: [TrialState: Int] = [:]
  /// Events not yet taken, and the next one to fall due, with its trial's subject.
  public var pendingEvents = 0
  public var nextEvent: TrialEvent?
  public var nextAttributes: TrialAttributes?
  public var settings = EngineSettings()
  /// Events logged since start, by kind and outcome, and the timer's lateness.
  public var tally = EventTally()
  /// Open trials by plan.
  public var openByPlan = OpenTrialsByPlan()
  /// Events held back from the sinks, and why (`DeliveryQueue`).
  public var heldEvents = 0
  public var heldReason: String?
  /// Writes refused now for a fault of the storage (a full disk ...); nil while it takes them.
  public var storeFault: StoreFaultStatus?
  /// Writes refused since start, by reason (the metrics).
  public var refusedWrites: [StoreFaultReason: Int] = [:]
}

/// Where the engine publishes its snapshot: written on the engine's queue after every change
/// (from `StatusDuty.publish`, which the engine calls after each), read from any thread without
/// waiting for the engine.
public final class EngineSnapshots: Sendable {
  private let latest: Mutex<EngineSnapshot>

  init(_ snapshot: EngineSnapshot) {
    latest = Mutex(snapshot)
  }

  /// The latest snapshot.
  public var current: EngineSnapshot { latest.withLock { $0 } }

  func publish(_ snapshot: EngineSnapshot) {
    latest.withLock { $0 = snapshot }
  }
}

extension Engine {
  /// The engine's snapshots, published after every change from now on. On the engine's queue.
  public func snapshots() -> EngineSnapshots {
    if let cell = duties.status.snapshots { return cell }
    let cell = EngineSnapshots(duties.status.makeSnapshot(previous: nil))
    duties.status.snapshots = cell
    return cell
  }

  /// The engine's view of itself, on its queue (`systemctl status` reads the line).
  public func status() -> EngineStatus {
    var snapshot = duties.status.makeSnapshot(previous: nil)
    if let next = snapshot.nextEvent, snapshot.nextAttributes == nil {
      snapshot.nextAttributes = (try? repository.read { try $0.trial(next.trialID) })??.attributes
    }
    return EngineStatus(snapshot: snapshot, line: duties.status.line())
  }

  /// The status line (see `EngineStatus.line`).
  public func statusLine() -> String { duties.status.line() }

  /// For each span, the open trials whose next pending event falls due within it from now
  /// (`Planner.trialsDue(through:)`): one pass over the planner, on the engine's queue. In a
  /// fleet, the trials of the shards this node owns.
  public func trialsDue(within spans: [Duration]) -> [Int] {
    let now = clock.now()
    return planner.trialsDue(through: spans.map { now.adding($0) })
  }
}

/// The engine's view of itself: its snapshot, with the next event's attributes read even in a
/// fleet, and the status line.
public struct EngineStatus: Hashable, Sendable {
  public var snapshot: EngineSnapshot
  /// `3 active trials; next: acme-42 expires in 2h 13min`.
  public var line: String

  public var counts: [TrialState: Int] { snapshot.counts }
  public var pendingEvents: Int { snapshot.pendingEvents }
  public var nextEvent: TrialEvent? { snapshot.nextEvent }
  public var nextAttributes: TrialAttributes? { snapshot.nextAttributes }
}

/// How many Watches are running, from any thread: in a fleet, the shared log is read for them
/// only while there is one (a statement a read on the shared database, at every node).
public final class LogDemand: Sendable {
  private struct State {
    var watches = 0
    var onWanted: (@Sendable () -> Void)?
  }

  private let state = Mutex(State())

  public init() {}

  /// Whether any Watch is running.
  public var isWanted: Bool { state.withLock { $0.watches > 0 } }

  /// Called, on the thread that starts it, when the first Watch starts.
  public func whenWanted(_ action: @escaping @Sendable () -> Void) {
    state.withLock { $0.onWanted = action }
  }

  public func watchStarted() {
    let action = state.withLock { state -> (@Sendable () -> Void)? in
      state.watches += 1
      return state.watches == 1 ? state.onWanted : nil
    }
    action?()
  }

  public func watchEnded() {
    state.withLock { $0.watches -= 1 }
  }
}

/// A count one thread keeps and any thread reads.
public final class SharedCount: Sendable {
  private let value = Atomic<Int>(0)

  public init() {}

  public var current: Int { value.load(ordering: .relaxed) }

  func set(_ count: Int) { value.store(count, ordering: .relaxed) }
}
