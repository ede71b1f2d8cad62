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

extension ControlServer.Options {
  /// The defaults, but for a Watch's backlog of `events`.
  static func watchBacklog(_ events: Int) -> Self {
    var options = Self()
    options.connection.watchBacklog = events
    return options
  }
}

/// Watch over a real socket: a stream of the events taken, and how it ends.
@Suite struct WatchTests {
  @Test(arguments: StoreKind.allCases)
  func watch_StreamsTakenEvents(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial("a", days: 2, reminders: [1])
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: .days(3), reminders: ReminderSchedule.none))

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
    let watcher = try fixture.watcher()
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
      StartTrialParameters(subject: "a", duration: .days(1), reminders: ReminderSchedule.none))
    let watcher = try fixture.watcher()
    #expect(fixture.server.watcherCount == 1)
    watcher.close()
    #expect(eventually { fixture.server.watcherCount == 0 })
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 1)
    #expect(try client.getStatus().watchers == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func slowWatcher_CatchesUpFromTheLog_WithoutSlowingTheEngine(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, options: .watchBacklog(8), ids: Array(1...3001))
    let client = try fixture.client()
    // Sent at once: the engine commits them in a few transactions rather than 3000.
    var bytes: [UInt8] = []
    for index in 1...3000 {
      bytes += message(
        "io.trialwatch.Trials.StartTrial", #"{"subject":"t\#(index)","duration":"1d","reminders":[]}"#)
    }
    try client.sendBytes(bytes)
    for _ in 1...3000 { #expect(try client.receive().error == nil) }
    let watcher = try fixture.watcher()
    // The watcher reads nothing while 3000 events fire: the engine is not held up, others
    // are served, and the watcher stays.
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().count == 3000)
    #expect(try client.getStatus().trials.expired == 3000)
    #expect(fixture.server.watcherCount == 1)
    // It then reads every event, each once, in log order, as its socket drains.
    var cursors: [EventCursor] = []
    while cursors.count < 3000 {
      let reply = try watcher.receive()
      #expect(reply.continues && reply.error == nil)
      if let cursor = try reply.parameters(as: WatchReply.self).event?.cursor { cursors.append(cursor) }
    }
    #expect(cursors == (1...3000).map { EventCursor(UInt64($0)) })
    // Caught up, it is live again.
    _ = try client.startTrial(
      StartTrialParameters(subject: "late", duration: .days(1), reminders: ReminderSchedule.none))
    fixture.advance(by: 86_400)
    #expect(try watcher.receive().parameters(as: WatchReply.self).event?.cursor == EventCursor(3001))
    #expect(fixture.logs.all.allSatisfy { !$0.message.contains("fell behind") })
  }

  @Test(arguments: StoreKind.allCases)
  func watches_EndedByTheDaemon_CloseTheirConnections(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let watcher = try fixture.watcher()
    fixture.finishWatchers()
    #expect(readToEnd(watcher.fileDescriptor) == [])
    #expect(eventually { fixture.server.watcherCount == 0 })
  }
}
