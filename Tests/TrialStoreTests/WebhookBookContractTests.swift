import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// `WebhookBook` over each store: an endpoint's position is a consumer of the log, its queue's
/// changes outlive the store's reopening, a replay moves it back.
@Suite struct WebhookBookContractTests {
  private func at(_ days: Double) -> Date { origin.addingTimeInterval(days * day) }

  /// A store whose log holds `events` expiries.
  private func store(_ kind: StoreKind, events: Int) throws -> Subject {
    let subject = try Subject(kind)
    try fireExpiries(subject.repository, at: (1...events).map { at(Double($0)) })
    return subject
  }

  private func open(_ subject: Subject, _ endpoint: String = "billing") throws -> WebhookBook.Opened {
    try subject.repository.write { try WebhookBook.open(endpoint: endpoint, now: at(9), in: $0) }
  }

  @Test(arguments: StoreKind.allCases)
  func open_ANewEndpoint_StartsAfterTheNewestEvent(kind: StoreKind) throws {
    let subject = try store(kind, events: 3)
    let opened = try open(subject)
    #expect(opened.created)
    #expect(opened.position == EventCursor(3))
    #expect(opened.state == WebhookEndpointState(name: "billing"))
    try subject.reopen()
    let again = try open(subject)
    #expect(!again.created)
    #expect(again.position == EventCursor(3))
    let consumer = try subject.repository.read { try $0.consumer(named: "webhook:billing") }
    #expect(consumer?.acknowledged == EventCursor(3), "the log keeps what the endpoint has not settled")
    #expect(throws: TrialError.self) {
      try subject.repository.write {
        try EventFeed.createConsumer(named: "webhook:crm", after: nil, now: at(9), in: $0)
      }
    }
  }

  @Test(arguments: StoreKind.allCases)
  func aQueuesChanges_Recorded_AreWhereTheQueueGoesOnAfterAReopen(kind: StoreKind) throws {
    let subject = try store(kind, events: 1)
    _ = try open(subject)
    try fireExpiries(subject.repository, at: (2...5).map { at(Double($0)) }, firstID: 2)
    var queue = WebhookQueue(endpoint: "billing", position: EventCursor(1), remembered: [])
    var change = WebhookQueue.Change()
    for sequence in UInt64(2)...5 {
      change.merge(queue.read(cursor: EventCursor(sequence), subject: "s", wanted: sequence != 3, now: at(9)))
    }
    _ = queue.takeDue(now: at(9), limit: 10)
    change.merge(queue.failed(EventCursor(4), retryAt: at(10)))
    change.merge(queue.delivered(EventCursor(5)))
    change.merge(queue.delivered(EventCursor(2)))
    #expect(change.position == EventCursor(3))
    var state = WebhookEndpointState(name: "billing")
    state.health.record(.answered(status: 500, retryAfter: nil), at: at(9), disableAfter: .days(5))
    try subject.repository.write {
      try WebhookBook.record(change, endpoint: "billing", state: state, now: at(9), in: $0)
    }
    try subject.reopen()
    let opened = try open(subject)
    #expect(opened.position == EventCursor(3))
    #expect(opened.state == state)
    #expect(
      opened.pending == [
        WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(4), attempts: 1, nextAttemptAt: at(10)),
        WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(5), attempts: 1, nextAttemptAt: nil),
      ])
    // The queue of a restart: 4 waits for its time, 5 is not sent again.
    var restarted = WebhookQueue(endpoint: "billing", position: opened.position, remembered: opened.pending)
    _ = restarted.read(cursor: EventCursor(4), subject: "s", wanted: true, now: at(9))
    _ = restarted.read(cursor: EventCursor(5), subject: "s", wanted: true, now: at(9))
    #expect(restarted.takeDue(now: at(9), limit: 10).isEmpty)
    #expect(restarted.takeDue(now: at(10), limit: 10).map(\.cursor) == [EventCursor(4)])
    let done = restarted.delivered(EventCursor(4))
    #expect(done.position == EventCursor(5))
    try subject.repository.write {
      try WebhookBook.record(done, endpoint: "billing", state: nil, now: at(10), in: $0)
    }
    #expect(try open(subject).pending == [], "the records the position passed are gone")
  }

  @Test(arguments: StoreKind.allCases)
  func replay_MovesBack_AndSkipsWhatWasSettledAfterItsEnd(kind: StoreKind) throws {
    let subject = try store(kind, events: 6)
    _ = try open(subject)
    let state = try subject.repository.write { txn in
      try WebhookBook.replay(
        endpoint: "billing", after: EventCursor(1), until: EventCursor(3), now: at(9), in: txn)
    }
    #expect(state.skip == 4...6)
    #expect(try open(subject).position == EventCursor(1))
    #expect(throws: TrialError.self) {
      try subject.repository.write { txn in
        try WebhookBook.replay(endpoint: "billing", after: EventCursor(9), until: nil, now: at(9), in: txn)
      }
    }
    #expect(throws: TrialError(.consumerNotFound(name: "webhook:crm"))) {
      try subject.repository.write { txn in
        try WebhookBook.replay(endpoint: "crm", after: EventCursor(1), until: nil, now: at(9), in: txn)
      }
    }
    #expect(try subject.repository.write { try WebhookBook.remove(endpoint: "billing", in: $0) })
    #expect(try subject.repository.read { try $0.consumer(named: "webhook:billing") } == nil)
    #expect(try open(subject).created, "an endpoint removed starts afresh")
  }

  @Test(arguments: StoreKind.allCases)
  func replay_SendsAgainWhatWasDeliveredAheadInItsRange(kind: StoreKind) throws {
    let subject = try store(kind, events: 6)
    _ = try open(subject)
    var change = WebhookQueue.Change()
    change.put = [
      WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(3), attempts: 1, nextAttemptAt: nil),
      WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(5), attempts: 2, nextAttemptAt: at(20)),
    ]
    try subject.repository.write { txn in
      _ = try WebhookBook.replay(endpoint: "billing", after: EventCursor(1), until: nil, now: at(9), in: txn)
      try WebhookBook.record(change, endpoint: "billing", state: nil, now: at(9), in: txn)
    }
    #expect(try open(subject).pending.map(\.cursor) == [EventCursor(3), EventCursor(5)])
    try subject.repository.write { txn in
      _ = try WebhookBook.replay(
        endpoint: "billing", after: EventCursor(1), until: EventCursor(4), now: at(9), in: txn)
    }
    #expect(
      try open(subject).pending.map(\.cursor) == [EventCursor(5)], "3 goes again; 5, after the end, waits")
  }
}
