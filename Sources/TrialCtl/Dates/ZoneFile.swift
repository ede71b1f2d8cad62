/// A compiled time zone file (TZif, RFC 8536) from the system's time zone database, read and
/// applied as glibc reads and applies it (`__tzfile_read`, `__tzfile_compute`): the 64-bit
/// data of version 2 and later (the 32-bit data of version 1), the footer's POSIX rule for
/// instants after the last transition, and leap-second corrections (the `right/` zones).
struct ZoneFile: Hashable, Sendable {
  struct LocalType: Hashable, Sendable {
    /// Seconds east of UTC.
    var offset: Int
    var isDaylight: Bool
  }

  struct Leap: Hashable, Sendable {
    var transition: Int64
    var correction: Int64
  }

  /// The instants at which the local type changes, in seconds since 1970, ascending.
  var transitions: [Int64]
  /// For each transition, the index of the type in effect from it.
  var transitionTypes: [Int]
  var types: [LocalType]
  var leaps: [Leap]
  /// The footer's rule, for instants from the last transition on.
  var footer: PosixZoneRule?

  /// The file's contents read; nil when they are not a time zone file glibc would accept.
  init?(_ bytes: [UInt8]) {
    var reader = ByteReader(bytes: bytes[...])
    guard let header = reader.header() else { return nil }
    var counts = header.counts
    var timeSize = 4
    if header.version != 0 {
      // Skip the 32-bit data for the 64-bit data that follows it.
      guard reader.skip(counts.dataSize(timeSize: 4)), let second = reader.header() else { return nil }
      counts = second.counts
      timeSize = 8
    }
    guard counts.types > 0, let transitions = reader.integers(counts.transitions, size: timeSize),
      let indices = reader.take(counts.transitions), let rawTypes = reader.take(counts.types * 6),
      reader.skip(counts.characters), let rawLeaps = reader.integers(2 * counts.leaps, size: timeSize, 4),
      reader.skip(counts.standardIndicators + counts.utcIndicators)
    else { return nil }
    self.transitions = transitions
    transitionTypes = indices.map(Int.init)
    guard transitionTypes.allSatisfy({ $0 < counts.types }) else { return nil }
    types = []
    for start in stride(from: rawTypes.startIndex, to: rawTypes.endIndex, by: 6) {
      let offset = rawTypes[start..<start + 4].reduce(0) { $0 << 8 | UInt32($1) }
      guard rawTypes[start + 4] <= 1, Int(rawTypes[start + 5]) < max(counts.characters, 1) else { return nil }
      types.append(LocalType(offset: Int(Int32(bitPattern: offset)), isDaylight: rawTypes[start + 4] == 1))
    }
    leaps = stride(from: 0, to: rawLeaps.count, by: 2).map {
      Leap(transition: rawLeaps[$0], correction: rawLeaps[$0 + 1])
    }
    footer = nil
    if timeSize == 8, reader.bytes.first == UInt8(ascii: "\n") {
      let rest = reader.bytes.dropFirst()
      if let end = rest.firstIndex(of: UInt8(ascii: "\n")), end > rest.startIndex {
        footer = PosixZoneRule(Substring(decoding: rest[..<end], as: UTF8.self))
      }
    }
  }

  /// The local time at `seconds` since 1970, in seconds since 1970 as if UTC were local.
  func localSeconds(at seconds: Int64) -> Int64 {
    let offset: Int
    if transitions.isEmpty || seconds < transitions[0] {
      // Before the first transition: the first standard-time type, else the first type.
      offset = (types.first { !$0.isDaylight } ?? types[0]).offset
    } else if seconds >= transitions[transitions.count - 1] {
      if let footer, abs(seconds) <= PosixZoneRule.limit {
        offset = footer.offset(at: seconds)
      } else {
        offset = types[transitionTypes[transitions.count - 1]].offset
      }
    } else {
      // The last transition at or before `seconds`.
      var low = 0
      var high = transitions.count - 1
      while low + 1 < high {
        let middle = (low + high) / 2
        if seconds < transitions[middle] { high = middle } else { low = middle }
      }
      offset = types[transitionTypes[low]].offset
    }
    let correction = leaps.last { $0.transition <= seconds }?.correction ?? 0
    return seconds + Int64(offset) - correction
  }

  /// A cursor over the file's bytes.
  private struct ByteReader {
    struct Counts {
      var utcIndicators: Int
      var standardIndicators: Int
      var leaps: Int
      var transitions: Int
      var types: Int
      var characters: Int

      func dataSize(timeSize: Int) -> Int {
        transitions * (timeSize + 1) + types * 6 + characters + leaps * (timeSize + 4) + standardIndicators
          + utcIndicators
      }
    }

    var bytes: ArraySlice<UInt8>

    mutating func header() -> (version: UInt8, counts: Counts)? {
      guard bytes.starts(with: Array("TZif".utf8)), bytes.count >= 44 else { return nil }
      let version = bytes[bytes.startIndex + 4]
      bytes = bytes.dropFirst(20)
      guard let values = integers(6, size: 4), values.allSatisfy({ (0...1_000_000).contains($0) }) else {
        return nil
      }
      let counts = values.map(Int.init)
      return (
        version,
        Counts(
          utcIndicators: counts[0], standardIndicators: counts[1], leaps: counts[2], transitions: counts[3],
          types: counts[4], characters: counts[5])
      )
    }

    mutating func skip(_ count: Int) -> Bool {
      guard bytes.count >= count else { return false }
      bytes = bytes.dropFirst(count)
      return true
    }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
      guard bytes.count >= count else { return nil }
      defer { bytes = bytes.dropFirst(count) }
      return bytes.prefix(count)
    }

    /// `count` signed big-endian integers, alternately `size` and `otherSize` bytes long.
    mutating func integers(_ count: Int, size: Int, _ otherSize: Int? = nil) -> [Int64]? {
      var values: [Int64] = []
      for index in 0..<count {
        let width = index % 2 == 1 ? otherSize ?? size : size
        guard let field = take(width) else { return nil }
        let unsigned = field.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let shift = UInt64(64 - 8 * width)
        values.append(Int64(bitPattern: unsigned << shift) >> shift)
      }
      return values
    }
  }
}
