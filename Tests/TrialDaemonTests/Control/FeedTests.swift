import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// Watch with a cursor and durable consumers, over a real socket, in virtual time.
@Suite struct FeedTests {
  /// Starts `count` one-day trials without reminders, sent at once.
  private func startTrials(
    _ client: VarlinkClient, count: Int, prefix: String = "t", duration: (Int) -> String = { _ in "1d" }
  ) throws {
    var bytes: [UInt8] = []
    for index in 1...count {
      bytes += message(
        "io.trialwatch.Trials.StartTrial",
        #"{"subject":"\#(prefix)\#(index)","duration":"\#(duration(index))","reminders":[]}"#)
    }
    try client.sendBytes(bytes)
    for _ in 1...count { #expect(try client.receive().error == nil) }
  }

  /// Reads stream replies until `count` events came; returns their cursors.
  private func cursors(from watcher: VarlinkClient, count: Int) throws -> [EventCursor] {
    var cursors: [EventCursor] = []
    while cursors.count < count {
      let reply = try watcher.receive()
      #expect(reply.continues && reply.error == nil)
      if let cursor = try reply.parameters(as: WatchReply.self).event?.cursor { cursors.append(cursor) }
    }
    return cursors
  }

  private func range(_ bounds: ClosedRange<UInt64>) -> [EventCursor] { bounds.map { EventCursor($0) } }

  @Test(arguments: StoreKind.allCases)
  func watchAfterACursor_ReplaysTheLogThenGoesLive_WithNoGapAndNoRepeat(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: Array(1...8))
    let client = try fixture.client()
    try startTrials(client, count: 5)
    fixture.advance(by: 86_400)
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"0000000000000002"}"#, more: true))
    #expect(try watcher.receive().parameters(as: WatchReply.self).event == nil)
    #expect(try cursors(from: watcher, count: 3) == range(3...5))
    try startTrials(client, count: 3, prefix: "u")
    fixture.advance(by: 86_400)
    #expect(try cursors(from: watcher, count: 3) == range(6...8))
  }

  /// The seam: events keep firing while a Watch replays from the start; every one arrives
  /// once, in order, whether it came from the log or live.
  @Test(arguments: StoreKind.allCases)
  func watchAfter_WhileEventsFire_MissesNoneAtTheSeam(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, options: .watchBacklog(16), ids: Array(1...600))
    let client = try fixture.client()
    // One falls due each second, from a day on.
    try startTrials(client, count: 600) { "\(86_400 + $0)s" }
    // A third fires, then the watch starts from the origin, then more fire in steps while
    // the watcher reads only now and then, then the rest at once.
    fixture.advance(by: 86_400 + 200)
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"0000000000000000"}"#, more: true))
    _ = try watcher.receive()
    var received = try cursors(from: watcher, count: 10)
    for _ in 0..<20 {
      fixture.advance(by: 10)
      received += try cursors(from: watcher, count: 5)
    }
    fixture.advance(by: 1_000)
    received += try cursors(from: watcher, count: 600 - received.count)
    #expect(received == range(1...600))
  }

  @Test func watchAfter_ABadCursor_IsRefusedNamingWhy() throws {
    let fixture = try ControlFixture(ids: [1])
    let client = try fixture.client()
    try startTrials(client, count: 1)
    fixture.advance(by: 86_400)

    let malformed = try fixture.client()
    try malformed.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"xyz"}"#, more: true))
    let refused = try malformed.receive()
    #expect(refused.error == "org.varlink.service.InvalidParameter")
    #expect(refused.errorParameters.parameter == "after")

    let ahead = try fixture.client()
    try ahead.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"0000000000000009"}"#, more: true))
    let reply = try ahead.receive()
    #expect(reply.error == "io.trialwatch.CursorNotFound")
    #expect(reply.errorParameters.cursor == "0000000000000009")
    #expect(reply.errorParameters.last == "0000000000000001")
    #expect(readToEnd(ahead.fileDescriptor) == [], "the connection closes after the error")
    #expect(eventually { fixture.server.watcherCount == 0 })
  }

  @Test func prunedCursor_IsTheErrorOfItsOwn_NamingTheOldestKept() throws {
    let error = ControlError(
      TrialError(.cursorPruned(cursor: EventCursor(3), resumeAfter: EventCursor(9), oldest: EventCursor(10))))
    #expect(error.name == "io.trialwatch.EventsPruned")
    #expect(
      error.parameters.oldest == "000000000000000a" && error.parameters.resumeAfter == "0000000000000009")
    #expect(error.description.contains("oldest kept is 000000000000000a"))
  }

  @Test(arguments: StoreKind.allCases)
  func consumers_OverTheSocket_AreKeptAcknowledgedListedAndRemoved(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3])
    let client = try fixture.client()
    try startTrials(client, count: 2)
    fixture.advance(by: 86_400)
    let created = try client.call(Trials.createConsumer, CreateConsumerParameters(name: "mail")).consumer
    #expect(created.acknowledged == EventCursor(2) && created.lag == 0)
    let early = try client.call(
      Trials.createConsumer, CreateConsumerParameters(name: "audit", after: .origin)
    ).consumer
    #expect(early.lag == 2)
    #expect(throws: VarlinkClientError.self) {
      try client.call(Trials.createConsumer, CreateConsumerParameters(name: "mail"))
    }
    let acked = try client.call(
      Trials.acknowledgeEvent, AcknowledgeEventParameters(consumer: "audit", cursor: EventCursor(1))
    ).consumer
    #expect(acked.acknowledged == EventCursor(1) && acked.lag == 1 && acked.acknowledgedAt == fixture.now)
    let back = try client.call(
      Trials.acknowledgeEvent, AcknowledgeEventParameters(consumer: "audit", cursor: .origin)
    ).consumer
    #expect(back.acknowledged == EventCursor(1), "never moves back")
    let listed = try client.call(Trials.listConsumers).consumers
    #expect(listed.map(\.name) == ["audit", "mail"])
    let log = try client.call(Trials.getEventLog).log
    #expect(
      log.last == EventCursor(2) && log.oldest == EventCursor(1) && log.start == .origin && log.events == 2)
    _ = try client.call(Trials.removeConsumer, ConsumerNameParameters(name: "audit"))
    do {
      _ = try client.call(Trials.getConsumer, ConsumerNameParameters(name: "audit"))
      Issue.record("a removed consumer is gone")
    } catch {
      #expect(error.remoteError?.name == "io.trialwatch.ConsumerNotFound")
    }
  }
}
