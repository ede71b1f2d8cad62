import Dispatch
import Foundation
import Synchronization
import TrialControl
import TrialCore

/// The running Watches, fed from the event log. The engine hands it every event it logs, in
/// cursor order; each Watch takes them live while its client keeps up, and reads them from
/// the log when it starts behind (`after`) or falls behind.
final class FeedHub: EventLogObserver, Sendable {
  private struct State {
    /// The newest event handed over.
    var last: EventCursor
    var watches: [UInt64: FeedWatch] = [:]
    var nextKey: UInt64 = 0
  }

  private let state: Mutex<State>
  /// Reads up to `limit` logged events after a cursor (checking it), from any thread.
  private let read: @Sendable (EventCursor, Int) throws -> [LoggedEvent]

  init(last: EventCursor, read: @escaping @Sendable (EventCursor, Int) throws -> [LoggedEvent]) {
    state = Mutex(State(last: last))
    self.read = read
  }

  func eventsLogged(_ events: [LoggedEvent]) {
    guard let last = events.last else { return }
    let watches = state.withLock { state in
      state.last = last.cursor
      return Array(state.watches.values)
    }
    guard !watches.isEmpty else { return }
    // Converted once for every Watch.
    let replies = events.map { WatchReply(event: EventObject($0)) }
    for watch in watches { watch.offer(events, replies) }
  }

  /// Starts a Watch: after `after` when given, else after the newest event. Returns what
  /// ends it.
  func watch(after: EventCursor?, _ sink: StreamSink<WatchReply>) -> @Sendable () -> Void {
    let (key, watch) = state.withLock { state in
      state.nextKey += 1
      let watch = FeedWatch(position: after ?? state.last, known: state.last, sink: sink, read: read)
      state.watches[state.nextKey] = watch
      return (state.nextKey, watch)
    }
    sink.perform { watch.start(checking: after != nil) }
    return { [weak self] in _ = self?.state.withLock { $0.watches.removeValue(forKey: key) } }
  }

  /// Ends every Watch (the daemon is stopping).
  func finishAll() {
    let all = state.withLock { state in
      defer { state.watches.removeAll() }
      return Array(state.watches.values)
    }
    for watch in all { watch.sink.finish() }
  }
}

/// One Watch, on its connection's queue: sends events in cursor order, each once, live from
/// the hub while its client keeps up, else from the log as the client's socket drains.
final class FeedWatch: @unchecked Sendable {
  // @unchecked: the mutable state is touched only on the connection's queue (`sink.perform`).
  let sink: StreamSink<WatchReply>
  private let read: @Sendable (EventCursor, Int) throws -> [LoggedEvent]
  /// The last event sent.
  private var position: EventCursor
  /// The newest event known to be logged.
  private var known: EventCursor
  private var started = false
  private var waitingForRoom = false
  private var failed = false

  init(
    position: EventCursor, known: EventCursor, sink: StreamSink<WatchReply>,
    read: @escaping @Sendable (EventCursor, Int) throws -> [LoggedEvent]
  ) {
    self.position = position
    self.known = known
    self.sink = sink
    self.read = read
  }

  /// The most events read from the log at once.
  private var batch: Int { max(1, sink.capacity / 2) }

  /// Checks the cursor (a Watch with `after`), says the watch is in place, and catches up.
  func start(checking: Bool) {
    if checking {
      do {
        _ = try read(position, 0)
      } catch {
        return fail(error)
      }
    }
    started = true
    sink.send(WatchReply(event: nil))
    pump()
  }

  /// Events just logged, with their replies, from the hub (handed over on any thread).
  func offer(_ events: [LoggedEvent], _ replies: [WatchReply]) {
    sink.perform { self.take(events, replies) }
  }

  private func take(_ events: [LoggedEvent], _ replies: [WatchReply]) {
    guard let last = events.last?.cursor, !failed else { return }
    if last > known { known = last }
    guard started, !waitingForRoom else { return }
    let fresh = events.drop { $0.cursor <= position }
    guard let first = fresh.first else { return }
    if first.cursor == position.next && sink.unwritten + fresh.count <= sink.capacity {
      sink.send(Array(replies[fresh.indices]))
      position = last
    } else {
      pump()
    }
  }

  /// Sends from the log until caught up or the client's socket is full; then waits for room.
  private func pump() {
    while !failed && position < known {
      let room = sink.capacity - sink.unwritten
      guard room >= batch else {
        waitingForRoom = true
        sink.whenDrained { [weak self] in
          guard let self else { return }
          self.waitingForRoom = false
          self.pump()
        }
        return
      }
      let events: [LoggedEvent]
      do {
        events = try read(position, min(room, batch))
      } catch {
        return fail(error)
      }
      guard let last = events.last else { break }
      sink.send(events.map { WatchReply(event: EventObject($0)) })
      position = last.cursor
      if position > known { known = position }
    }
  }

  private func fail(_ error: any Error) {
    failed = true
    sink.fail(ControlError(answering: error, context: "could not read the event log: "))
  }
}
