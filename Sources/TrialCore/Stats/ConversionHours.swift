/// How many conversions took each number of whole hours from their trial's start: pairs in hours
/// order, no count zero. Sorted arrays rather than a dictionary, so that summing the cohorts of a
/// year (a few hundred pairs each) is a merge, and a record reads into one without hashing.
public struct ConversionHours: Hashable, Sendable, ExpressibleByDictionaryLiteral {
  public private(set) var hours: [UInt32] = []
  public private(set) var counts: [Int64] = []

  public init() {}

  public init(dictionaryLiteral elements: (UInt32, Int64)...) {
    for (hours, count) in elements { add(hours: hours, count) }
  }

  public var isEmpty: Bool { hours.isEmpty }
  /// The conversions in all.
  public var total: Int64 { counts.reduce(0, +) }

  public subscript(hours: UInt32) -> Int64 {
    guard let index = position(of: hours) else { return 0 }
    return counts[index]
  }

  /// Adds one pair; for a reader of pairs in hours order, an append.
  public mutating func add(hours: UInt32, _ count: Int64) {
    guard count != 0 else { return }
    if let last = self.hours.last, last < hours {
      self.hours.append(hours)
      counts.append(count)
      return
    }
    let index = self.hours.partitioningIndex { $0 >= hours }
    if index < self.hours.count, self.hours[index] == hours {
      counts[index] += count
      if counts[index] == 0 {
        self.hours.remove(at: index)
        counts.remove(at: index)
      }
    } else {
      self.hours.insert(hours, at: index)
      counts.insert(count, at: index)
    }
  }

  /// Adds `other` times `sign`: a merge of the two.
  public mutating func add(_ other: ConversionHours, times sign: Int64 = 1) {
    guard !other.isEmpty else { return }
    if isEmpty && sign == 1 {
      self = other
      return
    }
    var mergedHours: [UInt32] = []
    var mergedCounts: [Int64] = []
    mergedHours.reserveCapacity(hours.count + other.hours.count)
    mergedCounts.reserveCapacity(hours.count + other.hours.count)
    var mine = 0
    var theirs = 0
    while mine < hours.count || theirs < other.hours.count {
      let hour: UInt32
      var count: Int64 = 0
      if theirs == other.hours.count || (mine < hours.count && hours[mine] < other.hours[theirs]) {
        hour = hours[mine]
        count = counts[mine]
        mine += 1
      } else if mine == hours.count || other.hours[theirs] < hours[mine] {
        hour = other.hours[theirs]
        count = sign * other.counts[theirs]
        theirs += 1
      } else {
        hour = hours[mine]
        count = counts[mine] + sign * other.counts[theirs]
        mine += 1
        theirs += 1
      }
      if count != 0 {
        mergedHours.append(hour)
        mergedCounts.append(count)
      }
    }
    hours = mergedHours
    counts = mergedCounts
  }

  /// Pairs in strictly increasing hours order, with counts above zero, as a record holds them;
  /// nil when they are not.
  public init?(hours: [UInt32], counts: [Int64]) {
    guard hours.count == counts.count, counts.allSatisfy({ $0 > 0 }),
      zip(hours, hours.dropFirst()).allSatisfy({ $0 < $1 })
    else { return nil }
    self.hours = hours
    self.counts = counts
  }

  /// The sum of `parts`: one pass over a dense array of hours (up to the largest, when that is
  /// below a year and a half), else merges.
  public static func sum(_ parts: [ConversionHours]) -> ConversionHours {
    let largest = parts.compactMap(\.hours.last).max()
    guard let largest, largest < 13_200 else {
      var total = ConversionHours()
      for part in parts { total.add(part) }
      return total
    }
    var dense = [Int64](repeating: 0, count: Int(largest) + 1)
    for part in parts {
      for (hours, count) in zip(part.hours, part.counts) { dense[Int(hours)] += count }
    }
    var total = ConversionHours()
    for (hours, count) in dense.enumerated() where count != 0 {
      total.hours.append(UInt32(hours))
      total.counts.append(count)
    }
    return total
  }

  /// The hours of the `rank`-th conversion (from 1), in hours order.
  public func hours(ofRank rank: Int64) -> UInt32? {
    var seen: Int64 = 0
    for (index, count) in counts.enumerated() {
      seen += count
      if seen >= rank { return hours[index] }
    }
    return nil
  }

  private func position(of hours: UInt32) -> Int? {
    let index = self.hours.partitioningIndex { $0 >= hours }
    return index < self.hours.count && self.hours[index] == hours ? index : nil
  }
}

extension Array {
  /// The first index whose element satisfies `belongsInSecondPartition`, which is false for a
  /// prefix of the array and true for the rest.
  func partitioningIndex(where belongsInSecondPartition: (Element) -> Bool) -> Int {
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      if belongsInSecondPartition(self[middle]) { high = middle } else { low = middle + 1 }
    }
    return low
  }
}
