import Foundation
import TrialCore
@_spi(StoreTesting) import TrialStore

/// Files a restore must refuse: damaged copies of a backup, and files that are not backups of
/// a store this version reads.
public enum BadBackup: String, CaseIterable, Sendable, CustomStringConvertible {
  case empty
  case randomBytes
  case truncated
  case flippedPage
  case textFile
  case lmdbStoreOfAnotherProgram
  case newerSchema
  case inconsistentRecords

  public var description: String { rawValue }

  /// How the refusal is told: the error's kind (one of them) and words of its message.
  public var expectedKinds: Set<StoreError.Kind> {
    switch self {
    case .newerSchema: [.newerSchema]
    case .inconsistentRecords: [.inconsistent]
    // LMDB meets a broken page as a corrupted file, or the records on it no longer decode
    // or agree.
    case .flippedPage: [.damaged, .corruptRecord, .inconsistent]
    default: [.damaged]
    }
  }

  public var expectedWords: [String] {
    switch self {
    case .empty: ["empty"]
    case .randomBytes, .textFile: ["header is invalid"]
    case .truncated: ["truncated"]
    case .flippedPage: []
    case .lmdbStoreOfAnotherProgram: ["not a trialwatch store"]
    case .newerSchema: ["newer version of trialwatch"]
    case .inconsistentRecords: ["not a consistent trialwatch store", "trials/0000000000000005"]
    }
  }

  /// Writes the bad file at `file`, using `scratch` (an empty directory) for the stores it
  /// makes on the way.
  public func make(at file: String, scratch: String) throws {
    let store = (scratch as NSString).appendingPathComponent("store")
    switch self {
    case .empty:
      try Data().write(to: URL(fileURLWithPath: file))
    case .randomBytes:
      try StoreFileDamage.writeNoise(file, count: 65_536, seed: 42)
    case .textFile:
      try Data(String(repeating: "this is not a trialwatch backup\n", count: 500).utf8)
        .write(to: URL(fileURLWithPath: file))
    case .truncated, .flippedPage:
      let repository = try LMDBTrialRepository(directory: store)
      var planner = Planner()
      for batch in 1...40 {
        try StoreCrashWorkload.runBatch(batch, repository: repository, planner: &planner)
      }
      let report = try repository.backup(to: file)
      repository.close()
      if self == .truncated {
        try StoreFileDamage.truncate(file, to: report.bytes / 2)
      } else {
        try StoreFileDamage.flipPage(file, page: report.bytes / 4096 / 2)
      }
    case .lmdbStoreOfAnotherProgram:
      try makeForeignLMDBStore(directory: store)
      try FileManager.default.copyItem(atPath: store + "/data.mdb", toPath: file)
    case .newerSchema:
      let repository = try LMDBTrialRepository(directory: store)
      try StoreCorruption.makeFixture(repository)
      try StoreFileDamage.raiseSchema(of: repository)
      repository.close()
      try FileManager.default.copyItem(atPath: store + "/data.mdb", toPath: file)
    case .inconsistentRecords:
      let repository = try LMDBTrialRepository(directory: store)
      try StoreCorruption.makeFixture(repository)
      _ = try StoreCorruption.activeTrialMissingFromSubjectIndex.plant(in: repository)
      repository.close()
      try FileManager.default.copyItem(atPath: store + "/data.mdb", toPath: file)
    }
  }
}
