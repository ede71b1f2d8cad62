import TrialCore

/// The shared store's tables, in the schema `trialwatch`, and their versions. The schema is
/// created by the first daemon to start against an empty database and upgraded in place by a
/// newer one, each under an advisory lock so that nodes starting together do it once; a
/// daemon refuses a schema newer than it knows.
public enum PostgresSchema {
  /// The version this build writes and reads: the number of `steps`.
  public static var version: Int { steps.count }
  /// The advisory lock (`pg_advisory_lock`) held while the schema is created or upgraded.
  static let migrationLock: Int64 = 0x7472_6961_6c77_0001
  /// Each node holds the session advisory lock `nodeLockBase + node_id` for its life, so
  /// that the others notice its death the moment its connection closes.
  static let nodeLockBase: Int64 = 0x7472_6961_6c77_0000 << 8

  /// Version 1: nodes, shards and their history, trials, the ledger, the event log and
  /// consumers. The daemon's times are kept exactly as it holds them, in the `*_s` columns
  /// (seconds since 2001-01-01 UTC, `double precision`); each has a `*_at` column beside it
  /// that shows it as a `timestamptz`, for people and queries.
  static let createVersion1 = """
    CREATE SCHEMA IF NOT EXISTS trialwatch;
    CREATE FUNCTION trialwatch.time(double precision) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT to_timestamp($1 + 978307200) $$;
    CREATE FUNCTION trialwatch.now_s() RETURNS double precision
      LANGUAGE sql VOLATILE AS $$ SELECT extract(epoch FROM clock_timestamp())::double precision - 978307200 $$;
    CREATE TABLE trialwatch.meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE trialwatch.node (
      node_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name text NOT NULL UNIQUE,
      pid integer,
      started_at timestamptz,
      lease_until timestamptz,
      seen_at timestamptz
    );
    CREATE TABLE trialwatch.shard (
      shard integer PRIMARY KEY,
      owner bigint REFERENCES trialwatch.node,
      epoch bigint NOT NULL DEFAULT 0,
      changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE TABLE trialwatch.shard_history (
      shard integer NOT NULL,
      epoch bigint NOT NULL,
      owner text,
      changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      reason text NOT NULL,
      PRIMARY KEY (shard, epoch)
    );
    CREATE TABLE trialwatch.trial (
      trial_id bigint PRIMARY KEY,
      shard integer NOT NULL,
      subject text NOT NULL,
      state text NOT NULL CHECK (state IN ('active', 'expired', 'converted', 'cancelled')),
      revision integer NOT NULL,
      start_s double precision NOT NULL,
      end_s double precision NOT NULL,
      ended_s double precision,
      reminders_ms bigint[] NOT NULL,
      start_at timestamptz GENERATED ALWAYS AS (trialwatch.time(start_s)) STORED,
      end_at timestamptz GENERATED ALWAYS AS (trialwatch.time(end_s)) STORED,
      ended_at timestamptz GENERATED ALWAYS AS (trialwatch.time(ended_s)) STORED
    );
    CREATE UNIQUE INDEX trial_active_subject ON trialwatch.trial (subject) WHERE state = 'active';
    CREATE INDEX trial_subject ON trialwatch.trial (subject, trial_id);
    CREATE INDEX trial_active_shard ON trialwatch.trial (shard) WHERE state = 'active';
    CREATE TABLE trialwatch.ledger (
      trial_id bigint NOT NULL,
      revision integer NOT NULL,
      offset_ms bigint NOT NULL,
      event_id text NOT NULL UNIQUE,
      shard integer NOT NULL,
      kind text NOT NULL CHECK (kind IN ('reminder', 'expiry')),
      outcome text NOT NULL,
      skip_detail text,
      due_s double precision NOT NULL,
      taken_s double precision NOT NULL,
      late boolean NOT NULL,
      delivered_s double precision,
      node text,
      epoch bigint,
      due_at timestamptz GENERATED ALWAYS AS (trialwatch.time(due_s)) STORED,
      taken_at timestamptz GENERATED ALWAYS AS (trialwatch.time(taken_s)) STORED,
      delivered_at timestamptz GENERATED ALWAYS AS (trialwatch.time(delivered_s)) STORED,
      PRIMARY KEY (trial_id, revision, offset_ms)
    );
    CREATE INDEX ledger_outbox ON trialwatch.ledger (shard, trial_id, revision, offset_ms)
      WHERE delivered_s IS NULL;
    CREATE TABLE trialwatch.event_log (
      cursor bigint PRIMARY KEY,
      trial_id bigint NOT NULL,
      revision integer NOT NULL,
      offset_ms bigint NOT NULL,
      subject text NOT NULL,
      outcome text NOT NULL,
      skip_detail text,
      due_s double precision NOT NULL,
      taken_s double precision NOT NULL,
      late boolean NOT NULL,
      taken_at timestamptz GENERATED ALWAYS AS (trialwatch.time(taken_s)) STORED
    );
    CREATE TABLE trialwatch.log_head (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      last bigint NOT NULL,
      pruned_through bigint NOT NULL,
      -- Events kept, so that the bounds are read without counting the table.
      kept bigint NOT NULL DEFAULT 0,
      last_seen_s double precision
    );
    INSERT INTO trialwatch.log_head (last, pruned_through) VALUES (0, 0);
    CREATE TABLE trialwatch.consumer (
      name text PRIMARY KEY,
      acknowledged bigint NOT NULL,
      created_s double precision NOT NULL,
      acknowledged_s double precision,
      lost bigint NOT NULL DEFAULT 0,
      lost_s double precision
    );
    """

