import TrialCore

// The conversion figures (database `cohorts`, since schema 7), one record per cohort: the trials
// of one plan started on one UTC day (`TrialStats`).
// Key: the day (days since 1970-01-01) plus 2^31 as u32 big-endian, then the plan (UTF-8; empty
// for trials without one), so that cohorts sort by day.
// Value, version 1: u8 version, u64 started, converted, cancelled, expired, paused (little-endian),
//   u32 n, n × (u32 hours, u64 conversions) by hours.

enum CohortRecords {
  static let version: UInt8 = 1

  static func key(_ cohort: CohortKey) -> [UInt8] {
    withUnsafeBytes(of: (UInt32(bitPattern: cohort.day) ^ 0x8000_0000).bigEndian) { Array($0) }
      + Array(cohort.plan.utf8)
  }

  static func cohort(_ key: UnsafeRawBufferPointer) throws -> CohortKey {
    guard key.count >= 4, let plan = String(validating: key[4...], as: UTF8.self) else {
      throw RecordProblem("the key is not a day and a plan")
    }
    let day = UInt32(bigEndian: key.loadUnaligned(as: UInt32.self)) ^ 0x8000_0000
    return CohortKey(day: Int32(bitPattern: day), plan: plan)
  }

  static func encode(_ counts: CohortCounts, into writer: inout ByteWriter) {
    writer.u8(version)
    for value in [counts.started, counts.converted, counts.cancelled, counts.expired, counts.paused] {
      writer.u64(UInt64(bitPattern: value))
    }
    let conversions = counts.conversionHours
    writer.u32(UInt32(conversions.hours.count))
    for (hours, count) in zip(conversions.hours, conversions.counts) {
      writer.u32(hours)
      writer.u64(UInt64(bitPattern: count))
    }
  }

  static func decode(_ value: UnsafeRawBufferPointer) throws -> CohortCounts {
    var reader = ByteReader(value)
    let found = try reader.u8()
    guard found == version else { throw RecordProblem("unknown record version \(found)") }
    var counts = CohortCounts()
    counts.started = Int64(bitPattern: try reader.u64())
    counts.converted = Int64(bitPattern: try reader.u64())
    counts.cancelled = Int64(bitPattern: try reader.u64())
    counts.expired = Int64(bitPattern: try reader.u64())
    counts.paused = Int64(bitPattern: try reader.u64())
    let count = Int(try reader.u32())
    guard count <= value.count / 12 else {
      throw RecordProblem("\(count) conversion hours do not fit in the record")
    }
    var hours: [UInt32] = []
    var conversions: [Int64] = []
    hours.reserveCapacity(count)
    conversions.reserveCapacity(count)
    for _ in 0..<count {
      hours.append(try reader.u32())
      conversions.append(Int64(bitPattern: try reader.u64()))
    }
    guard let pairs = ConversionHours(hours: hours, counts: conversions) else {
      throw RecordProblem("the conversion hours are not in order, or a count is not above zero")
    }
    counts.conversionHours = pairs
    try reader.expectEnd()
    guard addsUp(counts) else {
      throw RecordProblem("the figures do not add up (a count below zero, or more ended than started)")
    }
    return counts
  }

  /// No count below zero, no more ended or paused than started, and as many conversions by
  /// hours as converted; summed without overflow, as a damaged record may hold any numbers.
  private static func addsUp(_ counts: CohortCounts) -> Bool {
    var left = counts.started
    for part in [counts.converted, counts.cancelled, counts.expired, counts.paused] {
      guard part >= 0, part <= left else { return false }
      left -= part
    }
    var unplaced = counts.converted
    for conversions in counts.conversionHours.counts {
      guard conversions <= unplaced else { return false }
      unplaced -= conversions
    }
    return unplaced == 0
  }
}

extension StoreReadTransaction {
  func storedCohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
    guard let cohorts = databases.cohorts, from <= through else { return [] }
    var found: [(key: CohortKey, counts: CohortCounts)] = []
    try txn.withCursor(cohorts) { cursor in
      var item = try CohortRecords.key(CohortKey(day: from, plan: "")).withUnsafeBytes { try cursor.seek($0) }
      while let (key, value) = item {
        let cohort = try decoding(key, in: "cohorts", path: path) { try CohortRecords.cohort(key) }
        guard cohort.day <= through else { break }
        found.append(
          (cohort, try decoding(key, in: "cohorts", path: path) { try CohortRecords.decode(value) }))
        item = try cursor.next()
      }
    }
    return found
  }
}

extension StoreWriteTransaction {
  /// Adds the figures gathered in `cohortDeltas` to their records (`finish`, and before a read
  /// of the figures in this transaction).
  func writeCohorts() throws {
    guard !cohortDeltas.isEmpty else { return }
    guard let cohorts = databases.cohorts else {
      throw StoreError(.damaged, path: path, problem: "the store has no \"cohorts\" database")
    }
    for (cohort, delta) in cohortDeltas.sorted(by: { $0.key < $1.key }) {
      try CohortRecords.key(cohort).withUnsafeBytes { key in
        var counts =
          try txn.get(cohorts, key).map { value in
            try decoding(key, in: "cohorts", path: path) { try CohortRecords.decode(value) }
          } ?? CohortCounts()
        counts.add(delta)
        writer.reset()
        CohortRecords.encode(counts, into: &writer)
        try writer.bytes.withUnsafeBytes { try txn.put(cohorts, key, $0) }
      }
    }
    cohortDeltas = [:]
  }
}
