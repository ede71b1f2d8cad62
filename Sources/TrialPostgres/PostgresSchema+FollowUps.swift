extension PostgresSchema {
  /// Version 15: follow-ups and milestones (plan keys `FollowUps=`, `Milestones=`). Each trial's
  /// follow-up spans in `follow_ups_ms` and milestone spans in `milestones_ms` (NULL: none; the
  /// rows already there have none), an index of the ended trials that have follow-ups (a
  /// shard's planned trials: open, or ended with follow-ups), and the ledger's events
  /// `follow-up` (`offset_ms` 2^62 plus the span) and `milestone` (2^62 plus 2^60 plus the span:
  /// `PostgresRecords`). A node of version 14 or earlier still running reads either in the
  /// ledger as damaged; it writes none, and a trial it writes loses its follow-ups and
  /// milestones.
  ///
  /// A follow-up is called off by a later trial of its subject: "later" is the order the trials
  /// were started in, `start_order` (a sequence's next value at the insert), not their start
  /// times, which a wall clock stepped back puts out of order (the file store's subject index
  /// keeps the same order). The rows already there take the order of their starts.
  static let upgradeTo15 = """
    ALTER TABLE trialwatch.trial ADD COLUMN follow_ups_ms bigint[], ADD COLUMN milestones_ms bigint[];
    ALTER TABLE trialwatch.ledger DROP CONSTRAINT ledger_kind_check,
      ADD CONSTRAINT ledger_kind_check
        CHECK (kind IN ('reminder', 'expiry', 'paused', 'resumed', 'grace-started', 'follow-up', 'milestone'));
    CREATE INDEX followed_up_trials ON trialwatch.trial (shard) WHERE follow_ups_ms IS NOT NULL;
    CREATE SEQUENCE trialwatch.trial_start_order AS bigint;
    ALTER TABLE trialwatch.trial ADD COLUMN start_order bigint;
    UPDATE trialwatch.trial t SET start_order = o.n
      FROM (SELECT trial_id, row_number() OVER (ORDER BY start_s, trial_id) AS n FROM trialwatch.trial) o
      WHERE t.trial_id = o.trial_id;
    SELECT setval('trialwatch.trial_start_order', coalesce(max(start_order), 0) + 1, false) FROM trialwatch.trial;
    ALTER TABLE trialwatch.trial ALTER COLUMN start_order SET DEFAULT nextval('trialwatch.trial_start_order'),
      ALTER COLUMN start_order SET NOT NULL;
    ALTER SEQUENCE trialwatch.trial_start_order OWNED BY trialwatch.trial.start_order;
    CREATE INDEX trial_subject_order ON trialwatch.trial (subject, start_order);
    """
}
