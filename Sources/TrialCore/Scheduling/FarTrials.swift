/// The planner's far trials: those whose next pending event falls due beyond its horizon, held
/// as little as the daemon can hold them (a trial's id, when its next event falls due and how
/// many events it has pending) until the horizon reaches them, when the planner holds them in
/// full again, read back from the store.
///
/// A due time is held to the whole second at or before it (`second(of:)`: seconds since the
/// reference date, in 32 bits, up to the year 2137), so a far trial is never brought near later
/// than its due time; which of its events is next follows from its count of pending ones.
///
/// A hash table with open addressing and linear probing, in three arrays of one bucket each:
/// 8 + 4 + 1 bytes a bucket, kept between three quarters and nine tenths full (about 16 bytes a
/// trial), and packed when fewer than a third are in use. The bucket of an id is chosen by the
/// standard library's hash, seeded afresh in each process. A removal shifts the buckets after it
/// back, so that no marker of a removed key is left.
struct FarTrials: Sendable {
  private var trials: [UInt64] = []
  /// The whole second at or before each trial's next due time (`second(of:)`).
  private var seconds: [UInt32] = []
  /// The trial's pending events in each bucket; 0: the bucket is empty.
  private var counts: [UInt8] = []
  /// Trials held.
  private(set) var count = 0
  /// Their pending events, all together.
  private(set) var events = 0
  /// The trial whose next event falls due in the first second held (ties: the smaller id), and
  /// that second (`second(of:)`: at or before the due time).
  private(set) var earliest: (due: Double, trial: UInt64)? {
    didSet { earliestChanges &+= 1 }
  }
  /// Counts the changes of `earliest` (a trial planned again counts, even to the same second),
  /// so that what was read for it may be kept until it changes.
  private(set) var earliestChanges: UInt64 = 0

  /// Buckets in the table, in use or not.
  var buckets: Int { counts.count }

  /// The most events a far trial may have pending: its reminders and its expiry.
  static let maximumEvents = Int(UInt8.max)

  /// The whole second at or before `due` (seconds since the reference date), as held: from 0
  /// (the reference date) to `UInt32.max` (in 2137), a due time beyond held as that second.
  static func second(of due: Double) -> Double {
    Swift.min(Swift.max(due.rounded(.down), 0), Double(UInt32.max))
  }

  /// `second(of:)` in 32 bits, as held: a conversion toward zero, which for a due time not
  /// before the reference date is the whole second at or before it, without a call to `floor`.
  static func heldSecond(of due: Double) -> UInt32 {
    UInt32(Swift.min(Swift.max(due, 0), Double(UInt32.max)))
  }

  // MARK: Finding

  private func home(of trial: UInt64) -> Int {
    let hash = UInt64(UInt(bitPattern: trial.hashValue))
    return Int(truncatingIfNeeded: hash.multipliedFullWidth(by: UInt64(counts.count)).high)
  }

  private func after(_ bucket: Int) -> Int {
    bucket + 1 == counts.count ? 0 : bucket + 1
  }

  private func bucket(of trial: UInt64) -> Int? {
    guard count > 0 else { return nil }
    var bucket = home(of: trial)
    while counts[bucket] != 0 {
      if trials[bucket] == trial { return bucket }
      bucket = after(bucket)
    }
    return nil
  }

  func contains(_ trial: UInt64) -> Bool {
    bucket(of: trial) != nil
  }

  /// The second the trial's next event falls due in (`second(of:)`) and how many events it has
  /// pending, if it is held here.
  func due(of trial: UInt64) -> (second: Double, events: Int)? {
    bucket(of: trial).map { (Double(seconds[$0]), Int(counts[$0])) }
  }

  /// Every trial held, in no order.
  var ids: [UInt64] {
    counts.indices.filter { counts[$0] != 0 }.map { trials[$0] }
  }

  /// The trials whose next event falls due in a second (`second(of:)`) at or before `limit`,
  /// earliest first (ties: by id): all whose next event falls due by `limit`, and those due
  /// within the second after it.
  func due(through limit: Double) -> [UInt64] {
    guard let earliest, earliest.due <= limit else { return [] }
    var found: [(due: UInt32, trial: UInt64)] = []
    for bucket in counts.indices where counts[bucket] != 0 && Double(seconds[bucket]) <= limit {
      found.append((seconds[bucket], trials[bucket]))
    }
    return found.sorted { $0 < $1 }.map(\.trial)
  }

