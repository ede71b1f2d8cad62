import Dispatch
import Foundation
import Synchronization
import TrialControl

/// A stream's end on its connection. `send` costs the sender a counter update and an
/// asynchronous hand-off, never a wait: once `backlog` replies wait for the connection's
/// queue, the watcher is cut off and further replies are dropped. (The connection's own
/// backlog, of replies its socket has not taken, is the state machine's.)
final class StreamRelay: StreamTarget, Sendable {
  private struct Counts {
    var waiting = 0
    var stopped = false
  }

  private weak let connection: ControlConnection?
  private let queue: DispatchQueue
  private let backlog: Int
  private let counts = Mutex(Counts())

  init(connection: ControlConnection, backlog: Int) {
    self.connection = connection
    self.queue = connection.queue
    self.backlog = backlog
  }

  func send(_ encode: @escaping @Sendable (JSONEncoder) -> [UInt8]) {
    let overflow: Bool? = counts.withLock { counts in
      if counts.stopped { return nil }
      counts.waiting += 1
      if counts.waiting > backlog { counts.stopped = true }
      return counts.stopped
    }
    switch overflow {
    case nil: return
    case true?:
      let backlog = self.backlog
      queue.async { [weak connection] in connection?.streamOverflowed(backlog: backlog) }
    case false?:
      queue.async { [self] in
        counts.withLock { $0.waiting -= 1 }
        connection?.streamReply(encode)
      }
    }
  }

  func finish() {
    counts.withLock { $0.stopped = true }
    queue.async { [weak connection] in connection?.streamEnded() }
  }

  /// No more replies: the connection is closing.
  func stop() {
    counts.withLock { $0.stopped = true }
  }
}
