/// The planner's far trials: those whose next pending event falls due beyond its horizon, held
/// as little as the daemon can hold them (a trial's id, when its next event falls due and how
/// many events it has pending) until the horizon reaches them, when the planner holds them in
/// full again, read back from the store.
///
/// A hash table with open addressing and linear probing, in three arrays of one bucket each:
/// 8 + 8 + 1 bytes a bucket, kept between three quarters and nine tenths full (about 20 bytes a
/// trial), and packed when fewer than a third are in use. The bucket of an id is chosen by the
/// standard library's hash, seeded afresh in each process. A removal shifts the buckets after it
/// back, so that no marker of a removed key is left.
struct FarTrials: Sendable {
  private var trials: [UInt64] = []
  private var dues: [Double] = []
  /// The trial's pending events in each bucket; 0: the bucket is empty.
  private var counts: [UInt8] = []
  /// Trials held.
  private(set) var count = 0
  /// Their pending events, all together.
  private(set) var events = 0
  /// The trial whose next event falls due first (ties: the smaller id), and when.
  private(set) var earliest: (due: Double, trial: UInt64)?

  /// Buckets in the table, in use or not.
  var buckets: Int { counts.count }

  /// The most events a far trial may have pending: its reminders and its expiry.
  static let maximumEvents = Int(UInt8.max)

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

  /// When the trial's next event falls due, if it is held here.
  func due(of trial: UInt64) -> Double? {
    bucket(of: trial).map { dues[$0] }
  }

  /// Every trial held, in no order.
  var ids: [UInt64] {
    counts.indices.filter { counts[$0] != 0 }.map { trials[$0] }
  }

  /// The trials whose next event falls due at or before `limit`, earliest first (ties: by id).
  func due(through limit: Double) -> [UInt64] {
    guard let earliest, earliest.due <= limit else { return [] }
    var found: [(due: Double, trial: UInt64)] = []
    for bucket in counts.indices where counts[bucket] != 0 && dues[bucket] <= limit {
      found.append((dues[bucket], trials[bucket]))
    }
    return found.sorted { $0 < $1 }.map(\.trial)
  }

  // MARK: Changing

  /// Holds a trial not held yet, with `events` (1 ... `maximumEvents`) pending from `due` on.
  mutating func insert(_ trial: UInt64, due: Double, events: Int) {
    precondition((1...Self.maximumEvents).contains(events), "\(events) events pending for a far trial")
    if (count + 1) * 10 > counts.count * 9 { resize(toHold: count + 1) }
    var bucket = home(of: trial)
    while counts[bucket] != 0 { bucket = after(bucket) }
    trials[bucket] = trial
    dues[bucket] = due
    counts[bucket] = UInt8(events)
    count += 1
    self.events += events
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
        dues[gap] = dues[probe]
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
        if earliest.map({ (dues[bucket], trials[bucket]) < ($0.due, $0.trial) }) ?? true {
          earliest = (dues[bucket], trials[bucket])
        }
      }
    }
  }

  /// A table of about `held` ÷ 0.75 buckets holding every trial held; finds `earliest` again.
  private mutating func resize(toHold held: Int) {
    let size = Swift.max(16, held + held / 3 + 1)
    var table = FarTrials()
    table.trials = [UInt64](repeating: 0, count: size)
    table.dues = [Double](repeating: 0, count: size)
    table.counts = [UInt8](repeating: 0, count: size)
    for bucket in counts.indices where counts[bucket] != 0 {
      table.insert(trials[bucket], due: dues[bucket], events: Int(counts[bucket]))
    }
    self = table
  }
}