  /// Version 2: each node records the trialwatchd version it runs (for rolling upgrades) and
  /// how overdue its next event is (`trialwatchctl fleet`).
  static let upgradeTo2 = """
    ALTER TABLE trialwatch.node ADD COLUMN version text, ADD COLUMN lag_us bigint;
    """

  /// Version 3: trials by state, kept by the writes to `trial` themselves (statement-level
  /// triggers over the rows each statement inserted, updated or deleted, in its
  /// transaction), so that the counts are read without scanning the trials. Each writer adds
  /// its deltas to rows of its own: its node name (`SET trialwatch.node`, from the
  /// repository's connections; '(unnamed)' for any other session) and a slot, taken with a
  /// transaction-level advisory lock it only tries (`pg_try_advisory_xact_lock`), so that two
  /// transactions never update one row: none waits on another, none can deadlock. Filled from
  /// the trials as they are, with the table locked against writes until the upgrade commits.
  static let upgradeTo3 = """
    LOCK TABLE trialwatch.trial IN SHARE ROW EXCLUSIVE MODE;
    CREATE TABLE trialwatch.trial_count (
      writer text NOT NULL,
      slot integer NOT NULL,
      state text NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (writer, slot, state)
    );
    CREATE FUNCTION trialwatch.count_trials() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      states text[];
      deltas bigint[];
      me text := coalesce(nullif(current_setting('trialwatch.node', true), ''), '(unnamed)');
      k integer := 0;
    BEGIN
      IF TG_OP = 'INSERT' THEN
        SELECT array_agg(c.state), array_agg(c.d) INTO states, deltas
        FROM (SELECT r.state, count(*) AS d FROM new_rows r GROUP BY r.state) c;
      ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(c.state), array_agg(c.d) INTO states, deltas
        FROM (SELECT r.state, -count(*) AS d FROM old_rows r GROUP BY r.state) c;
      ELSE
        SELECT array_agg(c.state), array_agg(c.d) INTO states, deltas
        FROM (SELECT u.state, sum(u.d) AS d
          FROM (SELECT r.state, 1 AS d FROM new_rows r UNION ALL SELECT r.state, -1 FROM old_rows r) u
          GROUP BY u.state HAVING sum(u.d) <> 0) c;
      END IF;
      IF states IS NULL THEN
        RETURN NULL;
      END IF;
      -- The first slot of this writer that no other transaction holds (this one may already).
      -- The two-key advisory locks are apart from the one-key ones (migration, node lives).
      WHILE NOT pg_try_advisory_xact_lock(1954046830, hashtext(me || ' ' || k)) LOOP
        k := k + 1;
      END LOOP;
      INSERT INTO trialwatch.trial_count AS t (writer, slot, state, n)
      SELECT me, k, u.state, u.d FROM unnest(states, deltas) AS u(state, d)
      ON CONFLICT (writer, slot, state) DO UPDATE SET n = t.n + excluded.n;
      RETURN NULL;
    END $$;
    CREATE FUNCTION trialwatch.forget_trial_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM trialwatch.trial_count;
      RETURN NULL;
    END $$;
    CREATE TRIGGER trial_count_insert AFTER INSERT ON trialwatch.trial
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION trialwatch.count_trials();
    CREATE TRIGGER trial_count_update AFTER UPDATE ON trialwatch.trial
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION trialwatch.count_trials();
    CREATE TRIGGER trial_count_delete AFTER DELETE ON trialwatch.trial
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION trialwatch.count_trials();
    CREATE TRIGGER trial_count_truncate AFTER TRUNCATE ON trialwatch.trial
      FOR EACH STATEMENT EXECUTE FUNCTION trialwatch.forget_trial_counts();
    INSERT INTO trialwatch.trial_count (writer, slot, state, n)
    SELECT '(upgrade)', 0, state, count(*) FROM trialwatch.trial GROUP BY state;
    """

