import TrialCore

/// What the shared store reports as wrong, in words an operator can act on.
public enum PostgresStoreError: Error, Hashable, Sendable, CustomStringConvertible {
  case schemaTooNew(found: Int, known: Int)
  case shardCountMismatch(schema: Int, configured: Int)
  case damaged(String)
  case nodeNameInUse(String)
  case notConnected(String)

  public var description: String {
    switch self {
    case .schemaTooNew(let found, let known):
      "the database's trialwatch schema is version \(found), newer than this trialwatchd knows (\(known)): "
        + "upgrade this node"
    case .shardCountMismatch(let schema, let configured):
      "Shards=\(configured) differs from the \(schema) shards the database's schema was created with: "
        + "the count is fixed; set Shards=\(schema)"
    case .damaged(let what): "the database's trialwatch schema is damaged: \(what)"
    case .nodeNameInUse(let name):
      "node name \(name) is in use by another running trialwatchd: give each node its own NodeName="
    case .notConnected(let why): "not connected to PostgreSQL: \(why)"
    }
  }
}

extension PostgresStoreError: StoreFaultError {
  public var storeFault: StoreFaultReason? {
    if case .notConnected = self { .databaseUnreachable } else { nil }
  }
}
