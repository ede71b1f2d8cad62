/// Why a store cannot take a write now: a fault of the storage, not of the call or of
/// trialwatch. A client is told it as `io.trialwatch.StoreUnavailable(reason, message)`, the
/// metrics count refused writes by it, and the status line names it.
public enum StoreFaultReason: String, CaseIterable, Hashable, Sendable, Codable {
  /// The file system (or the database's disk) is full; writes resume when space returns.
  case diskFull = "disk-full"
  /// The disk failed to write or sync: what was written since the last durable commit may be
  /// gone, so the daemon stops and restarts from what is durable.
  case ioError = "io-error"
  /// The database cannot be reached (connection refused or lost, server shutting down).
  case databaseUnreachable = "database-unreachable"
  /// The database takes no writes: a standby, or a primary being demoted during a failover.
  case databaseReadOnly = "database-read-only"

  /// The reason in words, for the status line and the client's message.
  public var summary: String {
    switch self {
    case .diskFull: "the disk is full"
    case .ioError: "the disk failed to write"
    case .databaseUnreachable: "the database is unreachable"
    case .databaseReadOnly: "the database is read-only"
    }
  }
}

/// An error of a store that may be a storage fault (`StoreFaultReason`); nil for any other
/// failure (a bug, a damaged record), which stays an internal error.
public protocol StoreFaultError: Error {
  var storeFault: StoreFaultReason? { get }
}
