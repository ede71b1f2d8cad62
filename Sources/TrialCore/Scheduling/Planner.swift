import Foundation
import HeapModule

/// Every pending event of every trial, ordered by due time.
///
/// The heap holds one entry per trial: its next pending event. Taking that event pushes the
/// trial's following one. Cancelling or rescheduling a trial replaces its slot; its old heap
/// entry becomes stale and is discarded when it reaches the top, or when stale entries
/// outnumber live ones and the heap is rebuilt. Every operation is O(log n) amortised.
/// Ties in due time go first in, first out.
///
/// Memory: one 32-byte heap entry and one dictionary bucket (8-byte key, 32-byte slot) per
/// trial with pending events; reminder schedules are shared.
public struct Planner: Sendable {
  public var policy: CatchUpPolicy

  struct Entry: Comparable, Sendable {
    var due: Double
    var seq: UInt64
    var trial: UInt64
    var revision: UInt32
    var index: UInt8

    static func < (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due != rhs.due ? lhs.due < rhs.due : lhs.seq < rhs.seq
    }

    static func == (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due == rhs.due && lhs.seq == rhs.seq
    }
  }

  struct Slot: Sendable {
    var seq: UInt64
    var end: Double
    var revision: UInt32
    var schedule: UInt32
    /// Index of the next pending event; the expiry is index `total - 1`.
    var next: UInt8
    var total: UInt8
  }

  private var heap = Heap<Entry>()
  private var slots: [TrialID: Slot] = [:]
  private var schedules: [ReminderSchedule] = []
  private var scheduleIndex: [ReminderSchedule: UInt32] = [:]
  private var nextSeq: UInt64 = 0
  private var staleEntries = 0

  /// Events not yet taken, over all trials.
  public private(set) var pendingEventCount = 0

  public init(policy: CatchUpPolicy = CatchUpPolicy()) {
    self.policy = policy
  }

  /// Trials with at least one pending event.
  public var trialCount: Int { slots.count }

  /// Prepares room for `trials` trials, to avoid rehashing while a store loads.
  public mutating func reserveCapacity(trials: Int) {
    slots.reserveCapacity(trials)
    heap.reserveCapacity(trials)
  }

  // MARK: Adding and removing trials

  /// Plans a trial that has just started or been extended. Reminders already due at `now`
  /// are not scheduled; they come back as skipped, with `reason`. The expiry is always
  /// scheduled, even when already due. Replaces any earlier plan of the same trial.
  @discardableResult
  public mutating func add(_ trial: Trial, now: Date, reason: SkipReason = .alreadyDueAtStart)
    -> [DueEvent]
  {
    guard trial.isActive else {
      cancel(trial.id)
      return []
    }
    var skipped: [DueEvent] = []
    var first = trial.reminders.offsets.count
    for index in 0..<trial.reminders.offsets.count {
      let event = trial.event(at: index)
      if event.due > now {
        first = index
        break
      }
      skipped.append(DueEvent(event: event, takenAt: now, disposition: .skip(reason), isLate: false))
    }
    schedule(trial, from: first)
    return skipped
  }

  /// Re-plans a trial read back from the store: every event of the current revision from
  /// the first one not `completed` on is scheduled, overdue ones included, so that they
  /// fire (late) on the next `takeDue`.
  public mutating func restore(_ trial: Trial, completed: (EventID) -> Bool) {
    guard trial.isActive else {
      cancel(trial.id)
      return
    }
    let count = trial.reminders.offsets.count + 1
    var first = 0
    while first < count, completed(trial.event(at: first).id) { first += 1 }
    if first == count {
      cancel(trial.id)
    } else {
      schedule(trial, from: first)
    }
  }

  /// Removes every pending event of the trial. Returns false when it had none.
  @discardableResult
  public mutating func cancel(_ id: TrialID) -> Bool {
    guard let slot = slots.removeValue(forKey: id) else { return false }
    pendingEventCount -= Int(slot.total - slot.next)
    staleEntries += 1
    tidy()
    return true
  }

  private mutating func schedule(_ trial: Trial, from first: Int) {
    if let old = slots[trial.id] {
      pendingEventCount -= Int(old.total - old.next)
      staleEntries += 1
    }
    let schedule = intern(trial.reminders)
    nextSeq += 1
    let slot = Slot(
      seq: nextSeq, end: trial.period.endDate.timeIntervalSinceReferenceDate, revision: trial.revision,
      schedule: schedule, next: UInt8(first), total: UInt8(trial.reminders.offsets.count + 1))
    slots[trial.id] = slot
    pendingEventCount += Int(slot.total - slot.next)
    heap.insert(entry(for: trial.id, slot: slot))
    tidy()
  }

  private mutating func intern(_ schedule: ReminderSchedule) -> UInt32 {
    if let index = scheduleIndex[schedule] { return index }
    let index = UInt32(schedules.count)
    schedules.append(schedule)
    scheduleIndex[schedule] = index
    return index
  }

  private func due(of slot: Slot, index: UInt8) -> Double {
    let offsets = schedules[Int(slot.schedule)].offsets
    return Int(index) < offsets.count ? slot.end - offsets[Int(index)].timeInterval : slot.end
  }

  private func entry(for id: TrialID, slot: Slot) -> Entry {
    Entry(
      due: due(of: slot, index: slot.next), seq: slot.seq, trial: id.rawValue, revision: slot.revision,
      index: slot.next)
  }

