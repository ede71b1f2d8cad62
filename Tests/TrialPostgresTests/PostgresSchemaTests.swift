import Foundation
import TestSupport
import Testing
import TrialCore

@testable import TrialPostgres

/// The shared store's schema: created once, upgraded in place, refused when newer.
@Suite struct PostgresSchemaTests {
  static func database() throws -> PGConnection {
    try PGConnection(conninfo: try emptyDatabase())
  }

  /// The connection string of a fresh database.
  static func emptyDatabase() throws -> String {
    let server = try PostgresServer.shared()
    return server.conninfo(database: try server.createDatabase())
  }

  @Test func schema_OnAnEmptyDatabase_IsCreatedOnceThenCurrent() throws {
    let connection = try Self.database()
    #expect(try PostgresSchema.prepare(on: connection, shards: 16) == .created)
    #expect(try PostgresSchema.prepare(on: connection, shards: 16) == .current)
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
    let shards = try connection.execute("SELECT count(*), min(shard), max(shard) FROM trialwatch.shard")
    #expect([shards.int(0, 0), shards.int(0, 1), shards.int(0, 2)] == [16, 0, 15])
    #expect(try PostgresSchema.shardCount(on: connection) == 16)
  }

  @Test func schema_OfAnOlderVersion_IsUpgradedInPlaceKeepingItsRows() throws {
    let connection = try Self.database()
    try connection.executeScript(
      "BEGIN;\n" + PostgresSchema.steps[0]
        + """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '1'), ('shards', '4');
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, 3);
        INSERT INTO trialwatch.node (name) VALUES ('old-node');
        COMMIT;
        """)
    #expect(try PostgresSchema.prepare(on: connection, shards: 4) == .upgraded(from: 1))
    let node = try connection.execute("SELECT name, version FROM trialwatch.node")
    #expect(node.string(0, 0) == "old-node")
    #expect(node.rows == 1 && node.string(0, 1) == nil)
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
  }

  /// Trials in every state, written as a node of schema version 2 would: 250 of each.
  static let version2Trials = """
    INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, reminders_ms)
    SELECT g, g % 4, 'subject-' || g, (ARRAY['active', 'expired', 'converted', 'cancelled'])[1 + g % 4], 1, 0, 60,
      '{}'
    FROM generate_series(1, 1000) g;
    """

  @Test func schema_OfVersion2WithTrials_IsUpgradedInPlaceWithItsCounts() throws {
    let conninfo = try Self.emptyDatabase()
    let connection = try PGConnection(conninfo: conninfo)
    try connection.executeScript(
      "BEGIN;\n" + PostgresSchema.steps[0...1].joined(separator: "\n")
        + """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '2'), ('shards', '4');
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, 3);
        \(Self.version2Trials)
        COMMIT;
        """)
    #expect(try PostgresSchema.prepare(on: connection, shards: 4) == .upgraded(from: 2))
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
    let kept = try connection.execute("SELECT count(*), count(DISTINCT state) FROM trialwatch.trial")
    #expect(kept.int(0, 0) == 1_000 && kept.int(0, 1) == 4)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4))
    #expect(try repository.counts() == [.active: 250, .expired: 250, .converted: 250, .cancelled: 250])
    // The writes keep them from then on.
    _ = try repository.endTrial(TrialID(4), outcome: .converted, now: Date(timeIntervalSinceReferenceDate: 1))
    #expect(try repository.counts() == [.active: 249, .expired: 250, .converted: 251, .cancelled: 250])
  }

