import Foundation
import Synchronization
import Systemd

/// The journal of the tests: keeps every entry it is sent, with the monotonic time of the send,
/// and fails as many sends as it is told to (`failuresLeft`), throwing `failure`.
public final class RecordingJournal: JournalSink, @unchecked Sendable {
  // @unchecked: what is sent is kept behind a mutex; `monotonicNow` is set before the first send.

  public struct Entry: Sendable {
    public var fields: [JournalField]
    public var at: TimeInterval
  }

  private let state = Mutex<(sent: [Entry], failuresLeft: Int)>(([], 0))
  private let failure: any Error & Sendable
  /// The time each send is recorded at.
  public var monotonicNow: () -> TimeInterval

  public init(
    failuresLeft: Int = 0, failure: any Error & Sendable = SystemdError.journalSendFailed,
    monotonicNow: @escaping () -> TimeInterval = { 0 }
  ) {
    self.failure = failure
    self.monotonicNow = monotonicNow
    self.failuresLeft = failuresLeft
  }

  /// How many of the next sends fail; `Int.max` for a journal that is down.
  public var failuresLeft: Int {
    get { state.withLock { $0.failuresLeft } }
    set { state.withLock { $0.failuresLeft = newValue } }
  }

  public func send(_ fields: [JournalField]) throws {
    let at = monotonicNow()
    let failed = state.withLock { state in
      guard state.failuresLeft == 0 else {
        state.failuresLeft -= 1
        return true
      }
      state.sent.append(Entry(fields: fields, at: at))
      return false
    }
    if failed { throw failure }
  }

  /// Every entry sent so far, in order.
  public var sent: [Entry] { state.withLock { $0.sent } }

  /// The value of field `name` in each entry that has it, in order.
  public func values(_ name: String) -> [String] {
    sent.compactMap { entry in entry.fields.first { $0.name == name }?.value }
  }
}

/// Journal fields as a test writes them: `["MESSAGE": "…", "PRIORITY": "5"]`, in that order.
public func journalFields(_ pairs: KeyValuePairs<String, String>) -> [JournalField] {
  pairs.map { JournalField(name: $0.key, value: $0.value) }
}