  private func event(for id: TrialID, slot: Slot, index: UInt8) -> TrialEvent {
    let offsets = schedules[Int(slot.schedule)].offsets
    let kind: EventKind = Int(index) < offsets.count ? .reminder(before: offsets[Int(index)]) : .expiry
    return TrialEvent(
      id: EventID(trialID: id, revision: slot.revision, kind: kind),
      due: Date(timeIntervalSinceReferenceDate: due(of: slot, index: index)))
  }

  private func isLive(_ entry: Entry) -> Bool {
    guard let slot = slots[TrialID(entry.trial)] else { return false }
    return slot.seq == entry.seq && slot.next == entry.index
  }

  /// Keeps a live entry on top of the heap, and rebuilds the heap when stale entries
  /// outnumber live ones.
  private mutating func tidy() {
    if staleEntries > 1024 && staleEntries > slots.count {
      heap = Heap(heap.unordered.filter(isLive))
      staleEntries = 0
      return
    }
    while let top = heap.min, !isLive(top) {
      heap.removeMin()
      staleEntries -= 1
    }
  }

  // MARK: Queries

  /// When the earliest pending event falls due.
  public var nextDeadline: Date? {
    heap.min.map { Date(timeIntervalSinceReferenceDate: $0.due) }
  }

  /// The earliest pending event.
  public var nextEvent: TrialEvent? {
    guard let top = heap.min, let slot = slots[TrialID(top.trial)] else { return nil }
    return event(for: TrialID(top.trial), slot: slot, index: top.index)
  }

  /// The pending event with this id, if it is still pending.
  public func pendingEvent(_ id: EventID) -> TrialEvent? {
    guard let slot = slots[id.trialID], slot.revision == id.revision else { return nil }
    let index: Int
    switch id.kind {
    case .expiry:
      index = Int(slot.total) - 1
    case .reminder(let offset):
      guard let found = schedules[Int(slot.schedule)].offsets.firstIndex(of: offset) else { return nil }
      index = found
    }
    guard index >= Int(slot.next) else { return nil }
    return event(for: id.trialID, slot: slot, index: UInt8(index))
  }

  /// The trial's pending events, in due order.
  public func pendingEvents(of id: TrialID) -> [TrialEvent] {
    guard let slot = slots[id] else { return [] }
    return (slot.next..<slot.total).map { event(for: id, slot: slot, index: $0) }
  }

  // MARK: Taking due events

  /// Takes every event due at or before `now`, in due order (first in, first out for equal
  /// due times), and decides for each whether it fires or is skipped, by the catch-up policy.
  public mutating func takeDue(at now: Date) -> [DueEvent] {
    let limit = now.timeIntervalSinceReferenceDate
    var taken: [TrialEvent] = []
    while let top = heap.min, top.due <= limit {
      heap.removeMin()
      let id = TrialID(top.trial)
      guard var slot = slots[id], slot.seq == top.seq, slot.next == top.index else {
        staleEntries -= 1
        continue
      }
      taken.append(event(for: id, slot: slot, index: top.index))
      pendingEventCount -= 1
      slot.next += 1
      if slot.next == slot.total {
        slots.removeValue(forKey: id)
      } else {
        slots[id] = slot
        heap.insert(entry(for: id, slot: slot))
      }
    }
    tidy()
    return applyPolicy(to: taken, at: now)
  }

  /// What `takeDue` would return if the clock ran from `now` to `date` with the daemon
  /// awake: events overdue at `now` as a wake at `now` would take them, later ones on time.
  /// Changes nothing.
  public func simulate(now: Date, through date: Date) -> [DueEvent] {
    let limit = date.timeIntervalSinceReferenceDate
    let nowValue = now.timeIntervalSinceReferenceDate
    var chains: [(Entry, TrialEvent)] = []
    for top in heap.unordered where top.due <= limit && isLive(top) {
      let id = TrialID(top.trial)
      let slot = slots[id]!
      var index = top.index
      while index < slot.total {
        let event = event(for: id, slot: slot, index: index)
        guard event.due.timeIntervalSinceReferenceDate <= limit else { break }
        chains.append((Entry(due: due(of: slot, index: index), seq: slot.seq, trial: top.trial, revision: 0, index: index), event))
        index += 1
      }
    }
    chains.sort { $0.0 < $1.0 }
    let overdue = chains.prefix { $0.0.due <= nowValue }.map(\.1)
    var result = applyPolicy(to: overdue, at: now)
    for (_, event) in chains.dropFirst(overdue.count) {
      result.append(DueEvent(event: event, takenAt: event.due, disposition: .fire, isLate: false))
    }
    return result
  }

  private func applyPolicy(to taken: [TrialEvent], at now: Date) -> [DueEvent] {
    // The last event taken for each trial in this wake: later reminders supersede earlier ones.
    var last: [TrialID: TrialEvent] = [:]
    if policy.reminders == .latest {
      for event in taken { last[event.trialID] = event }
    }
    return taken.map { event in
      let lateness = now.timeIntervalSince(event.due)
      let isLate = lateness > policy.lateThreshold
      var disposition = DueEvent.Disposition.fire
      if case .reminder = event.kind, isLate {
        switch policy.reminders {
        case .all:
          break
        case .skip:
          if lateness > policy.grace {
            disposition = .skip(.beyondGrace(lateness: lateness, grace: policy.grace))
          }
        case .latest:
          if let final = last[event.trialID], final.id != event.id {
            disposition = .skip(
              final.kind == .expiry ? .supersededByExpiry : .supersededByReminder(final.id))
          }
        }
      }
      return DueEvent(event: event, takenAt: now, disposition: disposition, isLate: isLate)
    }
  }
}
