import FoundationEssentials
import HeapModule

/// Every pending event of every trial, ordered by due time.
///
/// Each trial with pending events owns a slot in a contiguous array; an index maps trial ids
/// to slots. The heap holds one entry per trial: its next pending event. Taking that event
/// pushes the trial's following one. Cancelling or re-planning a trial gives it a new plan
/// number; its old heap entry no longer matches the slot and is discarded when it reaches
/// the top, or when stale entries outnumber live ones and the heap is rebuilt. Every
/// operation is O(log n) amortised. Ties in due time go first in, first out (by plan).
///
/// Memory per trial with pending events: one 16-byte heap entry, one 32-byte slot and 8 to 16
/// bytes of index (a table of 4-byte slot numbers, at most half full); reminder schedules are
/// shared. The storage is in `PlannerStorage.swift`.
///
/// Held so, in full, are the trials whose next event falls due up to the `horizon`. With a
/// lookahead (`holdFar`), a trial whose next event falls due later is far: held by its id, that
/// due time and its count of pending events alone, about 20 bytes (`FarTrials`), until the
/// horizon reaches it; then the engine reads it back from the store and restores it in full
/// (`Planner+Far.swift`).
public struct Planner: Sendable {
  public var policy: CatchUpPolicy

  /// A trial's next pending event in the heap, 16 bytes.
  struct Entry: Comparable, Sendable {
    var due: Double
    /// The plan number in the high 32 bits, the slot in the low 32. Compared as a whole after
    /// the due time: plan first, so equal due times go first in, first out. Live while its
    /// slot still holds the same plan.
    var key: UInt64

    init(due: Double, plan: UInt32, slot: UInt32) {
      self.due = due
      key = UInt64(plan) << 32 | UInt64(slot)
    }

    var plan: UInt32 { UInt32(truncatingIfNeeded: key >> 32) }
    var slot: UInt32 { UInt32(truncatingIfNeeded: key) }

    static func < (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due != rhs.due ? lhs.due < rhs.due : lhs.key < rhs.key
    }

    static func == (lhs: Entry, rhs: Entry) -> Bool {
      lhs.due == rhs.due && lhs.key == rhs.key
    }
  }

  /// A trial with pending events, 32 bytes.
  struct Slot: Sendable {
    var trial: UInt64
    var end: Double
    /// The number of the trial's plan, in the order trials were planned, from 1; 0 while the
    /// slot is free. Numbered again from 1 when the numbers run out (see `compact`).
    var plan: UInt32
    var revision: UInt32
    var schedule: UInt32
    /// The index of the trial's next pending event in its plan (the expiry is the last).
    var next: UInt8
  }

  var heap = Heap<Entry>()
  /// The trials whose next event falls due after the horizon.
  var far = FarTrials()
  /// The due time up to which every trial is held in full, in seconds since the reference date;
  /// infinite (the default) holds every trial in full.
  public internal(set) var horizon = Double.infinity
  /// How long before a far trial's next event the planner wants it held in full
  /// (`nextDeadline`); 0: none is far.
  var lookahead: Double = 0
  var slots: [Slot] = []
  var freeSlots: [UInt32] = []
  /// The index: open addressing, each bucket a slot number plus one (0: empty), its trial id
  /// read from the slot (see `PlannerStorage.swift`).
  var buckets: [UInt32] = []
  /// Trials in the index.
  var indexed = 0
  /// Each interned schedule: reminders, the trial's grace (zero: none) and follow-ups.
  var schedules: [Schedule] = []
  /// Each interned schedule's events as seconds before the end, for due-time arithmetic
  /// (`eventSeconds`): its reminders', then 0 for `grace-started` when it has grace, then the
  /// expiry's (0, or minus the grace), then its follow-ups' (minus the grace and the span).
  var scheduleSeconds: [[Double]] = []
  var scheduleIndex: [Schedule: UInt32] = [:]
  /// The schedule interned last, and its number (`intern`).
  var lastInterned: (schedule: Schedule, index: UInt32)?

  /// What a slot's events follow from: its reminders, its grace and its follow-ups.
  struct Schedule: Hashable, Sendable {
    var reminders: ReminderSchedule
    var grace: Duration
    var followUps: FollowUpSchedule = .none

    /// The index of the expiry.
    var expiryIndex: Int { reminders.offsets.count + (grace == .zero ? 0 : 1) }
  }

  var lastPlan: UInt32 = 0
  var staleEntries = 0
  /// The last plan number before plans are numbered again (lowered by tests).
  var planLimit = UInt32.max
  /// Paused trials' resumes, when their pause runs out.
  var resumes = PlannerResumes()
  /// Running trials' milestones, held apart (`PlannerMilestones`).
  var milestones = PlannerMilestones()
  /// Slots are packed once fewer than a quarter of them, and more than this many, are free.
  var compactionFloor = 4096

