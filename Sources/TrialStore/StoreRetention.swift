import FoundationEssentials
import TrialCore

extension StoreWriteTransaction {
  /// Removes an ended trial's record, its ledger entries (and any of them still in the outbox)
  /// and the subject index entry that names it. The active-trial count is unchanged: the trial
  /// has ended.
  func removeTrial(_ id: TrialID) throws {
    guard let trial = try self.trial(id), trial.state.isEnded else { return }
    let trialKey = withUnsafeBytes(of: id.rawValue.bigEndian) { Array($0) }
    try txn.withCursor(databases.ledger) { cursor in
      while let (found, _) = try trialKey.withUnsafeBytes({ try cursor.seek($0) }),
        found.starts(with: trialKey)
      {
        let key = Array(found)
        try cursor.deleteCurrent()
        _ = try key.withUnsafeBytes { try txn.delete(databases.outbox, $0) }
      }
    }
    if try indexedTrialID(subject: trial.subject) == id {
      var subject = trial.subject
      try subject.withUTF8 { _ = try txn.delete(databases.subjects, UnsafeRawBufferPointer($0)) }
    }
    _ = try trialKey.withUnsafeBytes { try txn.delete(databases.trials, $0) }
    if lastTrialHead?.id == id { lastTrial = nil }
    absentTrial = id
  }
}
