import Testing
import TrialControl

@testable import TrialControlServer
@testable import TrialDaemon

/// The connection's state machine alone: no sockets, no queues, time given with each input.
/// Messages are classified by a stand-in router: `read:X`, `change:X`, `oneway:X` (a oneway
/// change), `watch`, and `info` (answered at once).
@Suite struct ConnectionMachineTests {
  typealias Machine = ConnectionMachine<String>

  static func classify(_ message: ArraySlice<UInt8>) -> Machine.Classified {
    let text = String(decoding: message, as: UTF8.self)
    switch text.split(separator: ":").first {
    case "read": return .call(text, change: false, oneway: false)
    case "change": return .call(text, change: true, oneway: false)
    case "oneway": return .call(text, change: true, oneway: true)
    case "watch": return .stream(text)
    default: return .answer(Array("answer:\(text)".utf8) + [0])
    }
  }

  static func machine(_ limits: ConnectionLimits = ConnectionLimits()) -> Machine {
    Machine(
      limits: limits, now: .zero, classify: classify, errorReply: { Array("error:\($0.name)".utf8) + [0] })
  }

  static func bytes(_ messages: String...) -> [UInt8] {
    messages.flatMap { Array($0.utf8) + [0] }
  }

  /// The calls to perform among `actions`.
  static func performed(_ actions: [Machine.Action]) -> [(String, Int)] {
    actions.compactMap { if case .perform(let call, let slot) = $0 { (call, slot) } else { nil } }
  }

  static func closed(_ actions: [Machine.Action]) -> String? {
    actions.lazy.compactMap { if case .close(let reason) = $0 { reason } else { nil } }.first
  }

  /// Takes what the machine has to write, as the socket would, and returns it as text.
  static func written(_ machine: inout Machine, at now: Duration = .zero) -> (String, [Machine.Action]) {
    let output = Array(machine.unwrittenOutput)
    let actions = machine.wrote(output.count, now: now)
    return (String(decoding: output, as: UTF8.self).replacingOccurrences(of: "\0", with: "|"), actions)
  }

  static func reply(_ text: String) -> [UInt8] { Array("reply:\(text)".utf8) + [0] }

