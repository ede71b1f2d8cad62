import FoundationEssentials
import HeapModule

/// The resumes of paused trials whose pause runs out (`MaxPause=`), by due time: a heap of its
/// own beside the planner's, as a paused trial has no other pending event. Each trial has at
/// most one; replacing or removing it leaves its heap entry stale, discarded when it reaches the
/// top or when stale entries outnumber live ones.
struct PlannerResumes: Sendable {
  struct Entry: Comparable, Sendable {
    var due: Double
    var sequence: UInt64
    var trial: UInt64

    static func < (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due != rhs.due ? lhs.due < rhs.due : lhs.sequence < rhs.sequence
    }
  }

  private var heap = Heap<Entry>()
  private var events: [UInt64: (event: TrialEvent, sequence: UInt64)] = [:]
  private var lastSequence: UInt64 = 0

  var count: Int { events.count }
  var trialIDs: some Collection<UInt64> { events.keys }

  func event(of trial: UInt64) -> TrialEvent? { events[trial]?.event }

  /// Plans `event`, in place of the trial's earlier resume if any.
  mutating func set(_ event: TrialEvent) {
    lastSequence += 1
    let trial = event.trialID.rawValue
    events[trial] = (event, lastSequence)
    heap.insert(Entry(due: event.due.timeIntervalSinceReferenceDate, sequence: lastSequence, trial: trial))
    tidy()
  }

  /// Removes the trial's resume; false when it had none.
  @discardableResult
  mutating func remove(_ trial: UInt64) -> Bool {
    guard events.removeValue(forKey: trial) != nil else { return false }
    tidy()
    return true
  }

  /// The earliest resume's due time.
  var nextDue: Double? { heap.min?.due }

  var next: TrialEvent? { heap.min.flatMap { events[$0.trial]?.event } }

  /// Takes every resume due at or before `limit`, in due order.
  mutating func takeDue(through limit: Double) -> [TrialEvent] {
    var taken: [TrialEvent] = []
    while let top = heap.min, top.due <= limit {
      heap.removeMin()
      guard let live = events[top.trial], live.sequence == top.sequence else { continue }
      events[top.trial] = nil
      taken.append(live.event)
    }
    tidy()
    return taken
  }

  /// The resumes due at or before `limit`, in no order; changes nothing.
  func due(through limit: Double) -> [TrialEvent] {
    events.values.map(\.event).filter { $0.due.timeIntervalSinceReferenceDate <= limit }
  }

  /// Counts every resume planned, by its due time (`Planner.trialsDue(through:)`).
  func tally(into tally: inout DueTally) {
    tally.add(
      seconds: events.values.lazy.map {
        FarTrials.heldSecond(of: $0.event.due.timeIntervalSinceReferenceDate)
      })
  }

  private func isLive(_ entry: Entry) -> Bool { events[entry.trial]?.sequence == entry.sequence }

  /// Keeps a live entry on top; rebuilds the heap when stale entries outnumber live ones.
  private mutating func tidy() {
    if heap.count > 64 && heap.count > 2 * events.count {
      heap = Heap(heap.unordered.filter(isLive))
      return
    }
    while let top = heap.min, !isLive(top) { heap.removeMin() }
  }
}
