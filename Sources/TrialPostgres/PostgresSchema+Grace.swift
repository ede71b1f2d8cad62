extension PostgresSchema {
  /// Version 13: grace (plan key `Grace=`). Each trial's grace in `grace_ms` (0: none; the rows
  /// already there have none); the state `grace` (past its end, open until it expires the grace
  /// later): a subject's one open trial and a shard's planned trials are active, paused or in
  /// grace; the ledger's event `grace-started` (`offset_ms` 2^62: `PostgresRecords`). A node of
  /// version 12 or earlier still running reads a trial in grace as damaged; it changes none.
  static let upgradeTo13 = """
    ALTER TABLE trialwatch.trial DROP CONSTRAINT trial_state_check,
      ADD CONSTRAINT trial_state_check
        CHECK (state IN ('active', 'paused', 'grace', 'expired', 'converted', 'cancelled')),
      ADD COLUMN grace_ms bigint NOT NULL DEFAULT 0 CONSTRAINT trial_grace_check CHECK (grace_ms >= 0);
    ALTER TABLE trialwatch.ledger DROP CONSTRAINT ledger_kind_check,
      ADD CONSTRAINT ledger_kind_check
        CHECK (kind IN ('reminder', 'expiry', 'paused', 'resumed', 'grace-started'));
    CREATE UNIQUE INDEX trial_open_subject_10 ON trialwatch.trial (subject)
      WHERE state IN ('active', 'paused', 'grace');
    DROP INDEX trialwatch.trial_open_subject;
    ALTER INDEX trialwatch.trial_open_subject_10 RENAME TO trial_open_subject;
    CREATE INDEX trial_open_shard_10 ON trialwatch.trial (shard) WHERE state IN ('active', 'paused', 'grace');
    DROP INDEX trialwatch.trial_open_shard;
    ALTER INDEX trialwatch.trial_open_shard_10 RENAME TO trial_open_shard;
    """
}
