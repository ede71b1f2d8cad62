extension PostgresSchema {
  /// Version 15: follow-ups (plan key `FollowUps=`). Each trial's follow-up spans in
  /// `follow_ups_ms` (NULL: none; the rows already there have none), an index of the ended
  /// trials that have some (a shard's planned trials: open, or ended with follow-ups), and the
  /// ledger's event `follow-up` (`offset_ms` 2^62 plus the span: `PostgresRecords`). A node of
  /// version 14 or earlier still running reads a follow-up in the ledger as damaged; it writes
  /// none, and a trial it writes loses its follow-ups.
  static let upgradeTo15 = """
    ALTER TABLE trialwatch.trial ADD COLUMN follow_ups_ms bigint[];
    ALTER TABLE trialwatch.ledger DROP CONSTRAINT ledger_kind_check,
      ADD CONSTRAINT ledger_kind_check
        CHECK (kind IN ('reminder', 'expiry', 'paused', 'resumed', 'grace-started', 'follow-up'));
    CREATE INDEX followed_up_trials ON trialwatch.trial (shard) WHERE follow_ups_ms IS NOT NULL;
    """
}
