import Foundation
import Synchronization
import TrialCore

/// What the engine knows beyond the store, as of its last change, for reads answered off its
/// queue (`GetStatus`, `Simulate`, `GetEventLog`, the Watches): an immutable value, a few
/// words, never the planner itself.
public struct EngineSnapshot: Hashable, Sendable {
  /// Trials by state.
  public var counts: [TrialState: Int] = [:]
  /// Events not yet taken, and the next one to fall due, with its trial's subject.
  public var pendingEvents = 0
  public var nextEvent: TrialEvent?
  public var nextSubject: String?
  /// Events fired and skipped since start.
  public var fired = 0
  public var skipped = 0
  /// The newest event handed to the log observers.
  public var publishedThrough = EventCursor.origin
  public var settings = EngineSettings()

  /// The engine's status, as `Engine.status()` gives it, with the status line made from this
  /// snapshot as of `now`.
  public func status(now: Date) -> EngineStatus {
    EngineStatus(
      counts: counts, pendingEvents: pendingEvents, nextEvent: nextEvent, nextSubject: nextSubject,
      fired: fired, skipped: skipped,
      line: Engine.statusLine(
        active: counts[.active, default: 0], next: nextEvent, subject: nextSubject, now: now))
  }
}

/// Where the engine publishes its snapshot: written on the engine's queue after every change
/// (from `publishStatus`, which the engine calls after each), read from any thread without
/// waiting for the engine.
///
/// It reaches the engine as one of its log observers (`Engine.snapshots()` adds it), so that
/// the engine needs no property of its own for it; events logged are already in the snapshot
/// (`publishedThrough`) by the time they are handed over.
public final class EngineSnapshots: EventLogObserver, Sendable {
  private let latest: Mutex<EngineSnapshot>

  init(_ snapshot: EngineSnapshot) {
    latest = Mutex(snapshot)
  }

  /// The latest snapshot.
  public var current: EngineSnapshot { latest.withLock { $0 } }

  func publish(_ snapshot: EngineSnapshot) {
    latest.withLock { $0 = snapshot }
  }

  public func eventsLogged(_ events: [LoggedEvent]) {}
}

extension Engine {
  /// The engine's snapshots, published after every change from now on. On the engine's queue.
  public func snapshots() -> EngineSnapshots {
    if let existing = snapshotCells.first { return existing }
    let cell = EngineSnapshots(makeSnapshot(previous: nil))
    addLogObserver(cell)
    return cell
  }

  private var snapshotCells: [EngineSnapshots] { logObservers.compactMap { $0 as? EngineSnapshots } }

  /// Publishes the snapshot, when anyone asked for it. `publishStatus` calls this first.
  func publishSnapshot() {
    guard let cell = snapshotCells.first else { return }
    cell.publish(makeSnapshot(previous: cell.current))
  }

  /// The snapshot of now; the next event's subject is read from the store only when the next
  /// event belongs to another trial than in `previous`.
  private func makeSnapshot(previous: EngineSnapshot?) -> EngineSnapshot {
    let next = planner.nextEvent
    var subject: String?
    if let next {
      if let previous, previous.nextEvent?.trialID == next.trialID, let known = previous.nextSubject {
        subject = known
      } else {
        subject = (try? repository.read { try $0.trial(next.trialID) })??.subject
      }
    }
    return EngineSnapshot(
      counts: counts, pendingEvents: planner.pendingEventCount, nextEvent: next, nextSubject: subject,
      fired: firedCount, skipped: skippedCount, publishedThrough: publishedThrough, settings: settings)
  }
}