  /// Counts every trial held by the second its next event falls due in
  /// (`Planner.trialsDue(through:)`).
  func tally(into tally: inout DueTally) {
    tally.add(seconds: zip(counts, seconds).lazy.filter { $0.0 != 0 }.map(\.1))
  }

  // MARK: Changing

  /// Holds a trial not held yet, with `events` (1 ... `maximumEvents`) pending from `due` on.
  mutating func insert(_ trial: UInt64, due: Double, events: Int) {
    precondition((1...Self.maximumEvents).contains(events), "\(events) events pending for a far trial")
    place(trial, second: UInt32(Self.second(of: due)), events: UInt8(events))
  }

  private mutating func place(_ trial: UInt64, second: UInt32, events: UInt8) {
    if (count + 1) * 10 > counts.count * 9 { resize(toHold: count + 1) }
    var bucket = home(of: trial)
    while counts[bucket] != 0 { bucket = after(bucket) }
    trials[bucket] = trial
    seconds[bucket] = second
    counts[bucket] = events
    count += 1
    self.events += Int(events)
    let due = Double(second)
    if earliest.map({ (due, trial) < ($0.due, $0.trial) }) ?? true { earliest = (due, trial) }
  }

  /// Lets go of a trial; returns how many events it had pending (0: it was not held).
  @discardableResult
  mutating func remove(_ trial: UInt64) -> Int {
    let removed = take(trial)
    if removed > 0 { settle() }
    return removed
  }

  /// Lets go of these trials; returns how many events they had pending.
  @discardableResult
  mutating func remove(_ trials: some Sequence<UInt64>) -> Int {
    let removed = trials.reduce(0) { $0 + take($1) }
    settle()
    return removed
  }

  /// Makes room for `trials` in all, to avoid growing one step at a time while a store loads.
  mutating func reserveCapacity(_ trials: Int) {
    if trials * 10 > counts.count * 9 { resize(toHold: trials) }
  }

  /// Takes a trial out of the table, leaving `earliest` and the table's size to `settle`.
  @discardableResult
  private mutating func take(_ trial: UInt64) -> Int {
    guard var gap = bucket(of: trial) else { return 0 }
    let removed = Int(counts[gap])
    count -= 1
    events -= removed
    // The buckets after the gap, up to the next empty one, move back into it where they may:
    // where their home bucket does not lie between the gap and them.
    var probe = gap
    while true {
      probe = after(probe)
      if counts[probe] == 0 { break }
      if distance(from: home(of: trials[probe]), to: probe) >= distance(from: gap, to: probe) {
        trials[gap] = trials[probe]
        seconds[gap] = seconds[probe]
        counts[gap] = counts[probe]
        gap = probe
      }
    }
    counts[gap] = 0
    if earliest?.trial == trial { earliest = nil }
    return removed
  }

  private func distance(from start: Int, to end: Int) -> Int {
    end >= start ? end - start : end + counts.count - start
  }

  /// After removals: packs the table when fewer than a third of its buckets are in use, and
  /// finds the earliest trial again when it was removed.
  private mutating func settle() {
    if counts.count > 64 && count * 3 < counts.count {
      resize(toHold: count)
    } else if earliest == nil && count > 0 {
      for bucket in counts.indices where counts[bucket] != 0 {
        let due = Double(seconds[bucket])
        if earliest.map({ (due, trials[bucket]) < ($0.due, $0.trial) }) ?? true {
          earliest = (due, trials[bucket])
        }
      }
    }
  }

  /// A table of about `held` ÷ 0.75 buckets holding every trial held; finds `earliest` again.
  private mutating func resize(toHold held: Int) {
    let size = Swift.max(16, held + held / 3 + 1)
    var table = FarTrials()
    table.earliestChanges = earliestChanges
    table.trials = [UInt64](repeating: 0, count: size)
    table.seconds = [UInt32](repeating: 0, count: size)
    table.counts = [UInt8](repeating: 0, count: size)
    for bucket in counts.indices where counts[bucket] != 0 {
      table.place(trials[bucket], second: seconds[bucket], events: counts[bucket])
    }
    self = table
  }
}
