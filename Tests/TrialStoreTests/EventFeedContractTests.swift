import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// `EventFeed` (cursors, consumers, retention) over each repository: the same in the file store
/// and in memory.
@Suite struct EventFeedContractTests {
  private func at(_ days: Double) -> Date { origin.addingTimeInterval(days * day) }

  /// A repository of `kind` in which a trial expired on each of the first `days` days.
  private func expiries(_ kind: StoreKind, days: Int) throws -> Subject {
    let subject = try Subject(kind)
    try fireExpiries(subject.repository, at: (1...days).map { at(Double($0)) })
    return subject
  }

  private func bounds(_ subject: Subject) throws -> EventLogBounds {
    try subject.repository.read { try $0.eventLogBounds() }
  }

  private func consumer(_ subject: Subject, _ name: String) throws -> ConsumerRecord? {
    try subject.repository.read { try $0.consumer(named: name) }
  }

  @Test(arguments: StoreKind.allCases)
  func checkCursor_PrunedOrAhead_ThrowsSayingWhereToResume(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 5)
    _ = try subject.repository.write { try $0.pruneEvents(through: EventCursor(2)) }
    try subject.reopen()
    func check(_ cursor: UInt64) throws -> EventLogBounds {
      try subject.repository.read { try EventFeed.checkCursor(EventCursor(cursor), in: $0) }
    }
    let pruned = try #require(throws: TrialError.self) { try check(1) }
    #expect(
      pruned.code
        == .cursorPruned(cursor: EventCursor(1), resumeAfter: EventCursor(2), oldest: EventCursor(3)))
    #expect(try check(2) == EventLogBounds(last: EventCursor(5), prunedThrough: EventCursor(2), count: 3))
    #expect(try check(5).last == EventCursor(5))
    let ahead = try #require(throws: TrialError.self) { try check(6) }
    #expect(ahead.code == .cursorAhead(cursor: EventCursor(6), last: EventCursor(5)))
    let events = try subject.repository.read { try EventFeed.events(after: EventCursor(2), limit: 2, in: $0) }
    #expect(events.map(\.cursor.sequence) == [3, 4])
    #expect(throws: TrialError.self) {
      try subject.repository.read { try EventFeed.events(after: .origin, limit: 2, in: $0) }
    }
    // Everything pruned: the oldest kept is none, and a reader resumes after the newest.
    _ = try subject.repository.write { try $0.pruneEvents(through: EventCursor(5)) }
    let all = try #require(throws: TrialError.self) { try check(4) }
    #expect(all.code == .cursorPruned(cursor: EventCursor(4), resumeAfter: EventCursor(5), oldest: nil))
  }

  @Test(arguments: StoreKind.allCases)
  func createConsumer_StartsAtTheNewestOrAtTheCursorGiven(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 3)
    let created = try subject.repository.write { txn in
      try (
        EventFeed.createConsumer(named: "live", after: nil, now: at(4), in: txn),
        EventFeed.createConsumer(named: "replay", after: EventCursor(1), now: at(4), in: txn)
      )
    }
    #expect(created.0 == ConsumerRecord(name: "live", acknowledged: EventCursor(3), createdAt: at(4)))
    #expect(created.1.acknowledged == EventCursor(1))
    try subject.reopen()
    #expect(try consumer(subject, "live") == created.0)
    func create(_ name: String, after: UInt64? = nil) throws {
      _ = try subject.repository.write { txn in
        try EventFeed.createConsumer(named: name, after: after.map { EventCursor($0) }, now: at(4), in: txn)
      }
    }
    #expect(throws: TrialError(.consumerExists(name: "live"))) { try create("live") }
    #expect(throws: TrialError.self) { try create("bad name") }
    #expect(throws: TrialError(.cursorAhead(cursor: EventCursor(9), last: EventCursor(3)))) {
      try create("ahead", after: 9)
    }
    #expect(try consumer(subject, "ahead") == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func acknowledge_MovesForwardOnly(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 5)
    try subject.repository.write { txn in
      _ = try EventFeed.createConsumer(named: "mailer", after: .origin, now: at(5), in: txn)
    }
    func acknowledge(_ cursor: UInt64, at time: Double, name: String = "mailer") throws -> ConsumerRecord {
      try subject.repository.write { txn in
        try EventFeed.acknowledge(consumer: name, through: EventCursor(cursor), now: at(time), in: txn)
      }
    }
    let moved = try acknowledge(3, at: 6)
    #expect(moved.acknowledged == EventCursor(3))
    #expect(moved.acknowledgedAt == at(6))
    try subject.reopen()
    #expect(try consumer(subject, "mailer") == moved)
    // Back, or to where it is: nothing changes, not even the time.
    #expect(try acknowledge(2, at: 7) == moved)
    #expect(try acknowledge(3, at: 7) == moved)
    #expect(try consumer(subject, "mailer") == moved)
    #expect(throws: TrialError(.cursorAhead(cursor: EventCursor(6), last: EventCursor(5)))) {
      try acknowledge(6, at: 7)
    }
    #expect(throws: TrialError(.consumerNotFound(name: "nobody"))) {
      try acknowledge(1, at: 7, name: "nobody")
    }
    #expect(try acknowledge(5, at: 8).acknowledged == EventCursor(5))
  }

  @Test(arguments: StoreKind.allCases)
  func prune_ByAge_StopsAtAConsumerThatHasNotAcknowledged(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 5)
    try subject.repository.write { txn in
      _ = try EventFeed.createConsumer(named: "slow", after: EventCursor(2), now: at(5), in: txn)
    }
    let retention = EventRetention(age: .seconds(10 * day), cap: nil)
    func prune(at time: Double, limit: Int = 100) throws -> EventFeed.PruneStep {
      try subject.repository.write {
        try EventFeed.prune(now: at(time), retention: retention, limit: limit, in: $0)
      }
    }
    // At day 12.5 the first two are old enough; the rest wait for their age.
    let first = try prune(at: 12.5)
    #expect(first.pruned == 2)
    #expect(first.lost.isEmpty)
    #expect(!first.more)
    #expect(first.nextAt == at(13))
    try subject.reopen()
    #expect(
      try bounds(subject) == EventLogBounds(last: EventCursor(5), prunedThrough: EventCursor(2), count: 3))
    // Long after, every event is old enough, but the consumer holds the ones it has not acknowledged.
    let held = try prune(at: 100)
    #expect(held.pruned == 0)
    #expect(held.nextAt == nil)
    #expect(try consumer(subject, "slow")?.acknowledged == EventCursor(2))
    _ = try subject.repository.write { txn in
      try EventFeed.acknowledge(consumer: "slow", through: EventCursor(4), now: at(100), in: txn)
    }
    #expect(try prune(at: 100).pruned == 2)
    #expect(
      try bounds(subject) == EventLogBounds(last: EventCursor(5), prunedThrough: EventCursor(4), count: 1))
    #expect(try consumer(subject, "slow")?.lost == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func prune_PastTheCap_MovesTheConsumerOnAndCountsWhatItLost(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 6)
    try subject.repository.write { txn in
      _ = try EventFeed.createConsumer(named: "behind", after: EventCursor(1), now: at(6), in: txn)
      _ = try EventFeed.createConsumer(named: "current", after: nil, now: at(6), in: txn)
    }
    let retention = EventRetention(age: .seconds(2 * day), cap: .seconds(30 * day))
    // Day 34.5: events 1 to 4 are past the cap; 5 and 6 are old enough, but held.
    let step = try subject.repository.write {
      try EventFeed.prune(now: at(34.5), retention: retention, limit: 100, in: $0)
    }
    #expect(step.pruned == 4)
    #expect(step.lost == ["behind": 3])
    #expect(step.nextAt == at(35))
    try subject.reopen()
    let behind = try #require(try consumer(subject, "behind"))
    #expect(behind.acknowledged == EventCursor(4))
    #expect(behind.lost == 3)
    #expect(behind.lostAt == at(34.5))
    #expect(behind.acknowledgedAt == nil)
    let current = try #require(try consumer(subject, "current"))
    #expect(current.acknowledged == EventCursor(6) && current.lost == 0 && current.lostAt == nil)
    // Later, past the cap for the rest: lost counts add up.
    let later = try subject.repository.write {
      try EventFeed.prune(now: at(40), retention: retention, limit: 100, in: $0)
    }
    #expect(later.pruned == 2)
    #expect(later.lost == ["behind": 2])
    #expect(later.nextAt == nil)
    #expect(try consumer(subject, "behind")?.lost == 5)
    #expect(try consumer(subject, "behind")?.acknowledged == EventCursor(6))
    #expect(
      try bounds(subject) == EventLogBounds(last: EventCursor(6), prunedThrough: EventCursor(6), count: 0))
  }

  @Test(arguments: StoreKind.allCases)
  func prune_InStepsOfTheLimit_SaysWhenThereIsMore(kind: StoreKind) throws {
    let subject = try expiries(kind, days: 5)
    let retention = EventRetention(age: .seconds(day), cap: nil)
    var steps: [EventFeed.PruneStep] = []
    repeat {
      steps.append(
        try subject.repository.write {
          try EventFeed.prune(now: at(50), retention: retention, limit: 2, in: $0)
        })
    } while steps.last!.more && steps.count < 10
    #expect(steps.map(\.pruned) == [2, 2, 1])
    #expect(steps.map(\.more) == [true, true, false])
    #expect(steps.map(\.nextAt) == [at(50), at(50), nil])
    #expect(
      try bounds(subject) == EventLogBounds(last: EventCursor(5), prunedThrough: EventCursor(5), count: 0))
    // An empty log: nothing to do.
    #expect(
      try subject.repository.write {
        try EventFeed.prune(now: at(60), retention: retention, limit: 2, in: $0)
      }
        == EventFeed.PruneStep())
  }
}
