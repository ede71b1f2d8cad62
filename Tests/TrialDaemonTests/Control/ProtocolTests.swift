import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialControlServer
@testable import TrialDaemon
@testable import TrialEngine

/// The Varlink protocol over a real socket, against the daemon's handlers and a real engine:
/// introspection, oneway, pipelining, streaming, and bad input.
@Suite struct ProtocolTests {
  @Test func getInfo_ListsTheInterfaces() throws {
    let fixture = try ControlFixture()
    let info = try fixture.client().getInfo()
    #expect(info.vendor == "trialwatch")
    #expect(info.product == "trialwatchd")
    #expect(info.version == "1.2.3-test")
    #expect(
      info.interfaces == [
        "org.varlink.service", "io.trialwatch", "io.trialwatch.Trials", "io.systemd.Metrics",
      ])
  }

  @Test func getInterfaceDescription_ServesTheFilesVerbatim() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    for name in VarlinkInterfaces.all {
      let description = try client.interfaceDescription(name)
      #expect(description == VarlinkInterfaces.descriptions[name])
      #expect(description.contains("interface \(name)\n"))
    }
    let missing = remoteError { _ = try client.interfaceDescription("com.example.Nothing") }
    #expect(missing?.name == "org.varlink.service.InterfaceNotFound")
    #expect(missing?.parameters.interface == "com.example.Nothing")
  }

  @Test func routes_ServeEveryDeclaredMethod() throws {
    let fixture = try ControlFixture()
    #expect(fixture.server.router.methods == Set(VarlinkInterfaces.parameterNames.keys))
  }

  @Test func unknownInterfacesAndMethods_AreNamedInTheError() throws {
    let fixture = try ControlFixture()
    let raw = try fixture.client()
    let interface = remoteError { try raw.call("com.example.Thing.Do") }
    #expect(interface?.name == "org.varlink.service.InterfaceNotFound")
    #expect(interface?.parameters.interface == "com.example.Thing")
    let method = remoteError { try raw.call("io.trialwatch.Trials.DeleteEverything") }
    #expect(method?.name == "org.varlink.service.MethodNotFound")
    #expect(method?.parameters.method == "io.trialwatch.Trials.DeleteEverything")
    let serviceMethod = remoteError { try raw.call("org.varlink.service.Reboot") }
    #expect(serviceMethod?.name == "org.varlink.service.MethodNotFound")
    let errorsOnly = remoteError { try raw.call("io.trialwatch.TrialNotFound") }
    #expect(errorsOnly?.name == "org.varlink.service.MethodNotFound")
    try raw.sendBytes(Array(#"{"method":"org.varlink.service.GetInfo","upgrade":true}"#.utf8) + [0])
    let upgrade = try raw.receive()
    #expect(upgrade.error == "org.varlink.service.InvalidParameter")
    #expect(upgrade.errorParameters.parameter == "upgrade")
  }

  @Test(arguments: StoreKind.allCases)
  func onewayCalls_AreCarriedOut_WithoutAReply(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x11, 0x12])
    let raw = try fixture.client()
    try raw.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"quiet"}"#, oneway: true))
    try raw.sendBytes(message("io.trialwatch.Trials.GetTrial", #"{"id":"nonsense"}"#, oneway: true))
    try raw.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"quiet"}"#, oneway: true))
    try raw.sendBytes(
      message(
        "io.trialwatch.Trials.EndTrial", #"{"id":"0000000000000099","outcome":"converted"}"#, oneway: true))
    // The next reply on the connection answers this call: the oneway calls sent none.
    #expect(try raw.getTrial(GetTrialParameters(subject: "quiet")).id == TrialID(0x11))
    try raw.sendBytes(
      message("io.trialwatch.Trials.ExtendTrial", #"{"id":"0000000000000011","by":"2d"}"#, oneway: true))
    let extended = try raw.getTrial(GetTrialParameters(id: TrialID(0x11)))
    #expect(extended.revision == 2)
    #expect(extended.endsAt == ControlFixture.start.addingTimeInterval(7 * 86_400))
    #expect(try fixture.client().listTrials().trials.map(\.id) == [TrialID(0x11)])
    // Carried out for real: in the store.
    #expect(try fixture.engine.storedTrials().map(\.revision) == [2])
  }

  @Test(arguments: StoreKind.allCases)
  func pipelinedCalls_AreAnsweredInOrder(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3])
    let raw = try fixture.client()
    var bytes: [UInt8] = []
    for subject in ["p1", "p2", "p3"] {
      bytes += message("io.trialwatch.Trials.StartTrial", #"{"subject":"\#(subject)"}"#)
    }
    bytes += message("org.varlink.service.GetInfo")
    bytes += message("io.trialwatch.Trials.GetTrial", #"{"subject":"p2"}"#)
    try raw.sendBytes(bytes)
    var subjects: [String] = []
    for _ in 0..<3 { subjects.append(try raw.receive().parameters(as: TrialReply.self).trial.subject) }
    #expect(subjects == ["p1", "p2", "p3"])
    #expect(try raw.receive().parameters(as: GetInfoReply.self).product == "trialwatchd")
    #expect(try raw.receive().parameters(as: TrialReply.self).trial.id == TrialID(2))
  }

  @Test(arguments: StoreKind.allCases)
  func manyPipelinedReads_AreAnsweredInOrder_WithoutAHopEach(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1])
    let raw = try fixture.client()
    _ = try raw.startTrial(StartTrialParameters(subject: "only"))
    var bytes: [UInt8] = []
    for index in 0..<5000 {
      let id = index % 2 == 0 ? "1" : String(index + 0x10000, radix: 16)
      bytes += message("io.trialwatch.Trials.GetTrial", #"{"id":"\#(id)"}"#)
    }
    // The whole batch arrives before any reply is read: the server must neither recurse per
    // message nor stop answering when its output backs up.
    let inlineBefore = ControlConnection.inlineCompletions.load(ordering: .relaxed)
    try raw.sendBytes(bytes)
    for index in 0..<5000 {
      let reply = try raw.receive()
      if index % 2 == 0 {
        #expect(reply.error == nil)
      } else {
        #expect(reply.error == "io.trialwatch.TrialNotFound")
        #expect(reply.errorParameters.id?.hasSuffix(String(index + 0x10000, radix: 16)) == true)
      }
    }
    #expect(ControlConnection.inlineCompletions.load(ordering: .relaxed) - inlineBefore >= 5000)
  }

  @Test(arguments: StoreKind.allCases)
  func pipelinedChanges_WithAReadAfterThem_RunTogetherAndRepliesKeepTheirOrder(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3, 4, 5], holdingWrites: true)
    let writes = try #require(fixture.writes)
    let raw = try fixture.client()
    let before = fixture.engine.commits
    // A commit in progress: what comes meanwhile waits for the next.
    writes.holdNextWrite()
    let first = try fixture.client()
    try first.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"first"}"#))
    try #require(writes.waitUntilWriteHeld(), "the first commit began")
    var bytes: [UInt8] = []
    for subject in ["a", "b", "a"] {
      bytes += message("io.trialwatch.Trials.StartTrial", #"{"subject":"\#(subject)"}"#)
    }
    bytes += message("io.trialwatch.Trials.GetTrial", #"{"subject":"b"}"#)
    bytes += message("org.varlink.service.GetInfo")
    try raw.sendBytes(bytes)
    // The three changes reach the engine together, and wait in the lane; the read waits for them.
    #expect(fixture.waitUntilReceived(4))
    #expect(fixture.callsReceived == 4)
    fixture.engine.queue.sync {}
    writes.releaseWrite()
    #expect(try first.receive().parameters(as: TrialReply.self).trial.subject == "first")
    #expect(try raw.receive().parameters(as: TrialReply.self).trial.subject == "a")
    #expect(try raw.receive().parameters(as: TrialReply.self).trial.subject == "b")
    #expect(try raw.receive().error == "io.trialwatch.SubjectAlreadyActive")
    #expect(
      try raw.receive().parameters(as: TrialReply.self).trial.subject == "b", "the read sees the changes")
    #expect(try raw.receive().parameters(as: GetInfoReply.self).product == "trialwatchd")
    #expect(fixture.callsReceived == 5)
    #expect(fixture.engine.commits == before + 2, "the three changes are one transaction")
  }

  @Test(arguments: StoreKind.allCases)
  func callsOnOtherConnections_GoOn_WhileTheEngineIsBusy(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1])
    let slow = try fixture.client()
    fixture.holdEngine()
    try slow.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"held"}"#))
    // Introspection does not need the engine, so another client is answered at once.
    let info = try fixture.client().getInfo()
    #expect(info.product == "trialwatchd")
    fixture.releaseEngine()
    #expect(try slow.receive().parameters(as: TrialReply.self).trial.subject == "held")
  }

  /// Group commit: changes from many clients that reach the lane while a commit is in progress
  /// are committed together, in the next transaction, and each client gets its own answer.
  @Test(arguments: StoreKind.allCases)
  func changesFromManyClients_ReachingABusyLane_AreCommittedTogether(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: Array(1...9), holdingWrites: true)
    let writes = try #require(fixture.writes)
    let clients = try (0..<8).map { _ in try fixture.client() }
    let before = fixture.engine.commits
    writes.holdNextWrite()
    let first = try fixture.client()
    try first.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"first"}"#))
    try #require(writes.waitUntilWriteHeld(), "the first commit began")
    // The last client asks for a subject the first one also asks for.
    for (index, client) in clients.enumerated() {
      try client.sendBytes(message("io.trialwatch.Trials.StartTrial", #"{"subject":"s\#(index % 7)"}"#))
    }
    #expect(fixture.waitUntilReceived(9))
    fixture.engine.queue.sync {}
    writes.releaseWrite()
    let firstTrial = try first.receive().parameters(as: TrialReply.self).trial
    let replies = try clients.map { try $0.receive() }
    #expect(fixture.engine.commits == before + 2)

    let started = try replies.filter { $0.error == nil }.map { try $0.parameters(as: TrialReply.self).trial }
    let refused = replies.filter { $0.error != nil }
    #expect(started.count == 7)
    #expect(Set(started.map(\.subject)) == Set((0..<7).map { "s\($0)" }))
    #expect(refused.map(\.error) == ["io.trialwatch.SubjectAlreadyActive"])
    #expect(refused.first?.errorParameters.subject == "s0")
    let winner = started.first { $0.subject == "s0" }
    #expect(refused.first?.errorParameters.id == winner?.id.description)
    let stored = try fixture.engine.storedTrials()
    #expect(stored.map(\.id) == ([firstTrial] + started).map(\.id).sorted())
    #expect(stored.allSatisfy { $0.state == .active && $0.revision == 1 })
  }

  /// Many clients changing trials at the same moment, on their own threads: every change is
  /// answered and stored, however the engine groups them.
  @Test func concurrentClients_AllStartTrials_AndEveryTrialIsStored() throws {
    let fixture = try ControlFixture(store: .lmdb)
    let clientCount = 6
    let perClient = 20
    let path = fixture.socketPath
    let results = Mutex<[Result<[TrialID], VarlinkClientError>]>([])
    DispatchQueue.concurrentPerform(iterations: clientCount) { index in
      let result = Result { () throws(VarlinkClientError) -> [TrialID] in
        let client = try VarlinkClient(path: path)
        client.setReceiveTimeout(seconds: patience)
        var ids: [TrialID] = []
        for number in 0..<perClient {
          ids.append(
            try client.startTrial(StartTrialParameters(subject: "c\(index)-\(number)", duration: .days(1))).id
          )
        }
        return ids
      }
      results.withLock { $0.append(result) }
    }
    let ids = try results.withLock { try $0.flatMap { try $0.get() } }
    #expect(ids.count == clientCount * perClient)
    #expect(Set(ids).count == ids.count)
    let stored = try fixture.engine.storedTrials()
    #expect(stored.map(\.id) == ids.sorted())
    #expect(Set(stored.map(\.subject)).count == clientCount * perClient)
    let status = try fixture.client().getStatus()
    #expect(status.trials.active == clientCount * perClient)
    #expect(status.pendingEvents == clientCount * perClient)
  }

  @Test func malformedMessages_GetAnError_AndTheConnectionCarriesOn() throws {
    let fixture = try ControlFixture()
    let raw = try fixture.client()
    let cases: [(String, String)] = [
      (#"{"method": "org.varlink.service.GetInfo""#, "malformed JSON"),
      (#"[1, 2, 3]"#, "must be a JSON object"),
      (#"{"parameters": {}}"#, "method: is required"),
      (#"{"method": 42}"#, "method: expected a string"),
      (#"{"method": "GetInfo"}"#, "not of the form interface.Method"),
      (#"{"method": "org.varlink.service.GetInfo", "parameters": []}"#, "parameters: expected an object"),
      (#"{"method": "org.varlink.service.GetInfo", "more": "yes"}"#, "more: expected a boolean"),
      ("{\"method\": \"x.Y\", \"parameters\": {\"s\": \"\u{1}\"}}", "control character"),
    ]
    for (text, problem) in cases {
      try raw.sendBytes(Array(text.utf8) + [0])
      let reply = try raw.receive()
      #expect(reply.error == "io.trialwatch.InvalidMessage", "\(text)")
      let said = reply.errorParameters.problem ?? ""
      #expect(said.contains(problem), "\(text): \(said)")
    }
    try raw.sendBytes([0xFF, 0xFE, 0])
    #expect(try raw.receive().error == "io.trialwatch.InvalidMessage")
    #expect(try raw.getInfo().vendor == "trialwatch")
  }

  @Test func message_WithoutItsNULAtEndOfInput_GetsAnError() throws {
    let fixture = try ControlFixture()
    let raw = try fixture.client()
    try raw.sendBytes(Array(#"{"method":"org.varlink.service.GetInfo"}"#.utf8))
    shutdown(raw.fileDescriptor, Int32(SHUT_WR))
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(received.first?.error == "io.trialwatch.InvalidMessage")
    #expect(received.first?.errorParameters.problem?.contains("NUL") == true)
  }

  @Test func calls_SentBeforeTheClientStopsWriting_AreStillAnswered() throws {
    let fixture = try ControlFixture()
    let raw = try fixture.client()
    try raw.sendBytes(message("io.trialwatch.Trials.GetStatus"))
    shutdown(raw.fileDescriptor, Int32(SHUT_WR))
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(try received.first?.parameters(as: GetStatusReply.self).version == "1.2.3-test")
  }

  @Test func oversizedMessage_IsRefused_AndTheConnectionClosed() throws {
    var options = ControlServer.Options()
    options.connection.maximumMessageSize = 1 << 20
    let fixture = try ControlFixture(options: options)
    let raw = try fixture.client()
    let big =
      #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":""#
      + String(repeating: "x", count: (1 << 20) + 10) + "\"}}"
    // The server may stop reading part way; what matters is its reply.
    try? raw.sendBytes(Array(big.utf8) + [0])
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(received.first?.error == "io.trialwatch.MessageTooLarge")
    #expect(received.first?.errorParameters.limit == 1 << 20)
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test func errorsFound_WhileChangesRun_AreAnsweredAfterThemInOrder() throws {
    var options = ControlServer.Options()
    options.connection.maximumMessageSize = 4096
    let fixture = try ControlFixture(options: options, ids: [1])
    let raw = try fixture.client()
    fixture.holdEngine()
    var bytes = message("io.trialwatch.Trials.StartTrial", #"{"subject":"first"}"#)
    bytes += Array("{not json".utf8) + [0]
    bytes += Array(#"{"method":"io.trialwatch.Trials.GetTrial","pad":""#.utf8)
    bytes += Array(repeating: UInt8(ascii: "z"), count: 5000) + Array("\"}".utf8) + [0]
    try? raw.sendBytes(bytes)
    #expect(fixture.waitUntilReceived(1))
    fixture.releaseEngine()
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(
      received.map { $0.error ?? "ok" } == [
        "ok", "io.trialwatch.InvalidMessage", "io.trialwatch.MessageTooLarge",
      ])
    #expect(try #require(received.first).parameters(as: TrialReply.self).trial.subject == "first")
  }

  @Test func message_JustUnderTheLimit_IsAccepted() throws {
    var options = ControlServer.Options()
    options.connection.maximumMessageSize = 4096
    let fixture = try ControlFixture(options: options)
    let raw = try fixture.client()
    let prefix = #"{"method":"org.varlink.service.GetInfo","pad":""#
    let text = prefix + String(repeating: "y", count: 4096 - prefix.utf8.count - 2) + "\"}"
    #expect(text.utf8.count == 4096)
    try raw.sendBytes(Array(text.utf8) + [0])
    #expect(try raw.receive().parameters(as: GetInfoReply.self).vendor == "trialwatch")
  }

  @Test func message_ThatStallsHalfSent_IsAnsweredAndItsConnectionClosed() throws {
    var options = ControlServer.Options()
    options.connection.messageTimeout = .milliseconds(200)
    let fixture = try ControlFixture(options: options)
    let raw = try fixture.client()
    try raw.sendBytes(Array(#"{"method":"org.varlink"#.utf8))
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.map(\.error) == ["io.trialwatch.InvalidMessage"])
    #expect(received.first?.errorParameters.problem?.contains("not completed within 0.2 seconds") == true)
    #expect(fixture.logs.waitFor { $0.message.contains("stalled half-sent") }?.level == .notice)
  }

  // The idle clock runs in real time from the accept, and a client must send its first
  // message before it runs out: the timeouts here are long enough (2 s) that a busy machine's
  // pause between a client's connect and its first message is no reason to fail.
  @Test func idleConnection_IsClosed() throws {
    var options = ControlServer.Options()
    options.connection.idleTimeout = .seconds(2)
    let fixture = try ControlFixture(options: options)
    // The daemon's idle clock starts when it accepts, which can be before connect returns here.
    let started = DispatchTime.now()
    let idle = try fixture.client()
    #expect(readToEnd(idle.fileDescriptor, timeout: 30) == [])
    #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds >= 2_000_000_000)
    #expect(fixture.logs.waitFor { $0.message.contains("idle") } != nil)
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test(arguments: StoreKind.allCases)
  func watcher_IsNotClosedForBeingIdle(store: StoreKind) throws {
    var options = ControlServer.Options()
    options.connection.idleTimeout = .seconds(2)
    let fixture = try ControlFixture(store: store, options: options, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: .days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.watcher()
    // Another connection, idle for longer than the timeout, is closed meanwhile.
    let idle = try fixture.client()
    #expect(readToEnd(idle.fileDescriptor, timeout: 30) == [])
    fixture.advance(by: 86_400)
    let reply = try watcher.receive()
    #expect(try reply.parameters(as: WatchReply.self).event?.kind == .expiry)
  }

  @Test(arguments: StoreKind.allCases)
  func stopping_ClosesConnections_AndRemovesTheSocket(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let watcher = try fixture.watcher()
    #expect(fixture.stop())
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(!FileManager.default.fileExists(atPath: fixture.socketPath))
    #expect(fixture.server.watcherCount == 0)
    let error = try #require(throws: VarlinkClientError.self) {
      _ = try VarlinkClient(path: fixture.socketPath)
    }
    #expect(error.isUnreachable)
    #expect(error.description.contains(fixture.socketPath))
  }
}
