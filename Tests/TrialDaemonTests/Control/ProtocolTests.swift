import Dispatch
import Foundation
import Synchronization
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// The Varlink protocol itself: introspection, oneway, pipelining, streaming, and bad input.
@Suite struct ProtocolTests {
  @Test func getInfoListsTheInterfaces() throws {
    let fixture = try ServerFixture()
    let info = try fixture.client().getInfo()
    #expect(info.vendor == "trialwatch")
    #expect(info.product == "trialwatchd")
    #expect(info.version == "1.2.3-test")
    #expect(info.interfaces == ["org.varlink.service", "io.trialwatch", "io.trialwatch.Trials"])
  }

  @Test func getInterfaceDescriptionServesTheFilesVerbatim() throws {
    let fixture = try ServerFixture()
    let client = try fixture.client()
    for name in VarlinkInterfaces.all {
      let description = try client.interfaceDescription(name)
      #expect(description == VarlinkInterfaces.descriptions[name])
      #expect(description.contains("interface \(name)\n"))
    }
    let missing = remoteError { _ = try client.interfaceDescription("com.example.Nothing") }
    #expect(missing?.name == "org.varlink.service.InterfaceNotFound")
    #expect(missing?.parameters["interface"] == "com.example.Nothing")
  }

  @Test func unknownInterfacesAndMethods() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    let interface = remoteError { _ = try raw.call("com.example.Thing.Do") }
    #expect(interface?.name == "org.varlink.service.InterfaceNotFound")
    #expect(interface?.parameters["interface"] == "com.example.Thing")
    let method = remoteError { _ = try raw.call("io.trialwatch.Trials.DeleteEverything") }
    #expect(method?.name == "org.varlink.service.MethodNotFound")
    #expect(method?.parameters["method"] == "io.trialwatch.Trials.DeleteEverything")
    let serviceMethod = remoteError { _ = try raw.call("org.varlink.service.Reboot") }
    #expect(serviceMethod?.name == "org.varlink.service.MethodNotFound")
    let errorsOnly = remoteError { _ = try raw.call("io.trialwatch.TrialNotFound") }
    #expect(errorsOnly?.name == "org.varlink.service.MethodNotFound")
    let upgrade = try {
      try raw.send(VarlinkCall(method: "org.varlink.service.GetInfo", upgrade: true))
      return try raw.receive()
    }()
    #expect(upgrade.error == "org.varlink.service.InvalidParameter")
    #expect(upgrade.parameters["parameter"] == "upgrade")
  }

  @Test(arguments: BackendKind.allCases)
  func onewayCallsAreCarriedOutWithoutAReply(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend, ids: [0x11, 0x12])
    let raw = try fixture.raw()
    try raw.oneway("io.trialwatch.Trials.StartTrial", ["subject": "quiet"])
    try raw.oneway("io.trialwatch.Trials.GetTrial", ["id": "nonsense"])
    try raw.oneway("io.trialwatch.Trials.StartTrial", ["subject": "quiet"])
    try raw.oneway("io.trialwatch.Trials.EndTrial", ["id": "0000000000000099", "outcome": "converted"])
    // The next reply on the connection answers this call: the oneway calls sent none.
    let reply = try raw.call("io.trialwatch.Trials.GetTrial", ["subject": "quiet"])
    #expect(try TrialReply(json: reply).trial.id == TrialID(0x11))
    try raw.oneway("io.trialwatch.Trials.ExtendTrial", ["id": "0000000000000011", "by": "2d"])
    let extended = try TrialReply(json: raw.call("io.trialwatch.Trials.GetTrial", ["id": "0000000000000011"]))
    #expect(extended.trial.revision == 2)
    #expect(extended.trial.endsAt == ServerFixture.start.addingTimeInterval(7 * 86_400))
    #expect(try fixture.client().listTrials().trials.map(\.id) == [TrialID(0x11)])
    if backend == .engine {
      // Carried out for real: in the store.
      #expect(try fixture.engine.storedTrials().map(\.revision) == [2])
    }
  }

  @Test(arguments: BackendKind.allCases)
  func pipelinedCallsAreAnsweredInOrder(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend, ids: [1, 2, 3])
    let raw = try fixture.raw()
    var bytes: [UInt8] = []
    for subject in ["p1", "p2", "p3"] {
      bytes += VarlinkCall(
        method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": .string(subject)]
      ).encoded()
    }
    bytes += VarlinkCall(method: "org.varlink.service.GetInfo").encoded()
    bytes += VarlinkCall(method: "io.trialwatch.Trials.GetTrial", parameters: ["subject": "p2"]).encoded()
    try raw.sendBytes(bytes)
    var subjects: [String] = []
    for _ in 0..<3 { subjects.append(try TrialReply(json: raw.receive().parameters).trial.subject) }
    #expect(subjects == ["p1", "p2", "p3"])
    #expect(try raw.receive().parameters["product"] == "trialwatchd")
    #expect(try TrialReply(json: raw.receive().parameters).trial.id == TrialID(2))
  }

  // `answersInline` shapes the in-memory backend; the engine always answers reads inline.
  @Test(arguments: [(BackendKind.inMemory, false), (.inMemory, true), (.engine, true)])
  func manyPipelinedCallsAreAnsweredInOrder(backend: BackendKind, answersInline: Bool) throws {
    let fixture = try ServerFixture(backend: backend, ids: [1], answersInline: answersInline)
    let raw = try fixture.raw()
    _ = try raw.call("io.trialwatch.Trials.StartTrial", ["subject": "only"])
    var bytes: [UInt8] = []
    for index in 0..<5000 {
      let parameters: JSONObject =
        index % 2 == 0 ? ["id": "1"] : ["id": .string(String(index + 0x10000, radix: 16))]
      bytes += VarlinkCall(method: "io.trialwatch.Trials.GetTrial", parameters: parameters).encoded()
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
        #expect(reply.parameters["id"]?.stringValue?.hasSuffix(String(index + 0x10000, radix: 16)) == true)
      }
    }
    if answersInline {
      #expect(ControlConnection.inlineCompletions.load(ordering: .relaxed) - inlineBefore >= 5000)
    }
  }

  @Test(arguments: BackendKind.allCases)
  func pipelinedChanges_RunTogether_AReadAfterThemWaits_AndRepliesKeepTheirOrder(backend: BackendKind)
    throws
  {
    let fixture = try ServerFixture(backend: backend, ids: [1, 2, 3, 4])
    let raw = try fixture.raw()
    fixture.holdBackend()
    var bytes: [UInt8] = []
    for subject in ["a", "b", "a"] {
      bytes += VarlinkCall(
        method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": .string(subject)]
      )
      .encoded()
    }
    bytes += VarlinkCall(method: "io.trialwatch.Trials.GetTrial", parameters: ["subject": "b"]).encoded()
    bytes += VarlinkCall(method: "org.varlink.service.GetInfo").encoded()
    try raw.sendBytes(bytes)
    // The three changes reach the backend together; the read waits for them.
    #expect(fixture.waitUntilReceived(3))
    #expect(fixture.callsReceived == 3)
    fixture.releaseBackend()
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "a")
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "b")
    #expect(try raw.receive().error == "io.trialwatch.SubjectAlreadyActive")
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "b", "the read sees the changes")
    #expect(try raw.receive().parameters["product"]?.stringValue == "trialwatchd")
    #expect(fixture.callsReceived == 4)
    if backend == .engine {
      #expect(fixture.engine.commits == 1, "the three changes are one transaction")
    }
  }

  @Test(arguments: BackendKind.allCases)
  func callsOnOtherConnectionsGoOnWhileTheBackendIsBusy(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend, ids: [1])
    let slow = try fixture.raw()
    fixture.holdBackend()
    try slow.send(VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": "held"]))
    // Introspection does not need the backend, so another client is answered at once.
    let info = try fixture.client().getInfo()
    #expect(info.product == "trialwatchd")
    fixture.releaseBackend()
    #expect(try TrialReply(json: slow.receive().parameters).trial.subject == "held")
  }

  /// Group commit: changes from many clients that reach the engine while it is busy are
  /// committed together, in one transaction, and each client gets its own answer.
  /// Engine only: the in-memory backend commits each change alone.
  @Test func changesFromManyClients_ReachingABusyEngine_AreCommittedTogether() throws {
    let fixture = try ServerFixture(backend: .engine, ids: Array(1...8))
    let clients = try (0..<8).map { _ in try fixture.raw() }
    fixture.holdBackend()
    // The last client asks for a subject the first one also asks for.
    for (index, client) in clients.enumerated() {
      let subject = "s\(index % 7)"
      try client.send(
        VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": .string(subject)]))
    }
    #expect(fixture.waitUntilReceived(8))
    fixture.releaseBackend()
    let replies = try clients.map { try $0.receive() }
    #expect(fixture.engine.commits == 1)

    let started = try replies.filter { $0.error == nil }.map { try TrialReply(json: $0.parameters).trial }
    let refused = replies.filter { $0.error != nil }
    #expect(started.count == 7)
    #expect(Set(started.map(\.subject)) == Set((0..<7).map { "s\($0)" }))
    #expect(refused.map(\.error) == ["io.trialwatch.SubjectAlreadyActive"])
    #expect(refused.first?.parameters["subject"] == "s0")
    let winner = started.first { $0.subject == "s0" }
    #expect(refused.first?.parameters["id"]?.stringValue == winner?.id.description)
    let stored = try fixture.engine.storedTrials()
    #expect(stored.map(\.id) == started.map(\.id).sorted())
    #expect(stored.allSatisfy { $0.state == .active && $0.revision == 1 })
  }

  /// Many clients changing trials at the same moment, on their own threads: every change is
  /// answered and stored, however the engine groups them.
  @Test func concurrentClients_AllStartTrials_AndEveryTrialIsStored() throws {
    let fixture = try ServerFixture(backend: .engine)
    let clientCount = 6
    let perClient = 20
    let path = fixture.socketPath
    let results = Mutex<[Result<[TrialID], VarlinkClientError>]>([])
    DispatchQueue.concurrentPerform(iterations: clientCount) { index in
      let result = Result { () throws(VarlinkClientError) -> [TrialID] in
        let client = try TrialsClient(path: path)
        client.connection.setReceiveTimeout(seconds: 10)
        var ids: [TrialID] = []
        for number in 0..<perClient {
          let parameters = StartTrialParameters(subject: "c\(index)-\(number)", duration: Days(1))
          ids.append(try client.startTrial(parameters).id)
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
    let status = try fixture.client().getStatus().status
    #expect(status.trials.active == clientCount * perClient)
    #expect(status.pendingEvents == clientCount * perClient)
  }

  @Test(arguments: BackendKind.allCases)
  func watchStreamsTakenEvents(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend, ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(2), reminders: try ReminderSchedule([.days(1)])))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: Days(3), reminders: ReminderSchedule.none))

    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    let first = try watcher.receive()
    #expect(first.continues)
    #expect(first.parameters.isEmpty)
    #expect(fixture.server.watcherCount == 1)

    fixture.advance(by: 86_400)
    try fixture.fireDue()
    fixture.advance(by: 2 * 86_400)
    try fixture.fireDue()
    var events: [EventObject] = []
    for _ in 0..<3 {
      let reply = try watcher.receive()
      #expect(reply.continues)
      #expect(reply.error == nil)
      if let event = try WatchReply(json: reply.parameters).event { events.append(event) }
    }
    #expect(events.map(\.kind) == [.reminder, .expiry, .expiry])
    #expect(events.map(\.subject) == ["a", "a", "b"])
    #expect(events.map(\.state) == [.fired, .fired, .fired])
    #expect(events[2].lateness == nil)
    #expect(try client.getStatus().watchers == 1)
  }

  @Test func watchNeedsMore() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    let error = remoteError { _ = try raw.call("io.trialwatch.Trials.Watch") }
    #expect(error?.name == "org.varlink.service.ExpectedMore")
    #expect(fixture.watcherCount == 0)
  }

  @Test func aCallDuringWatchClosesTheConnection() throws {
    let fixture = try ServerFixture()
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    try watcher.send(VarlinkCall(method: "org.varlink.service.GetInfo"))
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(fixture.logs.waitFor { $0.message.contains("sent another call") } != nil)
    #expect(eventually { fixture.watcherCount == 0 })
  }

  @Test(arguments: BackendKind.allCases)
  func aWatcherThatDisconnectsIsForgotten(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    #expect(fixture.watcherCount == 1)
    watcher.close()
    #expect(eventually { fixture.watcherCount == 0 && fixture.server.watcherCount == 0 })
    fixture.advance(by: 86_400)
    #expect(try fixture.fireDue().count == 1)
    #expect(try client.getStatus().watchers == 0)
  }

  @Test(arguments: BackendKind.allCases)
  func aSlowWatcherIsCutOffWithoutSlowingTheBackend(backend: BackendKind) throws {
    var options = ControlServer.Options()
    options.watchBacklog = 8
    let fixture = try ServerFixture(backend: backend, options: options, ids: Array(1...3000))
    let client = try fixture.client()
    // Sent at once: the engine commits them in a few transactions rather than 3000.
    var bytes: [UInt8] = []
    for index in 1...3000 {
      let parameters: JSONObject = ["subject": .string("t\(index)"), "duration": "1d", "reminders": []]
      bytes += VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: parameters).encoded()
    }
    try client.connection.sendBytes(bytes)
    for _ in 1...3000 { #expect(try client.connection.receive().error == nil) }
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    // The watcher now reads nothing while 3000 events fire.
    fixture.advance(by: 86_400)
    #expect(try fixture.fireDue().count == 3000)
    let warning = fixture.logs.waitFor { $0.message.contains("fell behind") }
    #expect(warning?.level == .warning)
    #expect(eventually { fixture.server.watcherCount == 0 && fixture.watcherCount == 0 })
    // What the socket already held is still readable, then the stream ends.
    let rest = readToEnd(watcher.fileDescriptor)
    let received = try replies(in: rest ?? [])
    #expect(rest != nil)
    #expect(received.count < 3000)
    #expect(received.allSatisfy { $0.continues })
    // Others are served.
    #expect(try client.getStatus().status.trials.expired == 3000)
  }

  @Test(arguments: BackendKind.allCases)
  func theBackendCanEndWatches(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend)
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    fixture.finishWatchers()
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(eventually { fixture.server.watcherCount == 0 })
  }

  @Test func malformedMessagesGetAnErrorAndTheConnectionCarriesOn() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
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
      let said = reply.parameters["problem"]?.stringValue ?? ""
      #expect(said.contains(problem), "\(text): \(said)")
    }
    try raw.sendBytes([0xFF, 0xFE, 0])
    #expect(try raw.receive().error == "io.trialwatch.InvalidMessage")
    #expect(try raw.call("org.varlink.service.GetInfo")["vendor"] == "trialwatch")
  }

  @Test func aMessageWithoutItsNULAtEndOfInputGetsAnError() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    try raw.sendBytes(Array(#"{"method":"org.varlink.service.GetInfo"}"#.utf8))
    shutdown(raw.fileDescriptor, Int32(SHUT_WR))
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(received.first?.error == "io.trialwatch.InvalidMessage")
    #expect(received.first?.parameters["problem"]?.stringValue?.contains("NUL") == true)
  }

  @Test func callsSentBeforeTheClientStopsWritingAreStillAnswered() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    try raw.send(VarlinkCall(method: "io.trialwatch.Trials.GetStatus"))
    shutdown(raw.fileDescriptor, Int32(SHUT_WR))
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(received.first?.parameters["version"] == "1.2.3-test")
  }

  @Test func anOversizedMessageIsRefusedAndTheConnectionClosed() throws {
    var options = ControlServer.Options()
    options.maximumMessageSize = 1 << 20
    let fixture = try ServerFixture(options: options)
    let raw = try fixture.raw()
    let big =
      #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":""#
      + String(repeating: "x", count: (1 << 20) + 10) + "\"}}"
    // The server may stop reading part way; what matters is its reply.
    try? raw.sendBytes(Array(big.utf8) + [0])
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(received.count == 1)
    #expect(received.first?.error == "io.trialwatch.MessageTooLarge")
    #expect(received.first?.parameters["limit"] == .int(1 << 20))
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test func errorsFound_WhileChangesRun_AreAnsweredAfterThem_InOrder() throws {
    var options = ControlServer.Options()
    options.maximumMessageSize = 4096
    let fixture = try ServerFixture(options: options, ids: [1])
    let raw = try fixture.raw()
    fixture.holdBackend()
    var bytes = VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": "first"])
      .encoded()
    bytes += Array("{not json".utf8) + [0]
    bytes += Array(#"{"method":"io.trialwatch.Trials.GetTrial","pad":""#.utf8)
    bytes += Array(repeating: UInt8(ascii: "z"), count: 5000) + Array("\"}".utf8) + [0]
    try? raw.sendBytes(bytes)
    #expect(fixture.waitUntilReceived(1))
    fixture.releaseBackend()
    let received = try replies(in: readToEnd(raw.fileDescriptor) ?? [])
    #expect(
      received.map { $0.error ?? "ok" } == [
        "ok", "io.trialwatch.InvalidMessage", "io.trialwatch.MessageTooLarge",
      ])
    #expect(try TrialReply(json: try #require(received.first).parameters).trial.subject == "first")
  }

  @Test func aMessageJustUnderTheLimitIsAccepted() throws {
    var options = ControlServer.Options()
    options.maximumMessageSize = 4096
    let fixture = try ServerFixture(options: options)
    let raw = try fixture.raw()
    let prefix = #"{"method":"org.varlink.service.GetInfo","pad":""#
    let text = prefix + String(repeating: "y", count: 4096 - prefix.utf8.count - 2) + "\"}"
    #expect(text.utf8.count == 4096)
    try raw.sendBytes(Array(text.utf8) + [0])
    #expect(try raw.receive().parameters["vendor"] == "trialwatch")
  }

  @Test func anIdleConnectionIsClosed() throws {
    var options = ControlServer.Options()
    options.idleTimeout = .milliseconds(200)
    let fixture = try ServerFixture(options: options)
    let idle = try fixture.raw()
    let started = Date()
    #expect(readToEnd(idle.fileDescriptor, timeout: 10) == [])
    #expect(Date().timeIntervalSince(started) >= 0.2)
    #expect(fixture.logs.waitFor { $0.message.contains("idle") } != nil)
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test(arguments: BackendKind.allCases)
  func aWatcherIsNotClosedForBeingIdle(backend: BackendKind) throws {
    var options = ControlServer.Options()
    options.idleTimeout = .milliseconds(100)
    let fixture = try ServerFixture(backend: backend, options: options, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    // Another connection, idle for longer than the timeout, is closed meanwhile.
    let idle = try fixture.raw()
    #expect(readToEnd(idle.fileDescriptor) == [])
    fixture.advance(by: 86_400)
    try fixture.fireDue()
    let reply = try watcher.receive()
    #expect(try WatchReply(json: reply.parameters).event?.kind == .expiry)
  }

  @Test func connectionsBeyondTheLimitAreRefused() throws {
    var options = ControlServer.Options()
    options.maximumConnections = 2
    let fixture = try ServerFixture(options: options)
    let first = try fixture.client()
    let second = try fixture.client()
    #expect(try first.getInfo().vendor == "trialwatch")
    #expect(try second.getInfo().vendor == "trialwatch")
    let third = try fixture.raw()
    let received = try replies(in: readToEnd(third.fileDescriptor) ?? [])
    #expect(received.first?.error == "io.trialwatch.TooManyConnections")
    #expect(received.first?.parameters["limit"] == 2)
    #expect(fixture.logs.waitFor { $0.message.contains("too many connections") }?.level == .warning)
    first.connection.close()
    #expect(eventually { fixture.server.connectionCount == 1 })
    #expect(try fixture.client().getInfo().vendor == "trialwatch")
  }

  @Test(arguments: BackendKind.allCases)
  func stoppingClosesConnectionsAndRemovesTheSocket(backend: BackendKind) throws {
    let fixture = try ServerFixture(backend: backend)
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    #expect(fixture.stop())
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(!FileManager.default.fileExists(atPath: fixture.socketPath))
    #expect(fixture.watcherCount == 0)
    let error = try #require(throws: VarlinkClientError.self) {
      _ = try VarlinkClient(path: fixture.socketPath)
    }
    #expect(error.isUnreachable)
    #expect(error.description.contains(fixture.socketPath))
  }
}
