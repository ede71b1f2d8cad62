import Dispatch
import FoundationEssentials
import Synchronization
import TrialControl

/// A stream's end on its connection. `send` costs the sender a counter update and an
/// asynchronous hand-off, never a wait; `sendHere`, from the connection's queue, not even that. A source that keeps `unwritten` under `capacity`
/// (the event feed does, reading on as the socket drains) is never cut off; one that does
/// not is cut off once `capacity` replies wait for the connection's queue, and further
/// replies are dropped.
final class StreamRelay: StreamTarget, Sendable {
  private struct Counts {
    /// Replies handed off and not yet on the connection's queue.
    var waiting = 0
    /// Replies on the connection, not yet written to its socket.
    var queued = 0
    var stopped = false
    var drained: (@Sendable () -> Void)?
  }

  private weak let connection: ControlConnection?
  private let queue: DispatchQueue
  let capacity: Int
  private let counts = Mutex(Counts())

  init(connection: ControlConnection, backlog: Int) {
    self.connection = connection
    self.queue = connection.queue
    self.capacity = backlog
  }

  var unwritten: Int { counts.withLock { $0.waiting + $0.queued } }

  func send(_ encode: @escaping @Sendable (JSONEncoder) -> [UInt8]) {
    send(all: [encode])
  }

  func send(all encodes: [@Sendable (JSONEncoder) -> [UInt8]]) {
    guard !encodes.isEmpty else { return }
    let overflow: Bool? = counts.withLock { counts in
      if counts.stopped { return nil }
      counts.waiting += encodes.count
      if counts.waiting > capacity { counts.stopped = true }
      return counts.stopped
    }
    switch overflow {
    case nil: return
    case true?:
      let backlog = self.capacity
      queue.async { [weak connection] in connection?.streamOverflowed(backlog: backlog) }
    case false?:
      queue.async { [self] in
        counts.withLock {
          $0.waiting -= encodes.count
          $0.queued += encodes.count
        }
        connection?.streamReplies(encodes)
      }
    }
  }

  func sendHere(all encodes: [@Sendable (JSONEncoder) -> [UInt8]]) {
    guard !encodes.isEmpty else { return }
    let overflow: Bool? = counts.withLock { counts in
      if counts.stopped { return nil }
      counts.queued += encodes.count
      if counts.waiting + counts.queued > capacity { counts.stopped = true }
      return counts.stopped
    }
    switch overflow {
    case nil: return
    case true?: connection?.streamOverflowed(backlog: capacity)
    case false?: connection?.streamReplies(encodes)
    }
  }

  /// The connection's count of replies not yet written (on its queue): wakes a source
  /// waiting for room.
  func update(unwritten queued: Int) {
    let drained: (@Sendable () -> Void)? = counts.withLock { counts in
      counts.queued = queued
      guard let drained = counts.drained, counts.waiting + queued <= capacity / 2 else { return nil }
      counts.drained = nil
      return drained
    }
    drained?()
  }

  func whenDrained(_ body: @escaping @Sendable () -> Void) {
    let now: Bool = counts.withLock { counts in
      guard !counts.stopped else { return false }
      if counts.waiting + counts.queued <= capacity / 2 { return true }
      counts.drained = body
      return false
    }
    if now { queue.async(execute: body) }
  }

  func perform(_ body: @escaping @Sendable () -> Void) {
    queue.async(execute: body)
  }

  func finish() {
    counts.withLock { $0.stopped = true }
    queue.async { [weak connection] in connection?.streamEnded() }
  }

  func fail(_ error: ControlError) {
    counts.withLock { $0.stopped = true }
    queue.async { [weak connection] in connection?.streamFailed(error) }
  }

  /// No more replies: the connection is closing.
  func stop() {
    counts.withLock {
      $0.stopped = true
      $0.drained = nil
    }
  }
}
