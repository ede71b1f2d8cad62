import Dispatch
import FoundationEssentials
import Synchronization
import TrialControl
import TrialControlServer
import TrialCore
import TrialEngine

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
  /// In a fleet: told of every Watch that starts and ends (the shared log is read only while
  /// one runs), and the log's newest cursor read when one starts without `after` (the events
  /// handed over may be behind while none ran).
  private let demand: LogDemand?
  private let head: (@Sendable () throws -> EventCursor)?

  init(
    last: EventCursor, read: @escaping @Sendable (EventCursor, Int) throws -> [LoggedEvent],
    demand: LogDemand? = nil, head: (@Sendable () throws -> EventCursor)? = nil
  ) {
    state = Mutex(State(last: last))
    self.read = read
    self.demand = demand
    self.head = head
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

  func logSkipped(to cursor: EventCursor) {
    let watches = state.withLock { state in
      if cursor > state.last { state.last = cursor }
      return Array(state.watches.values)
    }
    for watch in watches { watch.learn(cursor) }
  }

  /// Starts a Watch: after `after` when given, else after the newest event. Returns what
  /// ends it.
  func watch(after: EventCursor?, _ sink: StreamSink<WatchReply>) -> @Sendable () -> Void {
    demand?.watchStarted()
    var newest: EventCursor?
    if after == nil, let head {
      do {
        newest = try head()
      } catch {
        sink.fail(ControlError(answering: error, context: "could not read the event log: "))
        demand?.watchEnded()
        return {}
      }
    }
    let (key, watch) = state.withLock { state in
      if let newest, newest > state.last { state.last = newest }
      state.nextKey += 1
      let watch = FeedWatch(position: after ?? state.last, known: state.last, sink: sink, read: read)
      state.watches[state.nextKey] = watch
      return (state.nextKey, watch)
    }
    sink.perform { watch.start(checking: after != nil) }
    return { [weak self] in
      guard let self, self.state.withLock({ $0.watches.removeValue(forKey: key) }) != nil else { return }
      self.demand?.watchEnded()
    }
  }

  /// Ends every Watch (the daemon is stopping).
  func finishAll() {
    let all = state.withLock { state in
      defer { state.watches.removeAll() }
      return Array(state.watches.values)
    }
    for watch in all {
      demand?.watchEnded()
      watch.sink.finish()
    }
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
    sink.sendHere([WatchReply(event: nil)])
    pump()
  }

  /// The log reaches `cursor`, though the hub handed none of the events up to it: read them
  /// from the log (handed over on any thread).
  func learn(_ cursor: EventCursor) {
    sink.perform {
      guard !self.failed, cursor > self.known else { return }
      self.known = cursor
      if self.started && !self.waitingForRoom { self.pump() }
    }
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
    if first.cursor.sequence == position.next.sequence && sink.unwritten + fresh.count <= sink.capacity {
      sink.sendHere(Array(replies[fresh.indices]))
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
      } catch let error as TrialError {
        // A Watch outlives an import into a fleet's store, which starts a new generation of
        // the same log (a restore needs the daemon stopped): it goes on in the new one.
        if case .cursorGeneration(_, let generation, _) = error.code, position.generation != generation {
          position = position.of(generation: generation)
          continue
        }
        return fail(error)
      } catch {
        return fail(error)
      }
      guard let last = events.last else { break }
      sink.sendHere(events.map { WatchReply(event: EventObject($0)) })
      position = last.cursor
      if position > known { known = position }
    }
  }

  private func fail(_ error: any Error) {
    failed = true
    sink.fail(ControlError(answering: error, context: "could not read the event log: "))
  }
}
