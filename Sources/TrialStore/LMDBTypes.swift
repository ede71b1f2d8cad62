// Types of the LMDB layer that need nothing of the C library (LMDB.swift is its one importer).

/// Thrown by an operation that found the map full. The write loop of `LMDBEnvironment`
/// catches it, grows the map and runs the transaction again: it never leaves this module.
struct MapFullSignal: Error {}

/// Facts about the open store file.
struct LMDBFileInfo: Sendable {
  var mapSize: Int
  var pageSize: Int
  /// The highest page in use.
  var lastPage: Int
  var fileSize: Int
  var lastTransaction: Int
}

extension LMDBDatabase {
  /// LMDB's own database of free pages (`FREE_DBI`): each value a list of page numbers, their
  /// count first.
  static let freePages = LMDBDatabase(handle: 0, name: "free pages")
}
