import FoundationEssentials

/// The outlook: how many trials have an event falling due by given times, counted from what the
/// planner holds, without the store.
extension Planner {
  /// For each of `limits`, how many trials have their next pending event (a reminder, the
  /// expiry, or a paused trial's resume) falling due by it, overdue ones included. A trial
  /// counts once, by its next event; a paused trial with no resume planned has none pending, and
  /// an ended trial is not held.
  ///
  /// Counted to the whole second: a trial counts when its next event falls due in the limit's
  /// whole second or an earlier one (`FarTrials.second(of:)` of both), that is before the end of
  /// the limit's second. A far trial is held by that second alone, so it is counted as exactly
  /// as a trial held in full. How many events each trial has pending by a limit is not told:
  /// the planner does not hold a far trial's later events.
  ///
  /// One pass over the trials held in full, the resumes and the far trials, for up to 16 limits
  /// at once (a pass for each 16 more): about 8 ms for a million trials held in full, 5 ms for a
  /// million far (`planner_outlook_ms` in docs/benchmarks.md).
  public func trialsDue(through limits: [Date]) -> [Int] {
    guard limits.count <= DueTally.width else {
      // A pass for each group of limits the tally takes at once.
      return stride(from: 0, to: limits.count, by: DueTally.width).flatMap {
        trialsDue(through: Array(limits[$0..<Swift.min($0 + DueTally.width, limits.count)]))
      }
    }
    var tally = DueTally(limits: limits.map { FarTrials.heldSecond(of: $0.timeIntervalSinceReferenceDate) })
    // Each schedule's offsets before the end in one array (its events' all, the expiry's 0 or
    // minus the grace): a slot's next due time is its end less the offset at its schedule's
    // first plus its next event.
    var offsets: [Double] = []
    var firsts: [Int] = []
    for schedule in scheduleSeconds {
      firsts.append(offsets.count)
      offsets += schedule
    }
    tally.add(
      seconds: slots.lazy.filter { $0.plan != 0 }.map { slot in
        FarTrials.heldSecond(of: slot.end - offsets[firsts[Int(slot.schedule)] + Int(slot.next)])
      })
    resumes.tally(into: &tally)
    far.tally(into: &tally)
    return tally.counts
  }
}

/// Trials counted by the second their next event falls due in (`FarTrials.second(of:)`), against
/// up to 16 limits in whole seconds: each trial adds one to the bin of the first limit (in
/// ascending order) it is due by, found by a binary search without a branch (the limits sorted and
/// padded to 16); the bins are then summed up in that order.
struct DueTally {
  /// The most limits a tally takes.
  static let width = 16

  /// The limits as given.
  private let limits: [UInt32]
  /// Ascending, without repeats, then `UInt32.max` up to `width` (no second is after it).
  private let bounds: [UInt32]
  /// For each bound, the trials due by it and not by the bound before; the last bin, the trials
  /// due after every bound.
  private var bins = [Int](repeating: 0, count: width + 1)

  init(limits: [UInt32]) {
    precondition(limits.count <= Self.width, "\(limits.count) limits, at most \(Self.width)")
    self.limits = limits
    let sorted = Set(limits).sorted()
    bounds = sorted + [UInt32](repeating: .max, count: Self.width - sorted.count)
  }

  /// Counts trials whose next events fall due in `seconds`.
  mutating func add(seconds: some Sequence<UInt32>) {
    bounds.withUnsafeBufferPointer { bounds in
      bins.withUnsafeMutableBufferPointer { bins in
        for second in seconds {
          // How many bounds are before the second (0 ... 16): the bin of the first at or after it.
          var before = bounds[7] < second ? 8 : 0
          before += bounds[before + 3] < second ? 4 : 0
          before += bounds[before + 1] < second ? 2 : 0
          before += bounds[before] < second ? 1 : 0
          before += bounds[before] < second ? 1 : 0
          bins[before] += 1
        }
      }
    }
  }

  /// For each limit as given, the trials due by it.
  var counts: [Int] {
    var total = 0
    var through: [UInt32: Int] = [:]
    for (bound, count) in zip(bounds, bins) where through[bound] == nil {
      total += count
      through[bound] = total
    }
    return limits.map { through[$0] ?? 0 }
  }
}