  /// Version 4: a write of a trial another node changed since this transaction read it fails
  /// the transaction as a serialization failure (SQLSTATE 40001), which the writer runs again
  /// on what is there now: `trialwatch.written(n, expected)` raises it when a conditional
  /// update wrote fewer rows than it was given.
  static let upgradeTo4 = """
    CREATE FUNCTION trialwatch.written(n bigint, expected bigint) RETURNS bigint LANGUAGE plpgsql AS $$
    BEGIN
      IF n <> expected THEN
        RAISE EXCEPTION USING ERRCODE = '40001',
          MESSAGE = format('%s of %s trials changed on another node since this transaction read them',
            expected - n, expected);
      END IF;
      RETURN n;
    END $$;
    """

  /// Version 5: each trial's attributes beside its subject, and those of each logged event's
  /// trial as the event was taken: `attributes`, a JSON object of the stored fields
  /// (`TrialAttributes.storedFields`: each label as `label.KEY`, and those a newer version
  /// wrote) by name, each value text (`AttributeJSON`); `{}` for a trial with nothing but a
  /// subject. The rows already there read as that, their subject alone; a constant default adds
  /// the columns without rewriting either table. A node of version 4 still running leaves the
  /// attributes of a trial it writes as they are, and gives those it adds, and their events,
  /// none.
  static let upgradeTo5 = """
    ALTER TABLE trialwatch.trial ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}';
    ALTER TABLE trialwatch.event_log ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}';
    """

  /// Version 6: the records that subjects had a trial granted once (plans with `Once=`), by
  /// scope (`all`, `plan:NAME`) and the subject's key; kept for good, whatever becomes of the
  /// trials.
  static let upgradeTo6 = """
    CREATE TABLE trialwatch.subject_use (
      scope text NOT NULL,
      key text NOT NULL,
      subject text NOT NULL,
      plan text NOT NULL,
      first_started_s double precision NOT NULL,
      trial_id bigint NOT NULL,
      first_started_at timestamptz GENERATED ALWAYS AS (trialwatch.time(first_started_s)) STORED,
      PRIMARY KEY (scope, key)
    );
    """

  /// Version 7: paused trials. The state `paused`, with `paused_s` (since when) and `resume_s`
  /// (when its pause runs out, if it does); a subject's one open trial is active or paused, and
  /// a shard's open trials are planned by its owner; the ledger's events `paused` and `resumed`
  /// (`offset_ms` below 0: `PostgresRecords`). A node of version 6 still running reads a paused
  /// trial as damaged; it changes no paused trial.
  static let upgradeTo7 = """
    ALTER TABLE trialwatch.trial DROP CONSTRAINT trial_state_check,
      ADD CONSTRAINT trial_state_check
        CHECK (state IN ('active', 'paused', 'expired', 'converted', 'cancelled')),
      ADD COLUMN paused_s double precision,
      ADD COLUMN resume_s double precision,
      ADD COLUMN paused_at timestamptz GENERATED ALWAYS AS (trialwatch.time(paused_s)) STORED,
      ADD COLUMN resume_at timestamptz GENERATED ALWAYS AS (trialwatch.time(resume_s)) STORED;
    ALTER TABLE trialwatch.ledger DROP CONSTRAINT ledger_kind_check,
      ADD CONSTRAINT ledger_kind_check CHECK (kind IN ('reminder', 'expiry', 'paused', 'resumed'));
    CREATE UNIQUE INDEX trial_open_subject ON trialwatch.trial (subject) WHERE state IN ('active', 'paused');
    DROP INDEX trialwatch.trial_active_subject;
    CREATE INDEX trial_open_shard ON trialwatch.trial (shard) WHERE state IN ('active', 'paused');
    DROP INDEX trialwatch.trial_active_shard;
    """

