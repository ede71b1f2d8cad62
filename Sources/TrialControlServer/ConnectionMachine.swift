import Logging
import TrialControl

/// One control connection as a pure state machine: bytes, completed calls, stream replies and
/// timer ticks go in; actions come out (perform a call, start or stop a stream, log, close),
/// and the bytes to write wait in `output`. No sockets, no queues, no clock: time is given
/// with each input, as monotonic time since any origin, so tests run it in virtual time.
///
/// Calls are taken in arrival order and answered in that order. Changing calls a client
/// pipelines run together (up to `maximumChangesInFlight`); any other call waits until
/// everything before it is answered, so a read sees every change the client made before it.
/// A Watch takes over the connection: another call on it closes it.
struct ConnectionMachine<Call> {
  /// A message, understood by the router.
  enum Classified {
    /// Answered at once: the reply's bytes, or nil for a oneway call.
    case answer([UInt8]?)
    /// Carried out by a handler; its reply, unless oneway, goes out in call order.
    case call(Call, change: Bool, oneway: Bool)
    /// A streaming call (Watch): takes over the connection.
    case stream(Call)
  }

  enum Action {
    /// Carry out `call`; report its reply with `finished(slot:reply:now:)`.
    case perform(Call, slot: Int)
    case startStream(Call)
    case stopStream
    case log(Logger.Level, String)
    /// The connection is over; nothing more is written.
    case close(reason: String)
  }

  private let limits: ConnectionLimits
  private let classify: (ArraySlice<UInt8>) -> Classified
  private let errorReply: (ControlError) -> [UInt8]
  private var frames: VarlinkFrameDecoder

  /// Replies owed, in call order: nil until the call is answered (oneway calls are owed
  /// nothing, but keep their place).
  private var owed: [(slot: Int, oneway: Bool, reply: [UInt8]?)] = []
  private var nextSlot = 0
  private var callsInFlight = 0
  private var changesInFlight = 0
  /// A call waiting for every call before it to be answered.
  private var held: Classified?
  /// The connection closes once the calls before an unreadable message are answered.
  private var finishWhenAnswered = false
  private var closeWhenFlushed = false
  /// Why the connection closes once its output is written.
  private var flushedCloseReason = "finished"
  private(set) var peerFinished = false
  private(set) var isClosed = false
  private(set) var isStreaming = false

  private(set) var output: [UInt8] = []
  private var outputStart = 0
  private var bytesQueued = 0
  private var bytesWritten = 0
  /// Where each stream reply not yet written ends, in `bytesQueued` terms.
  private var streamReplyEnds: [Int] = []
  private var streamHead = 0

  private var lastActivity: Duration
  /// When the message now partly received began to arrive.
  private var partialSince: Duration?

  init(
    limits: ConnectionLimits, now: Duration, classify: @escaping (ArraySlice<UInt8>) -> Classified,
    errorReply: @escaping (ControlError) -> [UInt8]
  ) {
    self.limits = limits
    self.classify = classify
    self.errorReply = errorReply
    frames = VarlinkFrameDecoder(maximumMessageSize: limits.maximumMessageSize)
    lastActivity = now
  }

  // MARK: What the glue reads

  /// A call is with a handler or waits for one.
  var isBusy: Bool { !owed.isEmpty || held != nil }
  var pendingOutput: Int { output.count - outputStart }
  /// Stream replies queued and not yet written.
  var unwrittenStreamReplies: Int { streamReplyEnds.count - streamHead }
  /// The bytes still to write.
  var unwrittenOutput: ArraySlice<UInt8> { output[outputStart...] }
  /// The client's input is no longer wanted (it ended, or the connection finishes).
  var stopsReading: Bool { isClosed || peerFinished || closeWhenFlushed || finishWhenAnswered }
  /// Reading pauses while input or output piles up, and while a call holds the line.
  var wantsInput: Bool {
    !stopsReading && frames.bufferedByteCount <= limits.highWater && pendingOutput <= limits.highWater
  }

  /// When the machine next needs a `tick`: the idle timeout, or the deadline of a message
  /// begun; nil while a call runs or a stream is open.
  var deadline: Duration? {
    guard !isClosed, !isBusy, !isStreaming else { return nil }
    let partial = pendingOutput == 0 ? partialSince.map { $0 + limits.messageTimeout } : nil
    let idle = limits.idleTimeout.map { lastActivity + $0 }
    switch (partial, idle) {
    case (let a?, let b?): return min(a, b)
    case (let a?, nil): return a
    case (nil, let b): return b
    }
  }

