import FoundationEssentials
import HeapModule

/// The milestones of running trials (`Milestones=`), by due time: a heap of its own beside the
/// planner's shared schedules. A milestone falls due at its trial's start plus its span, so its
/// place before the end moves with every extension, while the shared schedules hold events as
/// offsets before the end; held apart, it keeps its due time whatever the end. Each trial with
/// milestones pending has its list (in due order) and one heap entry, its next; replacing or
/// removing the list leaves that entry stale, discarded when it reaches the top or when stale
/// entries outnumber live ones. Trials without milestones cost nothing here.
struct PlannerMilestones: Sendable {
  struct Entry: Comparable, Sendable {
    var due: Double
    var sequence: UInt64
    var trial: UInt64

    static func < (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due != rhs.due ? lhs.due < rhs.due : lhs.sequence < rhs.sequence
    }
  }

  private var heap = Heap<Entry>()
  /// Each trial's pending milestones, in due order, and the sequence of its live heap entry.
  private var lists: [UInt64: (events: ArraySlice<TrialEvent>, sequence: UInt64)] = [:]
  private var lastSequence: UInt64 = 0

  /// Milestones pending, over all trials.
  private(set) var count = 0

  /// The trial's pending milestones, in due order.
  func events(of trial: UInt64) -> [TrialEvent] { lists[trial].map { Array($0.events) } ?? [] }

  /// Plans `events` (one trial's, in due order) in place of the trial's earlier ones; returns
  /// the change in the count pending.
  @discardableResult
  mutating func set(_ trial: UInt64, _ events: [TrialEvent]) -> Int {
    // Trials without milestones, while none has any: nothing to do.
    if events.isEmpty, lists.isEmpty { return 0 }
    let before = count
    remove(trial)
    guard let first = events.first else { return count - before }
    lastSequence += 1
    lists[trial] = (events[...], lastSequence)
    count += events.count
    heap.insert(Entry(due: first.due.timeIntervalSinceReferenceDate, sequence: lastSequence, trial: trial))
    tidy()
    return count - before
  }

  /// Removes the trial's milestones; returns how many it had.
  @discardableResult
  mutating func remove(_ trial: UInt64) -> Int {
    guard !lists.isEmpty, let removed = lists.removeValue(forKey: trial) else { return 0 }
    count -= removed.events.count
    tidy()
    return removed.events.count
  }

  /// The earliest milestone's due time.
  var nextDue: Double? { heap.min?.due }

  var next: TrialEvent? { heap.min.flatMap { lists[$0.trial]?.events.first } }

  /// Takes every milestone due at or before `limit`, in due order.
  mutating func takeDue(through limit: Double) -> [TrialEvent] {
    var taken: [TrialEvent] = []
    while let top = heap.min, top.due <= limit {
      heap.removeMin()
      guard var live = lists[top.trial], live.sequence == top.sequence, let event = live.events.first else {
        continue
      }
      taken.append(event)
      count -= 1
      live.events = live.events.dropFirst()
      if let following = live.events.first {
        lastSequence += 1
        live.sequence = lastSequence
        lists[top.trial] = live
        heap.insert(
          Entry(due: following.due.timeIntervalSinceReferenceDate, sequence: lastSequence, trial: top.trial))
      } else {
        lists[top.trial] = nil
      }
    }
    tidy()
    return taken
  }

  /// The milestones due at or before `limit`, in no order; changes nothing.
  func due(through limit: Double) -> [TrialEvent] {
    lists.values.flatMap { $0.events.filter { $0.due.timeIntervalSinceReferenceDate <= limit } }
  }

  private func isLive(_ entry: Entry) -> Bool { lists[entry.trial]?.sequence == entry.sequence }

  /// Keeps a live entry on top; rebuilds the heap when stale entries outnumber live ones.
  private mutating func tidy() {
    if heap.count > 64 && heap.count > 2 * lists.count {
      heap = Heap(heap.unordered.filter(isLive))
      return
    }
    while let top = heap.min, !isLive(top) { heap.removeMin() }
  }
}

extension Planner {
  /// Holds `events`, the trial's milestones (`Trial.plannedMilestones`), in place of those it
  /// held.
  mutating func planMilestones(of trial: Trial, _ events: [TrialEvent]) {
    pendingEventCount += milestones.set(trial.id.rawValue, events)
  }

  /// The trial's pending events, in due order, if it is held in full (a far trial's: none).
  public func pendingEvents(of id: TrialID) -> [TrialEvent] {
    if let resume = resumes.event(of: id.rawValue) { return [resume] }
    let held = milestones.events(of: id.rawValue)
    guard let position = slot(of: id.rawValue) else { return held }
    let slot = slots[Int(position)]
    let total = scheduleSeconds[Int(slot.schedule)].count
    let events = (Int(slot.next)..<total).map { event(of: slot, index: UInt8($0)) }
    return held.isEmpty ? events : (held + events).sorted { $0.due < $1.due }
  }
}