  /// Four trials (the last ended) and three logged events, written as a node of a schema
  /// version before the attributes would: no `attributes` column in either table.
  static let trialsAndEventsBeforeAttributes = """
    INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, ended_s, reminders_ms)
    VALUES (1, 1, 'old-1', 'active', 1, 0, 864000, NULL, '{86400000}'),
      (2, 2, 'old-2', 'active', 2, 0, 1728000, NULL, '{}'),
      (3, 3, 'old "3" ✓', 'active', 1, 0, 864000, NULL, '{}'),
      (4, 0, 'old-4', 'expired', 1, 0, 60, 60, '{}');
    INSERT INTO trialwatch.ledger (trial_id, revision, offset_ms, event_id, shard, kind, outcome, due_s, taken_s,
      late, delivered_s, node, epoch)
    VALUES (4, 1, 0, '0000000000000004-1-expiry', 0, 'expiry', 'fired', 60, 60, false, 61, 'old-node', 1);
    INSERT INTO trialwatch.event_log (cursor, trial_id, revision, offset_ms, subject, outcome, skip_detail,
      due_s, taken_s, late)
    VALUES (1, 4, 1, 0, 'old-4', 'fired', NULL, 60, 60, false),
      (2, 1, 1, 86400000, 'old-1', 'skipped:superseded-by-expiry', NULL, 777600, 777601, true),
      (3, 3, 1, 0, 'old "3" ✓', 'fired', NULL, 864000, 864000, false);
    UPDATE trialwatch.log_head SET last = 3, kept = 3;
    """

  /// A database whose schema is `version`, with the trials and events of the versions before
  /// attributes, upgraded to this version: its conninfo and connection.
  static func upgraded(from version: Int) throws -> (conninfo: String, connection: PGConnection) {
    let conninfo = try emptyDatabase()
    let connection = try PGConnection(conninfo: conninfo)
    try connection.executeScript(
      "BEGIN;\n" + PostgresSchema.steps[0..<version].joined(separator: "\n")
        + """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '\(version)'), ('shards', '4');
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, 3);
        \(trialsAndEventsBeforeAttributes)
        COMMIT;
        """)
    #expect(try PostgresSchema.prepare(on: connection, shards: 4) == .upgraded(from: version))
    #expect(try PostgresSchema.installedVersion(on: connection) == PostgresSchema.version)
    return (conninfo, connection)
  }

