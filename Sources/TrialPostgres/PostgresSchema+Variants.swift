extension PostgresSchema {
  /// Version 14: plan variants (`[Variant]` sections). A trial keeps its variant as the attribute
  /// `variant` (in `attributes`, as its plan); `variant` is that attribute as a column of its
  /// own, generated, so that figures by variant read and index it without parsing JSON. The
  /// rows already there have none (null). Writes need no change: a node of version 13 or
  /// earlier still running writes the attribute, and the column follows.
  static let upgradeTo14 = """
    ALTER TABLE trialwatch.trial ADD COLUMN variant text GENERATED ALWAYS AS (attributes->>'variant') STORED;
    CREATE INDEX trial_plan_variant ON trialwatch.trial ((attributes->>'plan'), variant) WHERE variant IS NOT NULL;
    """
}