  @Test func pipelinedCalls_AreAnsweredInOrder_AndAReadWaitsForTheChangesBeforeIt() {
    var machine = Self.machine()
    let actions = machine.received(Self.bytes("change:a", "change:b", "info", "read:c"), now: .zero)
    // The two changes run together; the read waits for them, and the answer keeps its place.
    #expect(Self.performed(actions).map(\.0) == ["change:a", "change:b"])
    #expect(machine.isBusy && machine.pendingOutput == 0)
    let slots = Self.performed(actions).map(\.1)
    // The second change finishes first: nothing may be written before the first one's reply.
    #expect(
      Self.performed(machine.finished(slot: slots[1], reply: Self.reply("b"), change: true, now: .zero))
        .isEmpty)
    #expect(machine.pendingOutput == 0)
    let next = machine.finished(slot: slots[0], reply: Self.reply("a"), change: true, now: .zero)
    #expect(Self.performed(next).map(\.0) == ["read:c"])
    #expect(Self.written(&machine).0 == "reply:a|reply:b|answer:info|")
    _ = machine.finished(slot: Self.performed(next)[0].1, reply: Self.reply("c"), change: false, now: .zero)
    #expect(Self.written(&machine).0 == "reply:c|")
    #expect(!machine.isBusy)
  }

  @Test func onewayCalls_AreCarriedOut_AndAnsweredWithNothing() {
    var machine = Self.machine()
    let actions = machine.received(Self.bytes("oneway:x", "change:y"), now: .zero)
    let calls = Self.performed(actions)
    #expect(calls.map(\.0) == ["oneway:x", "change:y"])
    _ = machine.finished(slot: calls[1].1, reply: Self.reply("y"), change: true, now: .zero)
    _ = machine.finished(slot: calls[0].1, reply: nil, change: true, now: .zero)
    #expect(Self.written(&machine).0 == "reply:y|")
  }

  @Test func changes_BeyondTheLimitInFlight_WaitForOneToFinish() {
    var limits = ConnectionLimits()
    limits.maximumChangesInFlight = 2
    var machine = Self.machine(limits)
    let first = Self.performed(machine.received(Self.bytes("change:1", "change:2", "change:3"), now: .zero))
    #expect(first.map(\.0) == ["change:1", "change:2"])
    let more = machine.finished(slot: first[0].1, reply: Self.reply("1"), change: true, now: .zero)
    #expect(Self.performed(more).map(\.0) == ["change:3"])
  }

  @Test func halfSentMessage_WaitsForTheRest_ThenIsTaken() {
    var machine = Self.machine()
    #expect(machine.received(Array("read:pa".utf8), now: .seconds(1)).isEmpty)
    #expect(machine.deadline == .seconds(11), "a message begun must be complete within 10 s")
    let actions = machine.received(Array("rt".utf8) + [0], now: .seconds(5))
    #expect(Self.performed(actions).map(\.0) == ["read:part"])
  }

  @Test func halfSentMessage_ThatStalls_IsAnsweredAndClosed() {
    var machine = Self.machine()
    _ = machine.received(Array(#"{"method":"#.utf8), now: .seconds(1))
    #expect(machine.tick(now: .seconds(10)).isEmpty)
    let stalled = machine.tick(now: .seconds(11))
    #expect(stalled.contains { if case .log(.notice, _) = $0 { true } else { false } })
    #expect(machine.stopsReading)
    let (text, actions) = Self.written(&machine, at: .seconds(11))
    #expect(text == "error:io.trialwatch.InvalidMessage|")
    #expect(Self.closed(actions) == "finished")
  }

  @Test func halfSentMessage_AtEndOfInput_GetsAnError() {
    var machine = Self.machine()
    _ = machine.received(Array("read:never-ends".utf8), now: .zero)
    #expect(machine.endOfInput(now: .zero).isEmpty)
    let (text, actions) = Self.written(&machine)
    #expect(text == "error:io.trialwatch.InvalidMessage|")
    #expect(Self.closed(actions) == "finished")
  }

  @Test func idleConnection_IsClosed_AfterTheTimeoutFromItsLastTraffic() {
    var machine = Self.machine()
    #expect(machine.deadline == .seconds(300))
    _ = machine.received(Self.bytes("info"), now: .seconds(100))
    _ = Self.written(&machine, at: .seconds(100))
    #expect(machine.tick(now: .seconds(300)).isEmpty)
    #expect(machine.deadline == .seconds(400))
    #expect(Self.closed(machine.tick(now: .seconds(400))) == "idle")
    #expect(machine.isClosed)
  }

  @Test func connection_WithACallRunning_IsNotIdle() {
    var machine = Self.machine()
    let call = Self.performed(machine.received(Self.bytes("read:slow"), now: .zero))
    #expect(machine.deadline == nil)
    #expect(machine.tick(now: .seconds(1000)).isEmpty)
    _ = machine.finished(slot: call[0].1, reply: Self.reply("slow"), change: false, now: .seconds(1000))
    _ = Self.written(&machine, at: .seconds(1000))
    #expect(machine.deadline == .seconds(1300))
  }

  @Test func oversizedMessage_IsRefused_AndTheConnectionCloses() {
    var limits = ConnectionLimits()
    limits.maximumMessageSize = 16
    var machine = Self.machine(limits)
    let actions = machine.received(Array(repeating: UInt8(ascii: "x"), count: 20), now: .zero)
    #expect(
      actions.contains { if case .log(.notice, let text) = $0 { text.contains("too large") } else { false } })
    #expect(machine.stopsReading)
    let (text, closing) = Self.written(&machine)
    #expect(text == "error:io.trialwatch.MessageTooLarge|")
    #expect(Self.closed(closing) == "finished")
  }

  @Test func oversizedMessage_AfterACallRunning_IsAnsweredAfterIt() {
    var limits = ConnectionLimits()
    limits.maximumMessageSize = 16
    var machine = Self.machine(limits)
    let calls = Self.performed(
      machine.received(Self.bytes("change:a") + Array(repeating: UInt8(ascii: "x"), count: 20), now: .zero))
    #expect(calls.map(\.0) == ["change:a"])
    #expect(machine.pendingOutput == 0)
    let done = machine.finished(slot: calls[0].1, reply: Self.reply("a"), change: true, now: .zero)
    #expect(Self.closed(done) == nil)
    let (text, closing) = Self.written(&machine)
    #expect(text == "reply:a|error:io.trialwatch.MessageTooLarge|")
    #expect(Self.closed(closing) == "finished")
  }

  @Test func watch_WaitsForTheCallsBeforeIt_ThenStreams() {
    var machine = Self.machine()
    let calls = Self.performed(machine.received(Self.bytes("change:a", "watch"), now: .zero))
    #expect(calls.map(\.0) == ["change:a"])
    let next = machine.finished(slot: calls[0].1, reply: Self.reply("a"), change: true, now: .zero)
    #expect(next.contains { if case .startStream("watch") = $0 { true } else { false } })
    #expect(machine.isStreaming && machine.deadline == nil)
    _ = machine.streamReply(Self.reply("event"))
    #expect(Self.written(&machine).0 == "reply:a|reply:event|")
  }

  @Test func slowWatcher_IsCutOff_OnceItsBacklogIsFull() {
    var limits = ConnectionLimits()
    limits.watchBacklog = 3
    var machine = Self.machine(limits)
    _ = machine.received(Self.bytes("watch"), now: .zero)
    // A watcher that reads keeps up however many events come.
    for index in 0..<10 {
      #expect(machine.streamReply(Self.reply("\(index)")).isEmpty)
      _ = Self.written(&machine)
    }
    // One that stops reading is disconnected when the fourth event would queue.
    for index in 0..<3 { #expect(machine.streamReply(Self.reply("late-\(index)")).isEmpty) }
    let cut = machine.streamReply(Self.reply("one-too-many"))
    #expect(
      cut.contains { if case .log(.warning, let text) = $0 { text.contains("fell behind") } else { false } })
    #expect(cut.contains { if case .stopStream = $0 { true } else { false } })
    #expect(Self.closed(cut) == "watcher fell behind")
  }

  @Test func slowWatcher_ThatCatchesUpPartly_IsCountedByWhatItRead() {
    var limits = ConnectionLimits()
    limits.watchBacklog = 2
    var machine = Self.machine(limits)
    _ = machine.received(Self.bytes("watch"), now: .zero)
    _ = machine.streamReply(Self.reply("1"))
    _ = machine.streamReply(Self.reply("2"))
    // Half of the first reply is written: both are still queued.
    _ = machine.wrote(3, now: .zero)
    #expect(Self.closed(machine.streamReply(Self.reply("3"))) != nil)
  }

  @Test func call_DuringAWatch_ClosesTheConnection() {
    var machine = Self.machine()
    _ = machine.received(Self.bytes("watch"), now: .zero)
    let actions = machine.received(Self.bytes("info"), now: .zero)
    #expect(Self.closed(actions) == "call during Watch")
    #expect(actions.contains { if case .stopStream = $0 { true } else { false } })
  }

  /// Found by the control fuzz target (FuzzTesting/Regressions/control/
  /// call-after-watch-in-one-read-drops-replies): with the calls before a Watch and a call after
  /// it in one read, the replies already queued were dropped and the Watch never started,
  /// where arriving in separate reads they went out.
  @Test func call_AfterAWatchInTheSameRead_LetsTheRepliesBeforeItGoOut() {
    for reads in [[Self.bytes("info", "watch", "info")], [Self.bytes("info", "watch"), Self.bytes("info")]] {
      var machine = Self.machine()
      var actions: [Machine.Action] = []
      var output = ""
      for read in reads {
        actions += machine.received(read, now: .zero)
        let (written, more) = Self.written(&machine)
        output += written
        actions += more
      }
      #expect(output == "answer:info|", "\(reads.count) reads")
      #expect(actions.contains { if case .startStream = $0 { true } else { false } }, "\(reads.count) reads")
      #expect(actions.contains { if case .stopStream = $0 { true } else { false } }, "\(reads.count) reads")
      #expect(Self.closed(actions) == "call during Watch", "\(reads.count) reads")
    }
  }

  @Test func watcher_ThatHangsUp_EndsItsStream() {
    var machine = Self.machine()
    _ = machine.received(Self.bytes("watch"), now: .zero)
    let actions = machine.endOfInput(now: .zero)
    #expect(Self.closed(actions) == "the watcher disconnected")
  }

  @Test func input_PilingUpBehindACall_PausesReading() {
    var limits = ConnectionLimits()
    limits.maximumMessageSize = 64
    var machine = Self.machine(limits)
    let first = Self.performed(machine.received(Self.bytes("read:a"), now: .zero))
    #expect(machine.wantsInput)
    _ = machine.received(Array(repeating: UInt8(ascii: "r"), count: 1 << 17), now: .zero)
    #expect(!machine.wantsInput, "more than twice the buffer limit waits")
    _ = machine.finished(slot: first[0].1, reply: Self.reply("a"), change: false, now: .zero)
    #expect(machine.stopsReading, "the piled-up bytes are one oversized message")
  }
}