  /// A database of `version` upgraded in place, a node joined to it owning its four shards (for
  /// an hour), and that node's repository: the set-up of each schema step's own tests.
  static func upgradedWithANode(from version: Int) throws -> (
    connection: PGConnection, membership: FleetMembership, repository: PostgresTrialRepository
  ) {
    let (conninfo, connection) = try upgraded(from: version)
    let map = ShardMap(count: 4)
    let ownership = ShardOwnership()
    var settings = FleetMembership.Settings()
    settings.lease = .seconds(3_600)
    let membership = FleetMembership(
      conninfo: conninfo, name: "new-node", version: "test", shards: map, ownership: ownership,
      settings: settings)
    try membership.join()
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: map, ownership: ownership, refusesEarlyFires: false)
    return (connection, membership, repository)
  }

  /// Versions 3 and 4 (the last before the attributes) have the same trial and event-log
  /// tables: each is upgraded in place, its rows kept and read with their subject alone.
  @Test(arguments: [3, 4])
  func schema_BeforeAttributesWithTrialsAndEvents_IsUpgradedInPlaceReadingNoLabels(version: Int) throws {
    let (conninfo, connection) = try Self.upgraded(from: version)
    let kept = try connection.execute(
      """
      SELECT (SELECT count(*) FROM trialwatch.trial WHERE attributes = '{}'),
        (SELECT count(*) FROM trialwatch.event_log WHERE attributes = '{}')
      """)
    #expect(kept.int(0, 0) == 4 && kept.int(0, 1) == 3)

    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let trials = try repository.read { txn in
      var trials: [Trial] = []
      try txn.scanTrials(after: nil) {
        trials.append($0)
        return true
      }
      return trials
    }
    #expect(trials.map(\.subject) == ["old-1", "old-2", "old \"3\" ✓", "old-4"])
    #expect(trials.allSatisfy { $0.attributes == TrialAttributes(subject: $0.subject) })
    #expect(trials.map(\.revision) == [1, 2, 1, 1] && trials[0].reminders.offsets == [.seconds(86_400)])
    #expect(trials[3].state == .expired && trials[3].endedAt == Date(timeIntervalSinceReferenceDate: 60))
    let log = try repository.loggedEvents(after: .origin, limit: 10)
    #expect(log.map(\.cursor.sequence) == [1, 2, 3])
    #expect(log.map(\.attributes) == ["old-4", "old-1", "old \"3\" ✓"].map { TrialAttributes(subject: $0) })
    #expect(log[1].outcome == .skipped(.supersededByExpiry) && log[1].isLate)

    // A labelled trial is stored beside them, and an event of its time logged.
    var labelled = trials[1]
    labelled.attributes.labels = try TrialLabels(["tier": "pro", "customer": "c-1"])
    labelled.revision += 1
    try repository.write { try $0.putTrial(labelled) }
    let event = LedgerEntry(
      event: labelled.events[0], outcome: .fired, takenAt: Date(timeIntervalSinceReferenceDate: 100),
      isLate: false)
    _ = try repository.write { try $0.appendEvent(event, attributes: labelled.attributes) }
    #expect(try repository.trial(labelled.id) == labelled)
    #expect(
      try repository.loggedEvents(after: EventCursor(3), limit: 10).map(\.attributes) == [labelled.attributes]
    )
    let stored = try connection.execute(
      """
      SELECT (SELECT attributes::text FROM trialwatch.trial WHERE trial_id = 2),
        (SELECT attributes::text FROM trialwatch.event_log WHERE cursor = 4)
      """)
    let json = #"{"label.tier": "pro", "label.customer": "c-1"}"#
    #expect(stored.string(0, 0) == json && stored.string(0, 1) == json)
    #expect(try repository.counts() == [.active: 3, .expired: 1])
  }

  @Test func schemaBeforeUses_IsUpgradedInPlace_WithNoUseRecorded() throws {
    let (conninfo, connection) = try Self.upgraded(from: 5)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    var trials = 0
    try repository.read { txn in
      try txn.scanTrials(after: nil) { _ in
        trials += 1
        return true
      }
    }
    #expect(trials == 4)
    #expect(try repository.read { try $0.subjectUse(scope: .all, key: "old-1") } == nil)
    let use = SubjectUse(
      scope: .plan("pro"), key: "old-1", subject: "Old-1", plan: "pro",
      firstStartedAt: Date(timeIntervalSinceReferenceDate: 60), trial: TrialID(1))
    try repository.write { try $0.putSubjectUse(use) }
    #expect(try repository.read { try $0.subjectUse(scope: .plan("pro"), key: "old-1") } == use)
    let row = try connection.execute(
      "SELECT subject, first_started_at = trialwatch.time(60) FROM trialwatch.subject_use WHERE key = 'old-1'"
    )
    #expect(row.string(0, 0) == "Old-1" && row.bool(0, 1) == true)
  }

  @Test func schemaBeforePauses_IsUpgradedInPlace_AndItsTrialsPause() throws {
    let (conninfo, connection) = try Self.upgraded(from: 6)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.state == .active && old.pause == nil)
    let paused = try repository.write { txn in
      try TrialBook.pauseTrial(
        in: txn, TrialID(1), maxPause: .days(7), now: Date(timeIntervalSinceReferenceDate: 60))
    }
    #expect(try repository.trial(TrialID(1)) == paused.trial)
    // The paused trial keeps its subject; its pause and event read as the columns say.
    #expect(try repository.read { try $0.activeTrialID(subject: "old-1") } == TrialID(1))
    let row = try connection.execute(
      """
      SELECT t.state, t.paused_at = trialwatch.time(60), t.resume_at = trialwatch.time(604860), l.kind, l.offset_ms,
        (SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes
          WHERE schemaname = 'trialwatch' AND tablename = 'trial' AND indexname LIKE 'trial_%_s%')
      FROM trialwatch.trial t JOIN trialwatch.ledger l USING (trial_id) WHERE t.trial_id = 1
      """)
    #expect(row.string(0, 0) == "paused" && row.bool(0, 1) == true && row.bool(0, 2) == true)
    #expect(row.string(0, 3) == "paused" && row.int64(0, 4) == -863_940_000)
    #expect(row.string(0, 5) == "trial_open_shard,trial_open_subject")
    let resumed = try repository.write { txn in
      try TrialBook.resumeTrial(in: txn, TrialID(1), now: Date(timeIntervalSinceReferenceDate: 120))
    }
    #expect(
      resumed.trial.revision == 2
        && resumed.trial.period.endDate == Date(timeIntervalSinceReferenceDate: 864_060))
    let kinds = try connection.execute(
      "SELECT string_agg(kind || ' ' || offset_ms, ',' ORDER BY offset_ms) FROM trialwatch.ledger WHERE trial_id = 1"
    )
    #expect(kinds.string(0, 0) == "resumed -4611686019291327904,paused -863940000")
  }

  @Test func schemaBeforeCohorts_IsUpgradedInPlace_CountingItsTrials() throws {
    let (conninfo, _) = try Self.upgraded(from: 7)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    // Counted at the upgrade: three active trials and an expired one, all started on one day.
    let day = CohortKey.day(of: Date(timeIntervalSinceReferenceDate: 0))
    let cohorts = try repository.read { try $0.cohorts(from: day - 1, through: day + 1) }
    #expect(cohorts.map(\.key) == [CohortKey(day: day, plan: "")])
    #expect(cohorts.first?.counts == CohortCounts(started: 4, expired: 1))
    // A conversion written by the daemon adds to them.
    _ = try repository.endTrial(
      TrialID(1), outcome: .converted, now: Date(timeIntervalSinceReferenceDate: 7_300))
    let after = try repository.read { try $0.cohorts(from: day, through: day) }
    #expect(
      after.first?.counts == CohortCounts(started: 4, converted: 1, expired: 1, conversionHours: [2: 1]))
  }

  @Test func schemaBeforeWebhooks_IsUpgradedInPlace_KeepingWebhookState() throws {
    let (conninfo, connection) = try Self.upgraded(from: 8)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    #expect(try repository.read { try $0.webhookEndpoint(named: "hooks") } == nil)
    var state = WebhookEndpointState(name: "hooks")
    let gone = WebhookAttempt.answered(status: 410, retryAfter: nil)
    state.health.record(gone, at: Date(timeIntervalSinceReferenceDate: 60.25), disableAfter: .days(5))
    state.keep(
      WebhookAttemptRecord(
        at: Date(timeIntervalSinceReferenceDate: 60.25), cursor: EventCursor(3), messageID: "msg_1",
        number: 1,
        outcome: gone, duration: .microseconds(1_234)))
    let event = WebhookPendingEvent(
      endpoint: "hooks", cursor: EventCursor(3), attempts: 1,
      nextAttemptAt: Date(timeIntervalSinceReferenceDate: 120))
    try repository.write { txn in
      try txn.putWebhookEndpoint(state)
      try txn.putWebhookEvent(event)
    }
    #expect(try repository.read { try $0.webhookEndpoint(named: "hooks") } == state)
    #expect(
      try repository.read { txn in
        try collected { try txn.scanWebhookEvents(endpoint: "hooks", after: .origin, $0) }
      }
        == [event])
    // The rows, as people query them.
    let rows = try connection.execute(
      """
      SELECT e.state->'disabled'->>'reason', e.state->'attempts'->0->>'duration_us', w.sequence,
        w.next_attempt_at = trialwatch.time(120)
      FROM trialwatch.webhook_endpoint e JOIN trialwatch.webhook_event w ON w.endpoint = e.name
      """)
    #expect(rows.string(0, 0) == "gone" && rows.string(0, 1) == "1234")
    #expect(rows.int64(0, 2) == 3 && rows.bool(0, 3) == true)
  }

  @Test func schemaBeforeExtensionCounts_IsUpgradedInPlace_ItsTrialsCountingNone() throws {
    let (conninfo, connection) = try Self.upgraded(from: 9)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "new-node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let old = try #require(try repository.trial(TrialID(1)))
    #expect(old.extensions == 0 && old.state == .active)
    let limits = ExtensionLimits(maxExtensions: 1)
    let extended = try repository.write { txn in
      try TrialBook.extendTrial(
        in: txn, TrialID(1), to: Date(timeIntervalSinceReferenceDate: 900_000),
        now: Date(timeIntervalSinceReferenceDate: 60), limits: limits)
    }
    #expect(extended.trial.extensions == 1 && extended.trial.revision == 2)
    #expect(try repository.trial(TrialID(1)) == extended.trial)
    let refused = #expect(throws: TrialError.self) {
      try repository.write { txn in
        try TrialBook.extendTrial(
          in: txn, TrialID(1), to: Date(timeIntervalSinceReferenceDate: 950_000),
          now: Date(timeIntervalSinceReferenceDate: 60), limits: limits)
      }
    }
    guard case .extensionRefused(let refusal)? = refused?.code else {
      Issue.record("not refused by its limit: \(String(describing: refused))")
      return
    }
    #expect(refusal.limit == .maxExtensions && refusal.extensions == 1)
    let rows = try connection.execute(
      "SELECT string_agg(trial_id || ':' || extensions, ',' ORDER BY trial_id) FROM trialwatch.trial")
    #expect(rows.string(0, 0) == "1:1,2:0,3:0,4:0")
    // The column refuses a count below 0, as a damaged write would make it.
    #expect(throws: PGError.self) {
      try connection.execute("UPDATE trialwatch.trial SET extensions = -1 WHERE trial_id = 2")
    }
  }

  @Test func schema_NewerThanThisDaemon_IsLeftUntouched() throws {
    let connection = try Self.database()
    try PostgresSchema.prepare(on: connection, shards: 4)
    try connection.executeScript(
      Self.version2Trials + "UPDATE trialwatch.meta SET value = '99' WHERE key = 'schema_version';")
    // What a newer trialwatchd might have changed: this one must not put it back.
    try connection.executeScript(
      """
      DROP TRIGGER trial_count_update ON trialwatch.trial;
      UPDATE trialwatch.trial_count SET n = n + 1;
      """)
    func snapshot() throws -> [String?] {
      let result = try connection.execute(
        """
        SELECT (SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM trialwatch.meta
          WHERE key <> 'created_at'),
          (SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger
          WHERE tgrelid = 'trialwatch.trial'::regclass),
          (SELECT string_agg(writer || slot || state || n, ',' ORDER BY writer, slot, state)
          FROM trialwatch.trial_count),
          (SELECT count(*)::text FROM trialwatch.trial)
        """)
      return (0..<4).map { result.string(0, $0) }
    }
    let before = try snapshot()
    #expect(throws: PostgresStoreError.schemaTooNew(found: 99, known: PostgresSchema.version)) {
      try PostgresSchema.prepare(on: connection, shards: 4)
    }
    #expect(try snapshot() == before)
    #expect(before[0] == "schema_version=99,shards=4" && before[3] == "1000")
  }

  @Test func schema_NewerThanThisDaemon_IsRefusedNamingBothVersions() throws {
    let connection = try Self.database()
    try PostgresSchema.prepare(on: connection, shards: 4)
    try connection.execute("UPDATE trialwatch.meta SET value = '99' WHERE key = 'schema_version'")
    let error = try #require(throws: PostgresStoreError.self) {
      try PostgresSchema.prepare(on: connection, shards: 4)
    }
    #expect(error == .schemaTooNew(found: 99, known: PostgresSchema.version))
    #expect(error.description.contains("version 99, newer than this trialwatchd knows"))
  }

  @Test func shardCount_DifferentFromTheSchemas_IsRefused() throws {
    let connection = try Self.database()
    try PostgresSchema.prepare(on: connection, shards: 4)
    let error = try #require(throws: PostgresStoreError.self) {
      try PostgresSchema.prepare(on: connection, shards: 8)
    }
    #expect(error == .shardCountMismatch(schema: 4, configured: 8))
    #expect(error.description.contains("set Shards=4"))
  }
}
