/// Which store a test runs on: the test targets name the choice with this one enum (the store
/// contract tests, the control fixture), each making the store it names.
public enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
  /// `InMemoryTrialRepository`.
  case memory
  /// `LMDBTrialRepository` on real files.
  case lmdb
  /// `PostgresTrialRepository` on a fresh database of the tests' private PostgreSQL, one node
  /// owning every shard.
  case postgres

  public var description: String { rawValue }
}
