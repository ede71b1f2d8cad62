import TrialCore

/// Why the file store could not do what was asked. The description names the file (or
/// directory) concerned and the problem, in words; `kind` is for code that reacts to it.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: String, Hashable, Sendable {
    /// The file system is full (or the user's quota is used up). The store keeps the state
    /// of its last successful commit.
    case noSpace = "no-space"
    /// The disk failed to write or sync (EIO): pages written since the last durable commit may
    /// be lost, so the store must not be written again before it is reopened.
    case ioError = "io-error"
    /// The store file is not a readable store: truncated, overwritten, corrupted.
    case damaged
    /// The store was written by a newer version of trialwatch.
    case newerSchema = "newer-schema"
    /// One record does not decode; the description names its key.
    case corruptRecord = "corrupt-record"
    /// The records contradict each other (a verification found problems; the description
    /// names the first ones).
    case inconsistent
    /// Another process (or another repository in this one) has the store open.
    case inUse = "in-use"
    /// No store at the path, and creating one was not asked for.
    case notFound = "not-found"
    /// The file system refused access (permissions, read-only mount).
    case accessDenied = "access-denied"
    /// A transaction or record exceeds what the store can hold.
    case tooLarge = "too-large"
    /// The repository was closed.
    case closed
    /// The store was used in a way it does not support (e.g. a write inside a write).
    case misuse
    /// Any other failure of the file system or of LMDB.
    case failure
  }

  public var kind: Kind
  /// The file or directory concerned.
  public var path: String
  /// What was wrong, in words.
  public var problem: String

  public init(_ kind: Kind, path: String, problem: String) {
    self.kind = kind
    self.path = path
    self.problem = problem
  }

  public var description: String { "\(path): \(problem)" }
}

extension StoreError: StoreFaultError {
  public var storeFault: StoreFaultReason? {
    switch kind {
    case .noSpace: .diskFull
    case .ioError: .ioError
    default: nil
    }
  }
}
