import Foundation
import TestSupport
import TrialControl
import TrialStore

@testable import TrialDaemon

/// `records` as an export file holds them: one JSON line each.
func writeJSONLines(_ records: [ExportRecord], to path: String) throws {
  try Data(records.map { $0.jsonLine + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
}

extension StoreCommands {
  /// `records` written to an export file in `scratch`, then imported as `trialwatchd --import`
  /// does into a new file store there: the import's exit status, and the store's directory.
  func importIntoNewFileStore(_ records: [ExportRecord], in scratch: TemporaryDirectory) throws -> (
    status: Int32, directory: String
  ) {
    let file = scratch.appending("imported.jsonl")
    try writeJSONLines(records, to: file)
    let directory = scratch.appending("store")
    return (importTrials(from: file, open: { try LMDBTrialRepository.open(directory: directory) }), directory)
  }
}
