import FoundationEssentials
import TrialCore

// The conversion figures (`trialwatch.cohort` and `trialwatch.cohort_conversion`, since schema
// version 8), read and written by the transactions.

extension PostgresReadTransaction {
  func cohorts(from: Int32, through: Int32) throws -> [(key: CohortKey, counts: CohortCounts)] {
    guard from <= through else { return [] }
    let range = [String(from), String(through)]
    let rows = try query(
      """
      SELECT day, plan, sum(started)::bigint, sum(converted)::bigint, sum(cancelled)::bigint,
        sum(expired)::bigint, sum(paused)::bigint
      FROM trialwatch.cohort WHERE day BETWEEN $1 AND $2 GROUP BY day, plan ORDER BY day, plan COLLATE "C"
      """, range)
    let conversions = try query(
      """
      SELECT day, plan, hours, sum(n)::bigint FROM trialwatch.cohort_conversion WHERE day BETWEEN $1 AND $2
      GROUP BY day, plan, hours HAVING sum(n) <> 0
      """, range)
    var hours: [CohortKey: ConversionHours] = [:]
    for row in 0..<conversions.rows {
      guard let day = conversions.int64(row, 0), let plan = conversions.string(row, 1),
        let bucket = conversions.int64(row, 2), let count = conversions.int64(row, 3), bucket >= 0, count > 0
      else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.cohort_conversion") }
      hours[CohortKey(day: Int32(clamping: day), plan: plan), default: ConversionHours()].add(
        hours: UInt32(clamping: bucket), count)
    }
    return try (0..<rows.rows).map { row in
      guard let day = rows.int64(row, 0), let plan = rows.string(row, 1), let started = rows.int64(row, 2),
        let converted = rows.int64(row, 3), let cancelled = rows.int64(row, 4),
        let expired = rows.int64(row, 5),
        let paused = rows.int64(row, 6)
      else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.cohort") }
      let key = CohortKey(day: Int32(clamping: day), plan: plan)
      return (
        key,
        CohortCounts(
          started: started, converted: converted, cancelled: cancelled, expired: expired, paused: paused,
          conversionHours: hours[key] ?? ConversionHours())
      )
    }
  }
}

extension PostgresWriteTransaction {
  func addToCohort(_ key: CohortKey, _ delta: CohortCounts) throws {
    cohortWrites[key, default: CohortCounts()].add(delta)
  }

  /// The changes to the figures, added to this writer's rows in the slot its trial counts take
  /// (`PostgresSchema.upgradeTo8`): no other writer waits on them.
  func writeCohorts(into query: inout WriteQuery) {
    let writes = cohortWrites.sorted { $0.key < $1.key }.filter { !$0.value.isZero }
    cohortWrites = [:]
    guard !writes.isEmpty else { return }
    let counts: [KeyPath<CohortCounts, Int64>] = [\.started, \.converted, \.cancelled, \.expired, \.paused]
    let p =
      [
        PGArray.literal(writes.map { Int64($0.key.day) }),
        PGArray.literal(writes.map { Optional($0.key.plan) }),
      ].map { query.bind($0) }
      + counts.map { count in query.bind(PGArray.literal(writes.map { $0.value[keyPath: count] })) }
    query.write(
      """
      INSERT INTO trialwatch.cohort AS c (day, plan, writer, slot, started, converted, cancelled, expired, paused)
      SELECT u.d, u.p, trialwatch.writer(), (SELECT trialwatch.writer_slot()), u.s, u.cv, u.ca, u.e, u.pa
      FROM unnest(\(p[0])::integer[], \(p[1])::text[], \(p[2])::bigint[], \(p[3])::bigint[],
        \(p[4])::bigint[], \(p[5])::bigint[], \(p[6])::bigint[]) AS u(d, p, s, cv, ca, e, pa)
      ON CONFLICT (day, plan, writer, slot) DO UPDATE SET started = c.started + excluded.started,
        converted = c.converted + excluded.converted, cancelled = c.cancelled + excluded.cancelled,
        expired = c.expired + excluded.expired, paused = c.paused + excluded.paused
      """)
    let conversions = writes.flatMap { write in
      zip(write.value.conversionHours.hours, write.value.conversionHours.counts).map {
        (write.key, $0.0, $0.1)
      }
    }
    guard !conversions.isEmpty else { return }
    let c = [
      PGArray.literal(conversions.map { Int64($0.0.day) }),
      PGArray.literal(conversions.map { Optional($0.0.plan) }),
      PGArray.literal(conversions.map { Int64($0.1) }),
      PGArray.literal(conversions.map { $0.2 }),
    ].map { query.bind($0) }
    query.write(
      """
      INSERT INTO trialwatch.cohort_conversion AS c (day, plan, hours, writer, slot, n)
      SELECT u.d, u.p, u.h, trialwatch.writer(), (SELECT trialwatch.writer_slot()), u.n
      FROM unnest(\(c[0])::integer[], \(c[1])::text[], \(c[2])::integer[], \(c[3])::bigint[]) AS u(d, p, h, n)
      ON CONFLICT (day, plan, hours, writer, slot) DO UPDATE SET n = c.n + excluded.n
      """)
  }
}

extension PostgresTrialRepository {
  /// The statement of `cohortsByVariant`: $1 the plan, $2 and $3 the bounds of the starts
  /// (`start_s`), served by the index `trial_plan_variant`.
  static let variantFiguresSQL = """
    SELECT variant, state, CASE WHEN state = 'converted'
        THEN floor(greatest(0, coalesce(ended_s, start_s) - start_s) / 3600)::bigint END,
      count(*)::bigint
    FROM trialwatch.trial
    WHERE attributes->>'plan' = $1 AND variant IS NOT NULL AND start_s >= $2 AND start_s < $3
    GROUP BY 1, 2, 3
    """

  /// The figures by variant of one plan's trials started in the days given, in one statement
  /// grouped by the database (`trial.variant`, generated from the attribute, and the index
  /// `trial_plan_variant` by plan and variant since schema version 14): a row for each variant,
  /// state and, of the converted, whole hours from start to conversion.
  public func cohortsByVariant(plan: String, from: Int32, through: Int32) throws -> [String: CohortCounts] {
    guard from <= through else { return [:] }
    let result = try readStatement(
      Self.variantFiguresSQL,
      [
        plan, PostgresRecords.sql(Date(timeIntervalSince1970: Double(from) * 86_400)),
        PostgresRecords.sql(Date(timeIntervalSince1970: (Double(through) + 1) * 86_400)),
      ])
    var figures: [String: CohortCounts] = [:]
    for row in 0..<result.rows {
      guard let variant = result.string(row, 0), let state = result.string(row, 1).flatMap(TrialState.init),
        let count = result.int64(row, 3)
      else { throw PostgresStoreError.damaged("an unreadable row of trialwatch.trial by variant") }
      var counts = CohortCounts(started: count)
      switch state {
      case .active, .grace: break
      case .paused: counts.paused = count
      case .expired: counts.expired = count
      case .cancelled: counts.cancelled = count
      case .converted:
        counts.converted = count
        counts.conversionHours.add(hours: UInt32(clamping: max(0, result.int64(row, 2) ?? 0)), count)
      }
      figures[variant, default: CohortCounts()].add(counts)
    }
    return figures
  }
}