  /// Events not yet taken, over all trials.
  public internal(set) var pendingEventCount = 0

  public init(policy: CatchUpPolicy = CatchUpPolicy()) {
    self.policy = policy
  }

  /// Trials with at least one pending event.
  public var trialCount: Int { indexed + resumes.count + far.count }

  /// The ids of the trials with at least one pending event, in no order: a copy, so that the
  /// planner may change while it is gone through.
  public var trialIDs: [TrialID] {
    slots.lazy.filter { $0.plan != 0 }.map { TrialID($0.trial) } + resumes.trialIDs.map(TrialID.init)
      + far.ids.map(TrialID.init)
  }

  /// Prepares room for `trials` trials, to avoid rehashing while a store loads: far ones when
  /// the planner has a lookahead (most trials are then), else held in full.
  public mutating func reserveCapacity(trials: Int) {
    if lookahead > 0 {
      far.reserveCapacity(trials)
      return
    }
    growIndex(toHold: trials)
    slots.reserveCapacity(trials)
    heap.reserveCapacity(trials)
  }

  // MARK: Adding and removing trials

  /// Plans a trial that has just started, been extended or resumed. Reminders already due at
  /// `now` are not scheduled; they come back as skipped, with `reason`. The expiry is always
  /// scheduled, even when already due. Replaces any earlier plan of the same trial. A paused
  /// trial has only its resume planned, when its pause runs out.
  @discardableResult
  public mutating func add(_ trial: Trial, now: Date, reason: SkipReason = .alreadyDueAtStart)
    -> [DueEvent]
  {
    defer { planMilestones(of: trial, trial.plannedMilestones(after: now)) }
    guard trial.isRunning else {
      cancel(trial.id)
      planResume(of: trial)
      // An ended trial's follow-ups: each is taken (fired or called off) when it falls due.
      if trial.state.isEnded, trial.hasFollowUps { schedule(trial, from: trial.expiryIndex + 1, now: now) }
      return []
    }
    var skipped: [DueEvent] = []
    var first = trial.reminders.offsets.count
    if trial.state == .grace {
      // Past its end: only its expiry and follow-ups are left.
      schedule(trial, from: trial.expiryIndex, now: now)
      return skipped
    }
    for index in 0..<trial.reminders.offsets.count {
      let event = trial.event(at: index)
      if event.due > now {
        first = index
        break
      }
      skipped.append(DueEvent(event: event, takenAt: now, disposition: .skip(reason), isLate: false))
    }
    schedule(trial, from: first, now: now)
    return skipped
  }

  /// Re-plans a trial read back from a store, given which events of its current revision the
  /// ledger holds (`completed`): every event from the first one not completed on is scheduled,
  /// overdue ones included, so that they fire (late) on the next `takeDue`. A trial that is not
  /// running (active or in grace), or whose expiry is completed (an expiry in the ledger means
  /// expired), is not planned; returns whether the trial was still running by its ledger.
  @discardableResult
  public mutating func restore(_ trial: Trial, completed: (EventID) -> Bool) -> Bool {
    defer { planMilestones(of: trial, trial.plannedMilestones(after: nil).filter { !completed($0.id) }) }
    if trial.state == .paused {
      cancel(trial.id)
      if let resume = trial.pendingResume, !completed(resume.id) { planResume(of: trial) }
      return false
    }
    let count = trial.eventCount
    let expired = !trial.isRunning || completed(trial.event(at: trial.expiryIndex).id)
    // An ended trial's follow-ups not yet taken are planned still.
    var first = expired ? (trial.isRunning || trial.state.isEnded ? trial.expiryIndex + 1 : count) : 0
    while first < count, completed(trial.event(at: first).id) { first += 1 }
    guard first < count else {
      cancel(trial.id)
      return false
    }
    schedule(trial, from: first, now: nil)
    return !expired
  }

  /// The same from the trial's ledger entries, of any revision: those of its current revision
  /// are completed.
  @discardableResult
  public mutating func restore(_ trial: Trial, ledger: some Sequence<LedgerEntry>) -> Bool {
    let done = Set(ledger.lazy.filter { $0.event.revision == trial.revision }.map(\.id))
    return restore(trial) { done.contains($0) }
  }