  /// Version 8: the conversion figures, by cohort (the trials of one plan, `''` for none, started
  /// on one UTC day, as days since 1970-01-01): how many started, converted, were cancelled,
  /// expired, are paused now; and the conversions by whole hours from their trial's start. As
  /// the trial counts (version 3), each writer adds to rows of its own, in the first slot no
  /// other of its transactions holds (`trialwatch.writer_slot()`, the slot its counts take), so
  /// that no writer waits on another's uncommitted figures; a reader sums them. Counted from the
  /// trials at the upgrade (writer `(upgrade)`), then changed by each write as its trials change.
  static let upgradeTo8 = """
    CREATE FUNCTION trialwatch.writer() RETURNS text LANGUAGE sql STABLE AS $$
      SELECT coalesce(nullif(current_setting('trialwatch.node', true), ''), '(unnamed)')
    $$;
    CREATE FUNCTION trialwatch.writer_slot() RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      k integer := 0;
    BEGIN
      WHILE NOT pg_try_advisory_xact_lock(1954046830, hashtext(trialwatch.writer() || ' ' || k)) LOOP
        k := k + 1;
      END LOOP;
      RETURN k;
    END $$;
    CREATE TABLE trialwatch.cohort (
      day integer NOT NULL,
      plan text NOT NULL,
      writer text NOT NULL,
      slot integer NOT NULL,
      started bigint NOT NULL,
      converted bigint NOT NULL,
      cancelled bigint NOT NULL,
      expired bigint NOT NULL,
      paused bigint NOT NULL,
      PRIMARY KEY (day, plan, writer, slot)
    );
    CREATE TABLE trialwatch.cohort_conversion (
      day integer NOT NULL,
      plan text NOT NULL,
      hours integer NOT NULL,
      writer text NOT NULL,
      slot integer NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (day, plan, hours, writer, slot)
    );
    INSERT INTO trialwatch.cohort (day, plan, writer, slot, started, converted, cancelled, expired, paused)
    SELECT floor((start_s + 978307200) / 86400)::integer, coalesce(attributes->>'plan', ''), '(upgrade)', 0,
      count(*), count(*) FILTER (WHERE state = 'converted'), count(*) FILTER (WHERE state = 'cancelled'),
      count(*) FILTER (WHERE state = 'expired'), count(*) FILTER (WHERE state = 'paused')
    FROM trialwatch.trial GROUP BY 1, 2;
    INSERT INTO trialwatch.cohort_conversion (day, plan, hours, writer, slot, n)
    SELECT floor((start_s + 978307200) / 86400)::integer, coalesce(attributes->>'plan', ''),
      floor(greatest(0, ended_s - start_s) / 3600)::integer, '(upgrade)', 0, count(*)
    FROM trialwatch.trial WHERE state = 'converted' GROUP BY 1, 2, 3;
    """

  /// Version 9: webhook endpoints' state, by name (their health, last attempts and a replay's
  /// skip, as JSON: `WebhookStateJSON`), and their pending events, by endpoint and cursor (the
  /// attempts made, and when the next is due: none once delivered). New and empty tables.
  static let upgradeTo9 = """
    CREATE TABLE trialwatch.webhook_endpoint (name text PRIMARY KEY, state jsonb NOT NULL);
    CREATE TABLE trialwatch.webhook_event (
      endpoint text NOT NULL,
      sequence bigint NOT NULL,
      attempts integer NOT NULL,
      next_attempt_s double precision,
      next_attempt_at timestamptz GENERATED ALWAYS AS (trialwatch.time(next_attempt_s)) STORED,
      PRIMARY KEY (endpoint, sequence)
    );
    """

  /// Version 10: a second trial after a cooldown (`OnceFor=`): each use's last start, filled
  /// from its first (a row a node of version 9 still running inserts has none: its first).
  static let upgradeTo10 = """
    ALTER TABLE trialwatch.subject_use ADD COLUMN last_started_s double precision, ADD COLUMN last_trial_id bigint,
      ADD COLUMN last_started_at timestamptz GENERATED ALWAYS AS (trialwatch.time(last_started_s)) STORED;
    UPDATE trialwatch.subject_use SET last_started_s = first_started_s, last_trial_id = trial_id;
    """

  /// Version 11: extension limits. Each trial's extension count (`Trial.extensions`: the
  /// extensions that moved its end later, which its plan's `MaxExtensions=` limits), 0 for the
  /// trials at the upgrade. A node of version 10 or earlier still running writes no count: a trial it
  /// starts counts 0, and one it extends keeps the count it had.
  static let upgradeTo11 = """
    ALTER TABLE trialwatch.trial ADD COLUMN extensions integer NOT NULL DEFAULT 0
      CONSTRAINT trial_extensions_check CHECK (extensions >= 0);
    """

