import Dispatch
import Foundation
import Synchronization
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// Watch over a real socket: a stream of the events taken, and how it ends.
@Suite struct WatchTests {
  @Test(arguments: StoreKind.allCases)
  func watch_StreamsTakenEvents(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(2), reminders: try ReminderSchedule([.days(1)])))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: Days(3), reminders: ReminderSchedule.none))

    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    let first = try watcher.receive()
    #expect(first.continues)
    #expect(try first.parameters(as: WatchReply.self).event == nil)
    #expect(fixture.server.watcherCount == 1)

    fixture.advance(by: 86_400)
    fixture.advance(by: 2 * 86_400)
    var events: [EventObject] = []
    for _ in 0..<3 {
      let reply = try watcher.receive()
      #expect(reply.continues)
      #expect(reply.error == nil)
      if let event = try reply.parameters(as: WatchReply.self).event { events.append(event) }
    }
    #expect(events.map(\.kind) == [.reminder, .expiry, .expiry])
    #expect(events.map(\.subject) == ["a", "a", "b"])
    #expect(events.map(\.state) == [.fired, .fired, .fired])
    #expect(events[2].lateness == nil)
    #expect(try client.getStatus().watchers == 1)
  }

  @Test func watch_WithoutMore_IsRefused() throws {
    let fixture = try ControlFixture()
    let error = remoteError { try fixture.client().call("io.trialwatch.Trials.Watch") }
    #expect(error?.name == "org.varlink.service.ExpectedMore")
    #expect(fixture.server.watcherCount == 0)
  }

  @Test func call_DuringWatch_ClosesTheConnection() throws {
    let fixture = try ControlFixture()
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    try watcher.sendBytes(message("org.varlink.service.GetInfo"))
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(fixture.logs.waitFor { $0.message.contains("sent another call") } != nil)
    #expect(eventually { fixture.server.watcherCount == 0 })
  }

  @Test(arguments: StoreKind.allCases)
  func watcher_ThatDisconnects_IsForgotten(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    #expect(fixture.server.watcherCount == 1)
    watcher.close()
    #expect(eventually { fixture.server.watcherCount == 0 })
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 1)
    #expect(try client.getStatus().watchers == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func slowWatcher_IsCutOff_WithoutSlowingTheEngine(store: StoreKind) throws {
    var options = ControlServer.Options()
    options.connection.watchBacklog = 8
    let fixture = try ControlFixture(store: store, options: options, ids: Array(1...3000))
    let client = try fixture.client()
    // Sent at once: the engine commits them in a few transactions rather than 3000.
    var bytes: [UInt8] = []
    for index in 1...3000 {
      bytes += message(
        "io.trialwatch.Trials.StartTrial", #"{"subject":"t\#(index)","duration":"1d","reminders":[]}"#)
    }
    try client.sendBytes(bytes)
    for _ in 1...3000 { #expect(try client.receive().error == nil) }
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    // The watcher now reads nothing while 3000 events fire.
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 3000)
    let warning = fixture.logs.waitFor { $0.message.contains("fell behind") }
    #expect(warning?.level == .warning)
    #expect(eventually { fixture.server.watcherCount == 0 })
    // What the socket already held is still readable, then the stream ends.
    let rest = readToEnd(watcher.fileDescriptor)
    let received = try replies(in: rest ?? [])
    #expect(rest != nil)
    #expect(received.count < 3000)
    #expect(received.allSatisfy { $0.continues })
    // Others are served.
    #expect(try client.getStatus().trials.expired == 3000)
  }

  @Test(arguments: StoreKind.allCases)
  func watches_EndedByTheDaemon_CloseTheirConnections(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    fixture.finishWatchers()
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(eventually { fixture.server.watcherCount == 0 })
  }
}