  /// Removes every pending event of the trial. Returns false when it had none.
  @discardableResult
  public mutating func cancel(_ id: TrialID) -> Bool {
    let milestoneCount = milestones.remove(id.rawValue)
    pendingEventCount -= milestoneCount
    if resumes.remove(id.rawValue) {
      pendingEventCount -= 1
      return true
    }
    let farEvents = far.remove(id.rawValue)
    if farEvents > 0 {
      pendingEventCount -= farEvents
      return true
    }
    guard let slot = slot(of: id.rawValue) else { return milestoneCount > 0 }
    unplan(slot)
    tidy()
    return true
  }

  /// Drops the events a slot holds and frees it; its heap entry goes stale.
  private mutating func unplan(_ slot: UInt32) {
    pendingEventCount -= remaining(in: slots[Int(slot)])
    release(slot)
    staleEntries += 1
  }

  private mutating func planResume(of trial: Trial) {
    guard let resume = trial.pendingResume else { return }
    resumes.set(resume)
    pendingEventCount += 1
  }

  /// Plans the trial's events from `first` on: in full, or far when the first falls due after
  /// the horizon (and after twice the lookahead from `now`, when known).
  private mutating func schedule(_ trial: Trial, from first: Int, now: Date?) {
    pendingEventCount -= far.remove(trial.id.rawValue)
    let schedule = intern(
      Schedule(reminders: trial.reminders, grace: trial.expiryGrace, followUps: trial.followUps))
    let end = trial.period.endDate.timeIntervalSinceReferenceDate
    let seconds = scheduleSeconds[Int(schedule)]
    let firstDue = end - seconds[first]
    if isFar(firstDue, now: now?.timeIntervalSinceReferenceDate) {
      if let existing = slot(of: trial.id.rawValue) { unplan(existing) }
      far.insert(trial.id.rawValue, due: firstDue, events: seconds.count - first)
      pendingEventCount += seconds.count - first
      tidy()
      return
    }
    if lastPlan >= planLimit { compact() }
    lastPlan += 1
    let new = Slot(
      trial: trial.id.rawValue, end: end, plan: lastPlan,
      revision: trial.revision, schedule: schedule, next: UInt8(first))
    let position: UInt32
    if let existing = slot(of: trial.id.rawValue) {
      // The old plan's heap entry goes stale: its plan no longer matches the slot.
      position = existing
      pendingEventCount -= remaining(in: slots[Int(position)])
      staleEntries += 1
      slots[Int(position)] = new
    } else {
      position = claimSlot(new)
    }
    pendingEventCount += remaining(in: new)
    heap.insert(Entry(due: due(of: new, index: new.next), plan: new.plan, slot: position))
    tidy()
  }

  /// Events of the trial from `next` on, the expiry included.
  func remaining(in slot: Slot) -> Int {
    scheduleSeconds[Int(slot.schedule)].count - Int(slot.next)
  }

  func due(of slot: Slot, index: UInt8) -> Double {
    slot.end - scheduleSeconds[Int(slot.schedule)][Int(index)]
  }

  /// The kind of the event at `index` of a slot's schedule.
  func kind(of slot: Slot, index: UInt8) -> EventKind {
    // In place: a copy of the schedule would retain each of its arrays, per event.
    let (index, number) = (Int(index), Int(slot.schedule))
    if index < schedules[number].reminders.offsets.count {
      return .reminder(before: schedules[number].reminders.offsets[index])
    }
    let expiry = schedules[number].expiryIndex
    if index < expiry { return .graceStarted }
    return index == expiry ? .expiry : .followUp(after: schedules[number].followUps.spans[index - expiry - 1])
  }

  func event(of slot: Slot, index: UInt8) -> TrialEvent {
    let kind = kind(of: slot, index: index)
    return TrialEvent(
      id: EventID(trialID: TrialID(slot.trial), revision: slot.revision, kind: kind),
      due: Date(timeIntervalSinceReferenceDate: due(of: slot, index: index)))
  }

  func isLive(_ entry: Entry) -> Bool {
    slots[Int(entry.slot)].plan == entry.plan
  }

