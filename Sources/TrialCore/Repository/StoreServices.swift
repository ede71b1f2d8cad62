/// What a store offers the daemon besides trials, whichever store it is: its size for
/// `GetStatus`, what opening it did that an operator should read in the log, and letting go
/// of its files and connections. The repository contract (`TrialRepository`) holds the
/// trials; this holds the rest, so that the daemon never needs to know which store it runs on.
public protocol StoreServices: AnyObject, Sendable {
  /// The bytes the store's file takes on disk; nil for a store without a file of its own (a
  /// database server's).
  func fileSize() -> Int?
  /// The store file's size and the bytes in it free for reuse, read without a scan of the
  /// records; nil for a store without a file of its own.
  func space() -> StoreSpace?
  /// What opening the store did: an upgrade of a store written by an earlier version, a
  /// schema created in an empty database. Empty when there is nothing to say.
  var openingNotes: [StoreNote] { get }
  /// Lets go of the store's files and connections; the repository is not used afterwards.
  func close()
  /// Drops what the store holds in this process's memory that it can read again when needed
  /// (the file store: the pages of its file mapped in, which stay in the page cache). The
  /// daemon calls it once writes have gone quiet.
  func releaseMemory()
  /// How many trials the daemon's start will hold in memory (the active ones, which its
  /// planner holds), read without a scan of the records; nil when the store cannot tell that
  /// cheaply (then the daemon checks its memory limit against its base alone).
  func trialsToHold() throws -> Int?
}

extension StoreServices {
  public func trialsToHold() throws -> Int? { nil }
}

/// How much room a store file takes, and how much of it holds nothing.
public struct StoreSpace: Hashable, Sendable {
  public var fileBytes: Int
  /// Pages free inside the file (left by deleted records, or never used yet), in bytes.
  public var freeBytes: Int

  public init(fileBytes: Int, freeBytes: Int) {
    self.fileBytes = fileBytes
    self.freeBytes = freeBytes
  }
}

/// One thing opening a store did, for the log: a message and its structured fields.
public struct StoreNote: Hashable, Sendable {
  public var message: String
  public var fields: [String: String]

  public init(_ message: String, fields: [String: String] = [:]) {
    self.message = message
    self.fields = fields
  }
}

/// A store opened for the daemon: the trials under the contract, and its services.
public struct OpenedStore {
  public var repository: any TrialRepository
  public var services: any StoreServices

  public init(repository: any TrialRepository, services: any StoreServices) {
    self.repository = repository
    self.services = services
  }

  /// A store that is its own services.
  public init(_ store: some TrialRepository & StoreServices) {
    self.init(repository: store, services: store)
  }
}
