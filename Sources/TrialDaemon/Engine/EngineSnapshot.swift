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
}

/// Where the engine publishes its snapshot: written on the engine's queue after every change
/// (from `publishStatus`, which the engine calls after each), read from any thread without
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
    if let snapshotCell { return snapshotCell }
    let cell = EngineSnapshots(makeSnapshot(previous: nil))
    snapshotCell = cell
    return cell
  }

  /// Publishes the snapshot, when anyone asked for it. `publishStatus` calls this first.
  func publishSnapshot() {
    guard let snapshotCell else { return }
    snapshotCell.publish(makeSnapshot(previous: snapshotCell.current))
  }

  /// The snapshot of now; the next event's trial's attributes are read from the store only when the next
  /// event belongs to another trial than in `previous`, and never in a fleet, where that read
  /// crosses the network (`GetStatus` reads it when asked).
  private func makeSnapshot(previous: EngineSnapshot?) -> EngineSnapshot {
    let pending = nextPendingEvent()
    let next = pending?.event
    var attributes: TrialAttributes? = pending?.trial?.attributes
    if let next, attributes == nil {
      if let previous, previous.nextEvent?.trialID == next.trialID, let known = previous.nextAttributes {
        attributes = known
      } else if fleet == nil {
        attributes = (try? repository.read { try $0.trial(next.trialID) })??.attributes
      }
    }
    return EngineSnapshot(
      counts: counts, pendingEvents: planner.pendingEventCount, nextEvent: next, nextAttributes: attributes,
      settings: settings, tally: tally, openByPlan: openByPlan, heldEvents: delivery.heldCount,
      heldReason: delivery.heldReason)
  }
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

  func watchStarted() {
    let action = state.withLock { state -> (@Sendable () -> Void)? in
      state.watches += 1
      return state.watches == 1 ? state.onWanted : nil
    }
    action?()
  }

  func watchEnded() {
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