  /// Keeps a live entry on top of the heap; packs the slots when most are free, and rebuilds
  /// the heap when stale entries outnumber live ones.
  private mutating func tidy() {
    if slots.count > compactionFloor && indexed < slots.count / 4 {
      compact()
      return
    }
    if staleEntries > 1024 && staleEntries > indexed {
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

  /// When the planner wants `takeDue` called next: the earliest pending event held in full falls
  /// due, or the earliest far one comes within the lookahead (`moveHorizon`).
  public var nextDeadline: Date? {
    let due = [heap.min?.due, resumes.nextDue, milestones.nextDue, far.earliest.map { $0.due - lookahead }]
      .compactMap { $0 }.min()
    return due.map { Date(timeIntervalSinceReferenceDate: $0) }
  }

  /// When the earliest pending event falls due, far ones included (theirs to the whole second
  /// at or before it: `FarTrials.second(of:)`).
  public var nextEventDue: Date? {
    let due = [heap.min?.due, resumes.nextDue, milestones.nextDue, far.earliest?.due].compactMap { $0 }.min()
    return due.map { Date(timeIntervalSinceReferenceDate: $0) }
  }

  /// The earliest pending event; nil when there is none, or when a far trial's may come first
  /// (`nextFarTrial`; it falls due in an earlier second than `nextHeldEvent`, or in the same).
  public var nextEvent: TrialEvent? {
    let next = nextHeldEvent
    if let far = far.earliest, next.map({ far.due < $0.due.timeIntervalSinceReferenceDate }) ?? true {
      return nil
    }
    return next
  }

  /// The earliest pending event held in full, leaving out the far trials.
  public var nextHeldEvent: TrialEvent? {
    let resume = resumes.next
    var next = resume
    if let top = heap.min, resume.map({ $0.due.timeIntervalSinceReferenceDate >= top.due }) ?? true {
      next = event(of: slots[Int(top.slot)], index: slots[Int(top.slot)].next)
    }
    // A milestone only when it comes strictly first.
    if let milestone = milestones.next, next.map({ milestone.due < $0.due }) ?? true { return milestone }
    return next
  }

  /// The pending event with this id, if it is still pending and held in full (a far trial's
  /// events are not: nil).
  public func pendingEvent(_ id: EventID) -> TrialEvent? {
    if let resume = resumes.event(of: id.trialID.rawValue) { return resume.id == id ? resume : nil }
    guard let position = slot(of: id.trialID.rawValue) else { return nil }
    let slot = slots[Int(position)]
    guard slot.revision == id.revision else { return nil }
    let schedule = schedules[Int(slot.schedule)]
    let offsets = schedule.reminders.offsets
    let found: Int
    switch id.kind {
    case .expiry:
      found = schedule.expiryIndex
    case .graceStarted:
      guard schedule.grace != .zero else { return nil }
      found = offsets.count
    case .followUp(let span):
      guard let position = schedule.followUps.spans.firstIndex(of: span) else { return nil }
      found = schedule.expiryIndex + 1 + position
    case .reminder(let offset):
      guard let position = offsets.firstIndex(of: offset) else { return nil }
      found = position
    case .paused, .resumed:
      return nil
    case .milestone:
      return milestones.events(of: id.trialID.rawValue).first { $0.id == id }
    }
    guard found >= Int(slot.next) else { return nil }
    return event(of: slot, index: UInt8(found))
  }

  // MARK: Taking due events

  /// Takes every event due at or before `now`, in due order (first in, first out for equal
  /// due times), and decides for each whether it fires or is skipped, by the catch-up policy.
  public mutating func takeDue(at now: Date) -> [DueEvent] {
    let limit = now.timeIntervalSinceReferenceDate
    var taken: [TrialEvent] = []
    var resumed = resumes.nextDue.map { $0 <= limit } == true ? resumes.takeDue(through: limit) : []
    if milestones.nextDue.map({ $0 <= limit }) == true { resumed += milestones.takeDue(through: limit) }
    pendingEventCount -= resumed.count
    while let top = heap.min, top.due <= limit {
      guard isLive(top) else {
        heap.removeMin()
        staleEntries -= 1
        continue
      }
      let position = Int(top.slot)
      var slot = slots[position]
      taken.append(event(of: slot, index: slot.next))
      pendingEventCount -= 1
      slot.next += 1
      if remaining(in: slot) == 0 {
        heap.removeMin()
        release(top.slot)
      } else if isFar(due(of: slot, index: slot.next), now: limit) {
        // Its next event falls due beyond the horizon: held far until then.
        heap.removeMin()
        far.insert(slot.trial, due: due(of: slot, index: slot.next), events: remaining(in: slot))
        release(top.slot)
      } else {
        // The trial's next event takes the place of the one just taken: one sift instead of two.
        slots[position] = slot
        heap.replaceMin(with: Entry(due: due(of: slot, index: slot.next), plan: slot.plan, slot: top.slot))
      }
    }
    tidy()
    if !resumed.isEmpty {
      // Merged by due time: a paused trial has no other event, a trial's milestones are in order.
      taken = (resumed + taken).enumerated().sorted {
        $0.element.due != $1.element.due ? $0.element.due < $1.element.due : $0.offset < $1.offset
      }.map(\.element)
    }
    return applyPolicy(to: taken, at: now)
  }
}
