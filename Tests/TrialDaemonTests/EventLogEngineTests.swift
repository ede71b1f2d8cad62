import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Records what the engine hands its log observers.
final class SpyLogObserver: EventLogObserver {
  var batches: [[LoggedEvent]] = []
  var cursors: [EventCursor] { batches.flatMap { $0.map(\.cursor) } }

  func eventsLogged(_ events: [LoggedEvent]) { batches.append(events) }
}

/// The engine's side of the event log, in virtual time: every taken event logged once and
/// handed over in order; pruning by retention, held by consumers, capped.
@Suite struct EventLogEngineTests {
  private func harness(retention: EventRetention = EventRetention(), batch: Int = 1_000, ids: [UInt64])
    -> (Harness, SpyLogObserver)
  {
    var settings = EngineSettings()
    settings.retention = retention
    settings.pruneBatch = batch
    let h = Harness(settings: settings, ids: ids)
    let spy = SpyLogObserver()
    h.engine.addLogObserver(spy)
    return (h, spy)
  }

  private func count(_ h: Harness) throws -> Int { try h.engine.queries.eventLogBounds().count }

  @Test func takenEvents_FiredOrSkipped_AreLoggedOnceInOrder() throws {
    let (h, spy) = harness(ids: [1, 2])
    _ = try h.engine.start()
    // Starting a 2-day trial with a 3-day reminder skips that reminder at once.
    try h.start("a", days: 2, reminders: [3, 1])
    try h.start("b", days: 3, reminders: [])
    h.scheduler.advance(by: 3 * day)
    let events = spy.batches.flatMap { $0 }
    #expect(events.map(\.cursor) == (1...4).map { EventCursor(UInt64($0)) })
    #expect(events.map(\.fired) == [false, true, true, true])
    #expect(events.map(\.subject) == ["a", "a", "a", "b"])
    #expect(events[3].trialEnd == epoch.addingTimeInterval(3 * day))
    #expect(try h.engine.queries.eventLogBounds() == EventLogBounds(last: EventCursor(4), count: 4))
    #expect(h.engine.publishedThrough == EventCursor(4))
  }

  @Test func idleEngine_WithAnEmptyLog_ArmsNoPruning() throws {
    let (h, _) = harness(ids: [])
    _ = try h.engine.start()
    #expect(h.scheduler.pending.isEmpty)
  }

  @Test func events_ArePruned_OnceOlderThanTheRetention() throws {
    let (h, _) = harness(retention: EventRetention(age: .seconds(10 * 86_400), cap: nil), ids: [1, 2])
    _ = try h.engine.start()
    try h.start("a", days: 1, reminders: [])
    h.scheduler.advance(by: day)
    try h.start("b", days: 5, reminders: [])
    h.scheduler.advance(by: 5 * day)
    #expect(try count(h) == 2)
    // Ten days after the first was taken it goes; the second stays four more days.
    h.scheduler.advance(by: 5 * day)
    #expect(try count(h) == 1)
    #expect(try h.engine.queries.eventLogBounds().prunedThrough == EventCursor(1))
    h.scheduler.advance(by: 4 * day)
    #expect(try count(h) == 1)
    h.scheduler.advance(by: day)
    #expect(try count(h) == 0)
    #expect(try h.engine.queries.eventLogBounds().last == EventCursor(2))
    // Nothing left to prune: nothing armed for it.
    #expect(!h.scheduler.pending.contains { $0.label == "prune" })
  }

  @Test func pruning_GoesInSteps_OfTheBatchSize() throws {
    let (h, _) = harness(
      retention: EventRetention(age: .seconds(86_400), cap: nil), batch: 2, ids: Array(1...5))
    _ = try h.engine.start()
    for index in 1...5 { try h.start("t\(index)", days: 1, reminders: []) }
    h.scheduler.advance(by: day)
    #expect(try count(h) == 5)
    h.scheduler.advance(by: 1)  // the deliveries are recorded
    let commits = h.repository.commitCount
    h.scheduler.advance(by: day - 1)
    #expect(try count(h) == 0)
    #expect(h.repository.commitCount - commits == 3, "steps of 2, 2 and 1")
  }

  @Test func aConsumer_HoldsEventsItHasNotAcknowledged_UntilItDoes() throws {
    let (h, _) = harness(retention: EventRetention(age: .seconds(86_400), cap: nil), ids: [1, 2])
    _ = try h.engine.start()
    _ = try h.engine.createConsumer(named: "mail", after: nil)
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 1, reminders: [])
    h.scheduler.advance(by: day)
    h.scheduler.advance(by: 30 * day)
    #expect(try count(h) == 2)
    let (consumer, last) = try h.engine.acknowledge(consumer: "mail", through: EventCursor(1))
    #expect(consumer.acknowledged == EventCursor(1) && last == EventCursor(2))
    h.scheduler.advance(by: 1)
    #expect(try count(h) == 1)
    // Acknowledging an earlier cursor changes nothing: the position never moves back.
    #expect(try h.engine.acknowledge(consumer: "mail", through: .origin).0.acknowledged == EventCursor(1))
    try h.engine.removeConsumer(named: "mail")
    h.scheduler.advance(by: 0)
    #expect(try count(h) == 0)
  }

  @Test func theCap_PrunesUnacknowledgedEvents_AndCountsThemLost() throws {
    let retention = EventRetention(age: .seconds(86_400), cap: .seconds(3 * 86_400))
    let (h, _) = harness(retention: retention, ids: [1, 2])
    _ = try h.engine.start()
    _ = try h.engine.createConsumer(named: "slow", after: nil)
    try h.start("a", days: 1, reminders: [])
    try h.start("b", days: 2, reminders: [])
    h.scheduler.advance(by: 2 * day)
    #expect(try count(h) == 2)
    // Three days after it was taken, the first goes though the consumer never acknowledged it.
    h.scheduler.advance(by: 2 * day)
    #expect(try count(h) == 1)
    let (consumer, _) = try h.engine.queries.consumer(named: "slow")
    #expect(consumer.acknowledged == EventCursor(1) && consumer.lost == 1)
    #expect(consumer.lostAt == epoch.addingTimeInterval(4 * day))
    h.scheduler.advance(by: day)
    #expect(try count(h) == 0)
    #expect(try h.engine.queries.consumer(named: "slow").0.lost == 2)
  }

  @Test func consumers_AreCheckedByName_AndCursor() throws {
    let (h, _) = harness(ids: [1])
    _ = try h.engine.start()
    #expect(throws: TrialError(.consumerNotFound(name: "x"))) { try h.engine.queries.consumer(named: "x") }
    #expect(throws: TrialError.self) { try h.engine.createConsumer(named: "-bad", after: nil) }
    #expect(throws: TrialError(.cursorAhead(cursor: EventCursor(5), last: .origin))) {
      try h.engine.createConsumer(named: "ahead", after: EventCursor(5))
    }
    _ = try h.engine.createConsumer(named: "one", after: nil)
    #expect(throws: TrialError(.consumerExists(name: "one"))) {
      try h.engine.createConsumer(named: "one", after: nil)
    }
    #expect(throws: TrialError(.cursorAhead(cursor: EventCursor(1), last: .origin))) {
      try h.engine.acknowledge(consumer: "one", through: EventCursor(1))
    }
    #expect(throws: TrialError(.consumerNotFound(name: "two"))) { try h.engine.removeConsumer(named: "two") }
  }
}
