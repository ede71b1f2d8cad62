import HeapModule

/// The planner's storage: slots claimed and released, the index from trial ids to slots, and
/// the packing of both.
///
/// The index is a hash table of slot numbers with open addressing and linear probing: each
/// bucket holds a slot number plus one, or 0 when empty, and the trial id it stands for is read
/// from its slot, so that a bucket takes 4 bytes. At most half the buckets are in use. A
/// removal shifts the buckets after it back, so that no marker of a removed key is left.
/// The hash is the standard library's (seeded afresh in each process), so that no choice of
/// trial ids can make every trial fall into one run of buckets.
extension Planner {
  // MARK: Slots

  /// Puts a trial's slot in a free place, and in the index.
  mutating func claimSlot(_ slot: Slot) -> UInt32 {
    // Grown first: a table made afresh holds every slot in use.
    growIndex(toHold: indexed + 1)
    let position: UInt32
    if let free = freeSlots.popLast() {
      slots[Int(free)] = slot
      position = free
    } else {
      slots.append(slot)
      position = UInt32(slots.count - 1)
    }
    insertIntoIndex(position)
    return position
  }

  /// Frees a trial's slot and takes it out of the index; its heap entry, if any, goes stale.
  mutating func release(_ slot: UInt32) {
    removeFromIndex(slot)
    slots[Int(slot)].plan = 0
    freeSlots.append(slot)
  }

  // MARK: The index

  private static func hash(_ trial: UInt64) -> Int {
    trial.hashValue
  }

  /// The slot of the trial with this id, if it has one.
  func slot(of trial: UInt64) -> UInt32? {
    guard indexed > 0 else { return nil }
    let mask = buckets.count - 1
    var bucket = Self.hash(trial) & mask
    while true {
      let value = buckets[bucket]
      if value == 0 { return nil }
      if slots[Int(value - 1)].trial == trial { return value - 1 }
      bucket = (bucket + 1) & mask
    }
  }

  /// Adds a slot whose trial is not in the index yet, to a table with room for it.
  private mutating func insertIntoIndex(_ slot: UInt32) {
    let mask = buckets.count - 1
    var bucket = Self.hash(slots[Int(slot)].trial) & mask
    while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
    buckets[bucket] = slot + 1
    indexed += 1
  }

  /// Takes a slot out of the index (its trial id still in it). The buckets after it, up to
  /// the next empty one, move back into the gap where they may: where their home bucket does
  /// not lie between the gap and them.
  private mutating func removeFromIndex(_ slot: UInt32) {
    let mask = buckets.count - 1
    var gap = Self.hash(slots[Int(slot)].trial) & mask
    while buckets[gap] != slot + 1 { gap = (gap + 1) & mask }
    var probe = gap
    while true {
      probe = (probe + 1) & mask
      let value = buckets[probe]
      if value == 0 { break }
      let home = Self.hash(slots[Int(value - 1)].trial) & mask
      if (probe &- home) & mask >= (probe &- gap) & mask {
        buckets[gap] = value
        gap = probe
      }
    }
    buckets[gap] = 0
    indexed -= 1
  }

  /// Makes the table large enough for `count` trials (at most half full), keeping its
  /// contents.
  mutating func growIndex(toHold count: Int) {
    var size = Swift.max(buckets.count, 16)
    while size < count * 2 { size *= 2 }
    guard size != buckets.count else { return }
    buckets = Self.table(of: size, for: slots)
  }

  /// A table of `size` buckets holding every slot in use.
  private static func table(of size: Int, for slots: [Slot]) -> [UInt32] {
    var table = [UInt32](repeating: 0, count: size)
    let mask = size - 1
    for (position, slot) in slots.enumerated() where slot.plan != 0 {
      var bucket = hash(slot.trial) & mask
      while table[bucket] != 0 { bucket = (bucket + 1) & mask }
      table[bucket] = UInt32(position) + 1
    }
    return table
  }

  // MARK: Packing

  /// Packs the slots in use at the front, numbers their plans again from 1 in the order they
  /// had (so equal due times still go first in, first out), and builds the heap and the
  /// index afresh for them: stale entries and free slots are gone, and each array is only as
  /// large as what it holds. Done when plan numbers run out, and when most slots are free.
  mutating func compact() {
    var kept = slots.filter { $0.plan != 0 }
    kept.sort { $0.plan < $1.plan }
    var entries: [Entry] = []
    entries.reserveCapacity(kept.count)
    for position in kept.indices {
      kept[position].plan = UInt32(position + 1)
      let slot = kept[position]
      entries.append(Entry(due: due(of: slot, index: slot.next), plan: slot.plan, slot: UInt32(position)))
    }
    slots = kept
    freeSlots = []
    lastPlan = UInt32(kept.count)
    staleEntries = 0
    heap = Heap(entries)
    var size = 16
    while size < kept.count * 2 { size *= 2 }
    buckets = Self.table(of: size, for: slots)
  }
}

extension Planner {
  /// The number of `schedule` among the interned ones, interning it when new. Most trials share
  /// their plan's schedule: the one interned last answers without hashing it.
  mutating func intern(_ schedule: Schedule) -> UInt32 {
    if let last = lastInterned, last.schedule == schedule { return last.index }
    let index: UInt32
    if let known = scheduleIndex[schedule] {
      index = known
    } else {
      index = UInt32(schedules.count)
      schedules.append(schedule)
      scheduleSeconds.append(
        Self.eventSeconds(schedule.reminders, grace: schedule.grace, followUps: schedule.followUps))
      scheduleIndex[schedule] = index
    }
    lastInterned = (schedule, index)
    return index
  }

  /// The events of a revision with `reminders` whose expiry falls due `grace` after the end, as
  /// seconds before the end, in due order; `followUps` after the expiry.
  static func eventSeconds(
    _ reminders: ReminderSchedule, grace: Duration, followUps: FollowUpSchedule = .none
  )
    -> [Double]
  {
    let offsets = reminders.offsets.map(\.timeInterval)
    let events = grace == .zero ? offsets + [0] : offsets + [0, -grace.timeInterval]
    return followUps.isEmpty ? events : events + followUps.spans.map { -(grace + $0).timeInterval }
  }
}
