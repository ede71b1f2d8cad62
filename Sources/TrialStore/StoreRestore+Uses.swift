import FoundationEssentials
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

// A restore keeps the records of subjects granted a trial once: a backup taken before a
// subject had its trial must not let it have another. The records of the store being replaced
// that the backup lacks are written into the staged copy before it is put in place, so the
// store holds them from the moment it is restored.

extension StoreRestore {
  /// The uses recorded in the store file `dataFile` (none before schema 5), and its log's
  /// generation.
  static func replaced(storeFile dataFile: String) throws -> (uses: [SubjectUse], generation: LogGeneration) {
    let reader = try LMDBStoreReader(file: dataFile)
    defer { reader.close() }
    return try reader.read { txn in
      (try collected { try txn.scanSubjectUses(after: nil, $0) }, try txn.eventLogBounds().generation)
    }
  }

  /// Writes into the staged copy `staged` (in `directory`) the uses it lacks, and the log's new
  /// generation; returns how many uses. The copy is opened as a store of its own, in a
  /// directory made beside it and removed after (a copy of an earlier schema is upgraded there,
  /// as the daemon would at its next start).
  static func merge(
    _ uses: [SubjectUse], generation: LogGeneration?, into staged: String, in directory: String
  ) throws -> Int {
    guard !uses.isEmpty || generation != nil else { return 0 }
    let work = FilePaths.join(directory, mergingPrefix + "\(getpid())")
    removeTree(work)
    guard mkdir(work, 0o700) == 0 else {
      throw storeError(errno, "making a directory to merge in", path: work)
    }
    defer { removeTree(work) }
    let linked = work + "/" + LMDBEnvironment.dataFileName
    guard link(staged, linked) == 0 else {
      throw storeError(errno, "linking the copy to merge into", path: linked)
    }
    if let generation { try record(generation, inStoreAt: work) }
    guard !uses.isEmpty else { return 0 }
    let store = try LMDBTrialRepository(directory: work)
    defer { store.close() }
    return try store.write { txn in
      var added = 0
      for use in uses where try txn.subjectUse(scope: use.scope, key: use.key) == nil {
        try txn.putSubjectUse(use)
        added += 1
      }
      return added
    }
  }

  /// Writes the log's generation into the store in `directory` as it is: a copy of an earlier
  /// schema is left to be upgraded at the daemon's next start.
  private static func record(_ generation: LogGeneration, inStoreAt directory: String) throws {
    let environment = try LMDBEnvironment(
      directory: directory, initialMapSize: 1 << 20, maximumMapSize: 1 << 40,
      maxDatabases: LMDBTrialRepository.Databases.names.count, create: false)
    defer { environment.close() }
    try environment.write { txn in
      guard let meta = try txn.openDatabase("meta", create: false) else {
        throw StoreError(.damaged, path: environment.dataPath, problem: "the copy has no meta database")
      }
      try Array(LMDBTrialRepository.MetaKey.logGeneration.utf8).withUnsafeBytes { key in
        try Array(generation.record.utf8).withUnsafeBytes { try txn.put(meta, key, $0) }
      }
    }
  }

  /// The name of a directory a restore merges in, before its process id.
  static let mergingPrefix = LMDBEnvironment.dataFileName + ".merging-"

  /// Removes a directory of files (no subdirectories), if it is there.
  static func removeTree(_ path: String) {
    for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
      unlink(path + "/" + name)
    }
    rmdir(path)
  }
}