  // MARK: Inputs

  mutating func received(_ bytes: some Collection<UInt8>, now: Duration) -> [Action] {
    guard !isClosed, !stopsReading else { return [] }
    if !bytes.isEmpty { lastActivity = now }
    frames.append(bytes)
    return process(now: now)
  }

  /// The client closed its end for writing.
  mutating func endOfInput(now: Duration) -> [Action] {
    guard !isClosed else { return [] }
    peerFinished = true
    return process(now: now)
  }

  /// A performed call's reply (nil for a oneway call).
  mutating func finished(slot: Int, reply: [UInt8]?, change: Bool, now: Duration) -> [Action] {
    callsInFlight -= 1
    if change { changesInFlight -= 1 }
    guard !isClosed, let index = owed.firstIndex(where: { $0.slot == slot }) else { return [] }
    owed[index].reply = reply ?? []
    var answered = 0
    while answered < owed.count, let reply = owed[answered].reply {
      if !owed[answered].oneway { append(reply) }
      answered += 1
    }
    owed.removeFirst(answered)
    if finishWhenAnswered {
      if owed.isEmpty { return finishAfterFlush() }
      return []
    }
    var actions: [Action] = []
    if let held, owed.isEmpty {
      self.held = nil
      actions += start(held)
    }
    return actions + process(now: now)
  }

  /// One reply of the running stream.
  mutating func streamReply(_ bytes: [UInt8]) -> [Action] {
    guard !isClosed, isStreaming else { return [] }
    append(bytes)
    streamReplyEnds.append(bytesQueued)
    if streamReplyEnds.count - streamHead > limits.watchBacklog {
      return close(
        reason: "watcher fell behind",
        log: (.warning, "disconnecting a watcher that fell behind (backlog \(limits.watchBacklog) events)"))
    }
    return []
  }

  /// The stream's source ended it with an error: the error is the last reply, and the
  /// connection closes once it is written.
  mutating func streamFailed(_ error: ControlError) -> [Action] {
    guard !isClosed, isStreaming else { return [] }
    isStreaming = false
    append(errorReply(error))
    return [.stopStream] + finishAfterFlush()
  }

  /// The stream's source ended it (the daemon is stopping).
  mutating func streamEnded() -> [Action] {
    guard !isClosed, isStreaming else { return [] }
    return close(reason: "the stream ended")
  }

  /// `count` bytes of `unwrittenOutput` were written.
  mutating func wrote(_ count: Int, now: Duration) -> [Action] {
    guard !isClosed else { return [] }
    outputStart += count
    bytesWritten += count
    if count > 0 { lastActivity = now }
    while streamHead < streamReplyEnds.count, streamReplyEnds[streamHead] <= bytesWritten { streamHead += 1 }
    if streamHead > 1024 && streamHead * 2 > streamReplyEnds.count {
      streamReplyEnds.removeSubrange(0..<streamHead)
      streamHead = 0
    }
    if outputStart == output.count {
      output.removeAll(keepingCapacity: output.capacity <= 1 << 20)
      outputStart = 0
      if closeWhenFlushed { return close(reason: flushedCloseReason) }
      return process(now: now)
    }
    if outputStart > 1 << 16 {
      output.removeSubrange(0..<outputStart)
      outputStart = 0
    }
    return []
  }

  /// Time passed: closes an idle connection, or one whose message stalled half-sent.
  mutating func tick(now: Duration) -> [Action] {
    guard let deadline, now >= deadline else { return [] }
    if let partialSince, pendingOutput == 0, now >= partialSince + limits.messageTimeout {
      self.partialSince = nil
      append(errorReply(.invalidMessage("the message was not completed within \(limits.messageTimeout)")))
      return [.log(.notice, "closing a connection whose message stalled half-sent")] + finishAfterFlush()
    }
    return close(reason: "idle", log: (.debug, "closing an idle control connection"))
  }

  /// Closes at once (the server is stopping, or the socket failed).
  mutating func close(reason: String, log: (Logger.Level, String)? = nil) -> [Action] {
    guard !isClosed else { return [] }
    isClosed = true
    output = []
    outputStart = 0
    var actions: [Action] = log.map { [.log($0.0, $0.1)] } ?? []
    if isStreaming { actions.append(.stopStream) }
    return actions + [.close(reason: reason)]
  }