  /// Version 12, cancel at the end: a trial's mark, `cancel_s` (when the cancel was asked) and
  /// `cancel_reminds` (its plan's `RemindAfterCancel=` then), both null on a trial not so
  /// cancelled; the skip reason `cancel-at-end` needs no change (outcomes are text). Adds
  /// nullable columns, no row is rewritten; a node of version 11 or earlier still running drops a
  /// mark.
  static let upgradeTo12 = """
    ALTER TABLE trialwatch.trial ADD COLUMN cancel_s double precision, ADD COLUMN cancel_reminds boolean,
      ADD COLUMN cancel_asked_at timestamptz GENERATED ALWAYS AS (trialwatch.time(cancel_s)) STORED;
    """

  /// Step n takes the schema from version n to n + 1 (step 0 creates it).
  static let steps = [
    createVersion1, upgradeTo2, upgradeTo3, upgradeTo4, upgradeTo5, upgradeTo6, upgradeTo7, upgradeTo8,
    upgradeTo9, upgradeTo10, upgradeTo11, upgradeTo12, upgradeTo13, upgradeTo14,
    upgradeTo15,
  ]

  /// What `prepare` found or did.
  public enum Outcome: Hashable, Sendable {
    case created
    case upgraded(from: Int)
    case current
  }

  /// Creates the schema in an empty database, or upgrades an older one, under the migration
  /// lock; checks the shard count against the one the schema was created with.
  /// - Throws: `PostgresStoreError` for a newer schema, a different shard count, or a
  ///   database error.
  @discardableResult
  public static func prepare(on connection: PGConnection, shards: Int) throws -> Outcome {
    try connection.execute("SELECT pg_advisory_lock($1)", [String(migrationLock)])
    defer { _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [String(migrationLock)]) }
    let found = try installedVersion(on: connection)
    if let found, found > version { throw PostgresStoreError.schemaTooNew(found: found, known: version) }
    if found != nil {
      let existing = try shardCount(on: connection)
      guard existing == shards else {
        throw PostgresStoreError.shardCountMismatch(schema: existing, configured: shards)
      }
    }
    let from = found ?? 0
    guard from < version else { return .current }
    // Every step and the new version in one transaction: a failed upgrade leaves the old one.
    var script = "BEGIN;\n" + steps[from...].joined(separator: "\n")
    if from == 0 {
      script += """
        INSERT INTO trialwatch.meta (key, value) VALUES ('schema_version', '0'), ('shards', '\(shards)'),
          ('created_at', clock_timestamp()::text);
        INSERT INTO trialwatch.shard (shard) SELECT generate_series(0, \(shards - 1));
        INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason)
          SELECT shard, 0, NULL, 'created' FROM trialwatch.shard;

        """
    }
    script += "UPDATE trialwatch.meta SET value = '\(version)' WHERE key = 'schema_version';\nCOMMIT;"
    try connection.executeScript(script)
    return from == 0 ? .created : .upgraded(from: from)
  }

  /// Checks, without changing anything, that a node could start on this database: the
  /// schema is absent (it would be created), older (upgraded) or current, and has `shards`
  /// shards. Returns what it found, in words.
  /// - Throws: `PostgresStoreError` for a newer schema or another shard count.
  public static func check(on connection: PGConnection, shards: Int) throws -> String {
    guard let found = try installedVersion(on: connection) else {
      return "no trialwatch schema yet: the first node to start creates it with \(shards) shards"
    }
    if found > version { throw PostgresStoreError.schemaTooNew(found: found, known: version) }
    let existing = try shardCount(on: connection)
    guard existing == shards else {
      throw PostgresStoreError.shardCountMismatch(schema: existing, configured: shards)
    }
    return found == version
      ? "trialwatch schema version \(found), \(existing) shards"
      : "trialwatch schema version \(found), upgraded to \(version) at the next start; \(existing) shards"
  }

  /// The version recorded in `trialwatch.meta`, or nil when the schema does not exist.
  static func installedVersion(on connection: PGConnection) throws -> Int? {
    let exists = try connection.execute("SELECT to_regclass('trialwatch.meta') IS NOT NULL")
    guard exists.bool(0, 0) == true else { return nil }
    let row = try connection.execute("SELECT value FROM trialwatch.meta WHERE key = 'schema_version'")
    guard row.rows == 1, let text = row.string(0, 0), let value = Int(text) else {
      throw PostgresStoreError.damaged("trialwatch.meta has no readable schema_version")
    }
    return value
  }

  /// The shard count the schema was created with.
  public static func shardCount(on connection: PGConnection) throws -> Int {
    let row = try connection.execute("SELECT value FROM trialwatch.meta WHERE key = 'shards'")
    guard row.rows == 1, let text = row.string(0, 0), let value = Int(text), value > 0 else {
      throw PostgresStoreError.damaged("trialwatch.meta has no readable shard count")
    }
    return value
  }
}
