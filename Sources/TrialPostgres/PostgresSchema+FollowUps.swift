extension PostgresSchema {
  /// Version 15: follow-ups and milestones (plan keys `FollowUps=`, `Milestones=`). Each trial's
  /// follow-up spans in `follow_ups_ms` and milestone spans in `milestones_ms` (NULL: none; the
  /// rows already there have none), an index of the ended trials that have follow-ups (a
  /// shard's planned trials: open, or ended with follow-ups), and the ledger's events
  /// `follow-up` (`offset_ms` 2^62 plus the span) and `milestone` (2^62 plus 2^60 plus the span:
  /// `PostgresRecords`). A node of version 14 or earlier still running reads either in the
  /// ledger as damaged; it writes none, and a trial it writes loses its follow-ups and
  /// milestones.
  static let upgradeTo15 = """
    ALTER TABLE trialwatch.trial ADD COLUMN follow_ups_ms bigint[], ADD COLUMN milestones_ms bigint[];
    ALTER TABLE trialwatch.ledger DROP CONSTRAINT ledger_kind_check,
      ADD CONSTRAINT ledger_kind_check
        CHECK (kind IN ('reminder', 'expiry', 'paused', 'resumed', 'grace-started', 'follow-up', 'milestone'));
    CREATE INDEX followed_up_trials ON trialwatch.trial (shard) WHERE follow_ups_ms IS NOT NULL;
    """
}