  // MARK: Taking calls

  /// Takes calls from the buffer while none holds the line; handles the end of input.
  private mutating func process(now: Duration) -> [Action] {
    var actions: [Action] = []
    while !isClosed && !closeWhenFlushed && !finishWhenAnswered && held == nil
      && changesInFlight < limits.maximumChangesInFlight && pendingOutput <= limits.highWater
    {
      if isStreaming {
        if frames.bufferedByteCount > 0 {
          // The actions and replies of the calls before it still count, as they would had the
          // call come in a later read; then the connection closes.
          isStreaming = false
          return actions + [
            .stopStream,
            .log(.notice, "closing a watching connection that sent another call; use a separate connection"),
          ] + finishAfterFlush(reason: "call during Watch")
        }
        break
      }
      let message: ArraySlice<UInt8>?
      do {
        message = try frames.nextMessage()
      } catch {
        answer(errorReply(.messageTooLarge(limit: error.limit)), oneway: false)
        actions.append(
          .log(.notice, "message too large; closing the connection (limit \(error.limit) bytes)"))
        if owed.isEmpty { return actions + finishAfterFlush() }
        finishWhenAnswered = true
        return actions
      }
      guard let message else { break }
      let classified = classify(message)
      switch classified {
      case .answer(let reply):
        answer(reply, oneway: reply == nil)
      case .call(_, let change, _):
        if change ? callsInFlight > changesInFlight : isBusy {
          held = classified
        } else {
          actions += start(classified)
        }
      case .stream:
        if isBusy { held = classified } else { actions += start(classified) }
      }
    }
    partialSince = frames.hasPartialMessage ? (partialSince ?? now) : nil
    guard !isClosed, !isBusy else { return actions }
    if peerFinished && isStreaming {
      return actions + close(reason: "the watcher disconnected")
    }
    if peerFinished && !closeWhenFlushed {
      if frames.hasPartialMessage {
        append(errorReply(.invalidMessage("the message ended without its NUL terminator")))
      }
      return actions + finishAfterFlush()
    }
    return actions
  }

  private mutating func start(_ classified: Classified) -> [Action] {
    switch classified {
    case .answer(let reply):
      answer(reply, oneway: reply == nil)
      return []
    case .call(let call, let change, let oneway):
      nextSlot += 1
      owed.append((nextSlot, oneway, nil))
      callsInFlight += 1
      if change { changesInFlight += 1 }
      return [.perform(call, slot: nextSlot)]
    case .stream(let call):
      isStreaming = true
      return [.startStream(call)]
    }
  }

  /// Sends at once, or queues the reply behind those still owed.
  private mutating func answer(_ reply: [UInt8]?, oneway: Bool) {
    if owed.isEmpty {
      if let reply, !oneway { append(reply) }
    } else {
      nextSlot += 1
      owed.append((nextSlot, oneway, reply ?? []))
    }
  }

  private mutating func append(_ bytes: [UInt8]) {
    output.append(contentsOf: bytes)
    bytesQueued += bytes.count
  }

  private mutating func finishAfterFlush(reason: String = "finished") -> [Action] {
    closeWhenFlushed = true
    flushedCloseReason = reason
    return pendingOutput == 0 ? close(reason: reason) : []
  }
}

/// What one connection may do: the largest message, how long it may idle or take to send a
/// message, how far a watcher may fall behind, and how many changes it may have running.
public struct ConnectionLimits: Hashable, Sendable {
  /// A larger message is answered `io.trialwatch.MessageTooLarge` and the connection closed.
  public var maximumMessageSize = VarlinkFrameDecoder.defaultMaximumMessageSize
  /// A connection with no traffic for this long, and no call or Watch running, is closed
  /// (monotonic time); nil keeps idle connections open.
  public var idleTimeout: Duration? = .seconds(300)
  /// A message begun must be complete within this long, or the connection is closed.
  public var messageTimeout: Duration = .seconds(10)
  /// Events a watcher may fall behind before it is disconnected.
  public var watchBacklog = 1024
  /// Changing calls of one connection with the handlers at once.
  public var maximumChangesInFlight = 64

  public init() {}

  /// Reading pauses while this many bytes wait in either direction.
  var highWater: Int { max(maximumMessageSize, 1 << 16) * 2 }
}
