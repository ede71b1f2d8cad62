import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// The shared store's step for a second trial after a cooldown (`OnceFor=`): the uses of the
/// schema before it are kept, their last start filled from their first.
@Suite struct UseCooldownSchemaTests {
  /// The version the step upgrades from.
  static let before = PostgresSchema.steps.firstIndex(of: PostgresSchema.upgradeTo10)!

  static let folding = SubjectFolding { $0.lowercased() }
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "ddg": TrialPlan(name: "ddg", length: .days(14), reminders: .none, once: .plan, onceFor: .days(270))
    ])

  @Test func schemaBeforeCooldowns_IsUpgradedInPlace_TheLastStartsFilledFromTheFirst() throws {
    let conninfo = try PostgresSchemaTests.emptyDatabase()
    let connection = try PGConnection(conninfo: conninfo)
    try connection.executeScript(
      "BEGIN;\n" + PostgresSchema.steps[0..<Self.before].joined(separator: "\n")
        + """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '\(Self.before)'), ('shards', '4');
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, 3);
        \(PostgresSchemaTests.trialsAndEventsBeforeAttributes)
        INSERT INTO trialwatch.subject_use (scope, key, subject, plan, first_started_s, trial_id)
        VALUES ('plan:ddg', 'old-4', 'Old-4', 'ddg', 0, 4), ('all', 'old-1', 'old-1', 'team', 60, 1);
        COMMIT;
        """)
    #expect(try PostgresSchema.prepare(on: connection, shards: 4) == .upgraded(from: Self.before))
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
    let filled = try connection.execute(
      """
      SELECT string_agg(key || ' ' || last_trial_id || ' ' || (last_started_at = first_started_at), ','
        ORDER BY key) FROM trialwatch.subject_use
      """)
    #expect(filled.string(0, 0) == "old-1 1 true,old-4 4 true")

    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let old = try repository.read { try $0.subjectUse(scope: .plan("ddg"), key: "old-4") }
    #expect(
      old
        == SubjectUse(
          scope: .plan("ddg"), key: "old-4", subject: "Old-4", plan: "ddg",
          firstStartedAt: Date(timeIntervalSinceReferenceDate: 0), trial: TrialID(4)))
    func start(at seconds: Double, id: UInt64) throws -> Trial {
      try repository.write { txn in
        try TrialBook.apply(
          try .start(subject: "old-4", plan: "ddg"), in: txn,
          now: Date(timeIntervalSinceReferenceDate: seconds),
          defaults: Self.defaults, ids: SequenceTrialIDGenerator([id]), folding: Self.folding
        ).trial
      }
    }
    let refused = #expect(throws: TrialError.self) { try start(at: 86_400, id: 5) }
    #expect(
      refused?.code
        == .trialAlreadyUsed(
          try #require(old), availableAt: Date(timeIntervalSinceReferenceDate: 270 * 86_400)))
    let trial = try start(at: 270 * 86_400, id: 6)
    let row = try connection.execute(
      """
      SELECT trial_id, last_trial_id, last_started_at = trialwatch.time(\(270 * 86_400))
      FROM trialwatch.subject_use WHERE key = 'old-4'
      """)
    #expect(row.int64(0, 0) == 4 && row.int64(0, 1) == Int64(trial.id.rawValue) && row.bool(0, 2) == true)
  }

  /// A row a node of the schema before still running inserts (no last start) reads as its
  /// first start.
  @Test func rowWithoutALastStart_ReadsTheFirstAsTheLast() throws {
    let conninfo = try PostgresSchemaTests.emptyDatabase()
    let connection = try PGConnection(conninfo: conninfo)
    try PostgresSchema.prepare(on: connection, shards: 4)
    try connection.execute(
      """
      INSERT INTO trialwatch.subject_use (scope, key, subject, plan, first_started_s, trial_id)
      VALUES ('plan:ddg', 'k', 'K', 'ddg', 60, 9)
      """)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let use = try repository.read { try $0.subjectUse(scope: .plan("ddg"), key: "k") }
    #expect(use?.lastTrial == TrialID(9) && use?.lastStartedAt == Date(timeIntervalSinceReferenceDate: 60))
  }
}
