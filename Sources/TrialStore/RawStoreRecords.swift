// Access below the repository's rules, for tests that plant damage (TrialStoreTesting). Not
// part of the public interface: `@_spi(StoreTesting) import TrialStore` reaches it.

/// Makes an LMDB store of another program in `directory`: one database, "other", and no
/// trialwatch meta records (for tests of what is refused).
@_spi(StoreTesting)
public func makeForeignLMDBStore(directory: String) throws {
  let environment = try LMDBEnvironment(
    directory: directory, initialMapSize: 1 << 20, maximumMapSize: 1 << 20, maxDatabases: 2, create: true)
  defer { environment.close() }
  try environment.write { txn in
    let other = try txn.openDatabase("other", create: true)!
    try Array("key".utf8).withUnsafeBytes { key in
      try Array("value".utf8).withUnsafeBytes { try txn.put(other, key, $0) }
    }
  }
}

/// The records of a store as bytes, by database name, inside one write transaction.
@_spi(StoreTesting)
public struct RawStoreRecords {
  let txn: LMDBTransaction
  let databases: LMDBTrialRepository.Databases

  private func database(_ name: String) throws -> LMDBDatabase {
    let found: LMDBDatabase? =
      switch name {
      case "trials": databases.trials
      case "subjects": databases.subjects
      case "ledger": databases.ledger
      case "outbox": databases.outbox
      case "meta": databases.meta
      case "events": databases.events
      case "consumers": databases.consumers
      case "uses": databases.uses
      case "cohorts": databases.cohorts
      case "webhooks": databases.webhooks
      case "main": try txn.mainDatabase()
      default: nil
      }
    guard let found else { throw StoreError(.misuse, path: "", problem: "no database \"\(name)\"") }
    return found
  }

  public func get(_ database: String, _ key: [UInt8]) throws -> [UInt8]? {
    try key.withUnsafeBytes { try txn.get(try self.database(database), $0).map { Array($0) } }
  }

  /// Writes `value` under `key`; in `main`, a plain record beside the named databases.
  public func put(_ database: String, _ key: [UInt8], _ value: [UInt8]) throws {
    try key.withUnsafeBytes { key in
      try value.withUnsafeBytes { try txn.put(try self.database(database), key, $0) }
    }
  }

  /// Every key of `database`, in the store's order.
  public func keys(_ database: String) throws -> [[UInt8]] {
    var keys: [[UInt8]] = []
    try txn.forEach(try self.database(database)) { key, _ in keys.append(Array(key)) }
    return keys
  }

  @discardableResult
  public func delete(_ database: String, _ key: [UInt8]) throws -> Bool {
    try key.withUnsafeBytes { try txn.delete(try self.database(database), $0) }
  }
}
