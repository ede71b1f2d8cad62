import Foundation
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

  @Test func onewayCallsAreCarriedOutWithoutAReply() throws {
    let fixture = try ServerFixture(ids: [0x11])
    let raw = try fixture.raw()
    try raw.oneway("io.trialwatch.Trials.StartTrial", ["subject": "quiet"])
    try raw.oneway("io.trialwatch.Trials.GetTrial", ["id": "nonsense"])
    // The next reply on the connection answers this call: the oneway calls sent none.
    let reply = try raw.call("io.trialwatch.Trials.GetTrial", ["subject": "quiet"])
    #expect(try TrialReply(json: reply).trial.id == TrialID(0x11))
  }

  @Test func pipelinedCallsAreAnsweredInOrder() throws {
    let fixture = try ServerFixture(ids: [1, 2, 3])
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

  @Test(arguments: [false, true])
  func manyPipelinedCallsAreAnsweredInOrder(answersInline: Bool) throws {
    let fixture = try ServerFixture(ids: [1], answersInline: answersInline)
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

  @Test func pipelinedChanges_RunTogether_AReadAfterThemWaits_AndRepliesKeepTheirOrder() throws {
    let fixture = try ServerFixture(ids: [1, 2, 3, 4])
    let raw = try fixture.raw()
    fixture.backend.pause()
    var bytes: [UInt8] = []
    for subject in ["a", "b", "a"] {
      bytes += VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": .string(subject)])
        .encoded()
    }
    bytes += VarlinkCall(method: "io.trialwatch.Trials.GetTrial", parameters: ["subject": "b"]).encoded()
    bytes += VarlinkCall(method: "org.varlink.service.GetInfo").encoded()
    try raw.sendBytes(bytes)
    // The three changes reach the backend together; the read waits for them.
    #expect(fixture.backend.waitUntilReceived(3))
    #expect(fixture.backend.callsReceived == 3)
    fixture.backend.resume()
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "a")
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "b")
    #expect(try raw.receive().error == "io.trialwatch.SubjectAlreadyActive")
    #expect(try TrialReply(json: raw.receive().parameters).trial.subject == "b", "the read sees the changes")
    #expect(try raw.receive().parameters["product"]?.stringValue == "trialwatchd")
    #expect(fixture.backend.callsReceived == 4)
  }

  @Test func callsOnOtherConnectionsGoOnWhileTheBackendIsBusy() throws {
    let fixture = try ServerFixture(ids: [1])
    let slow = try fixture.raw()
    fixture.backend.pause()
    try slow.send(VarlinkCall(method: "io.trialwatch.Trials.StartTrial", parameters: ["subject": "held"]))
    // Introspection does not need the backend, so another client is answered at once.
    let info = try fixture.client().getInfo()
    #expect(info.product == "trialwatchd")
    fixture.backend.resume()
    #expect(try TrialReply(json: slow.receive().parameters).trial.subject == "held")
  }

  @Test func watchStreamsTakenEvents() throws {
    let fixture = try ServerFixture(ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(2), reminders: try ReminderSchedule([Days(1)])))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: Days(3), reminders: ReminderSchedule.none))

    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    let first = try watcher.receive()
    #expect(first.continues)
    #expect(first.parameters.isEmpty)
    #expect(fixture.server.watcherCount == 1)

    fixture.clock.advance(by: 86_400)
    try fixture.backend.fireDue()
    fixture.clock.advance(by: 2 * 86_400)
    try fixture.backend.fireDue()
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
    #expect(fixture.backend.watcherCount == 0)
  }

  @Test func aCallDuringWatchClosesTheConnection() throws {
    let fixture = try ServerFixture()
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    try watcher.send(VarlinkCall(method: "org.varlink.service.GetInfo"))
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(fixture.logs.waitFor { $0.message.contains("sent another call") } != nil)
    #expect(eventually { fixture.backend.watcherCount == 0 })
  }

  @Test func aWatcherThatDisconnectsIsForgotten() throws {
    let fixture = try ServerFixture(ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    #expect(fixture.backend.watcherCount == 1)
    watcher.close()
    #expect(eventually { fixture.backend.watcherCount == 0 && fixture.server.watcherCount == 0 })
    fixture.clock.advance(by: 86_400)
    #expect(try fixture.backend.fireDue().count == 1)
    #expect(try client.getStatus().watchers == 0)
  }

  @Test func aSlowWatcherIsCutOffWithoutSlowingTheBackend() throws {
    var options = ControlServer.Options()
    options.watchBacklog = 8
    let fixture = try ServerFixture(options: options, ids: Array(1...3000))
    let client = try fixture.client()
    for index in 1...3000 {
      _ = try client.startTrial(
        StartTrialParameters(subject: "t\(index)", duration: Days(1), reminders: ReminderSchedule.none))
    }
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    // The watcher now reads nothing while 3000 events fire.
    fixture.clock.advance(by: 86_400)
    #expect(try fixture.backend.fireDue().count == 3000)
    let warning = fixture.logs.waitFor { $0.message.contains("fell behind") }
    #expect(warning?.level == .warning)
    #expect(eventually { fixture.server.watcherCount == 0 && fixture.backend.watcherCount == 0 })
    // What the socket already held is still readable, then the stream ends.
    let rest = readToEnd(watcher.fileDescriptor)
    let received = try replies(in: rest ?? [])
    #expect(rest != nil)
    #expect(received.count < 3000)
    #expect(received.allSatisfy { $0.continues })
    // Others are served.
    #expect(try client.getStatus().status.trials.expired == 3000)
  }

  @Test func theBackendCanEndWatches() throws {
    let fixture = try ServerFixture()
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    fixture.backend.finishWatchers()
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

  @Test func aWatcherIsNotClosedForBeingIdle() throws {
    var options = ControlServer.Options()
    options.idleTimeout = .milliseconds(100)
    let fixture = try ServerFixture(options: options, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    // Another connection, idle for longer than the timeout, is closed meanwhile.
    let idle = try fixture.raw()
    #expect(readToEnd(idle.fileDescriptor) == [])
    fixture.clock.advance(by: 86_400)
    try fixture.backend.fireDue()
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

  @Test func stoppingClosesConnectionsAndRemovesTheSocket() throws {
    let fixture = try ServerFixture()
    let watcher = try fixture.raw()
    try watcher.send(VarlinkCall(method: "io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    #expect(fixture.stop())
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(!FileManager.default.fileExists(atPath: fixture.socketPath))
    #expect(fixture.backend.watcherCount == 0)
    let error = try #require(throws: VarlinkClientError.self) {
      _ = try VarlinkClient(path: fixture.socketPath)
    }
    #expect(error.isUnreachable)
    #expect(error.description.contains(fixture.socketPath))
  }
}
