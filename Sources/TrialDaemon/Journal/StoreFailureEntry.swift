import Logging
import TrialCore

/// The journal entry of a store that failed to write or sync (`EngineObserver.engineStoreFailed`):
/// trialwatchd logs it, writes nothing more, and exits with `exitStatus`, for systemd to start
/// it again from what is durable on disk. `systemd/trialwatch.catalog` explains it.
public enum StoreFailureEntry {
  /// The exit status of a daemon stopped by a failed write or sync of its store.
  public static let exitStatus: Int32 = 3

  /// The entry's message.
  public static func message(_ error: any Error) -> String {
    "the store failed to write or sync; nothing more is written, and trialwatchd exits with status "
      + "\(exitStatus) to start again from what is durable on disk: \(error)"
  }

  /// The fields of the entry beside its message: in the journal, `MESSAGE_ID`, `STORE_FAULT`
  /// (`io-error`) and `STORE_ERROR` (the error, which names the file).
  public static func metadata(_ error: any Error) -> Logger.Metadata {
    let reason = (error as? any StoreFaultError)?.storeFault ?? .ioError
    return [
      "message-id": "\(EventJournalEntry.MessageID.storeFailed.rawValue)",
      "store-fault": "\(reason.rawValue)", "store-error": "\(error)",
    ]
  }
}
