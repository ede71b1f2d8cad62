import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// What the stores keep of webhook endpoints (their state, their pending events): the same in
/// the file store, in PostgreSQL and in memory, and the same after the store is opened again.
@Suite struct WebhookContractTests {
  private func at(_ seconds: Double) -> Date { origin.addingTimeInterval(seconds) }

  private func state(_ name: String) -> WebhookEndpointState {
    var state = WebhookEndpointState(name: name)
    state.health.record(.answered(status: 503, retryAfter: .seconds(7)), at: at(1), disableAfter: .days(5))
    state.health.record(.failed("could not connect: refused"), at: at(2), disableAfter: .seconds(1))
    state.keep(
      WebhookAttemptRecord(
        at: at(1), cursor: EventCursor(3), messageID: "0000000000000001-1-expiry", number: 1,
        outcome: .answered(status: 503, retryAfter: .seconds(7)), duration: .milliseconds(12)))
    state.keep(
      WebhookAttemptRecord(
        at: at(2), cursor: nil, messageID: "msg_test", number: 1,
        outcome: .failed("could not connect: refused"),
        duration: .microseconds(1_500)))
    state.skip = 9...12
    return state
  }

  private func pending(_ subject: Subject, _ endpoint: String, after: UInt64 = 0) throws
    -> [WebhookPendingEvent]
  {
    try subject.repository.read { txn in
      try collected { try txn.scanWebhookEvents(endpoint: endpoint, after: EventCursor(after), $0) }
    }
  }

  @Test(arguments: StoreKind.allCases)
  func endpointState_PutAndReopened_ReadsTheSame(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let billing = state("billing")
    var quiet = WebhookEndpointState(name: "a-quiet.one")
    quiet.health.record(.answered(status: 410, retryAfter: nil), at: at(5), disableAfter: .days(5))
    try subject.repository.write { txn in
      try txn.putWebhookEndpoint(billing)
      try txn.putWebhookEndpoint(quiet)
    }
    #expect(billing.health.disabled == .failing(since: at(1), at: at(2)))
    try subject.reopen()
    let read = try subject.repository.read { txn in
      (try txn.webhookEndpoint(named: "billing"), try txn.webhookEndpoint(named: "nobody"))
    }
    #expect(read.0 == billing)
    #expect(read.1 == nil)
    let all = try subject.repository.read { txn in try collected { try txn.scanWebhookEndpoints($0) } }
    #expect(all == [quiet, billing])
    // Replaced whole: the health cleared, the attempts and the skip as now.
    var enabled = billing
    enabled.health.enable()
    enabled.skip = nil
    try subject.repository.write { try $0.putWebhookEndpoint(enabled) }
    try subject.reopen()
    #expect(try subject.repository.read { try $0.webhookEndpoint(named: "billing") } == enabled)
  }

  @Test(arguments: StoreKind.allCases)
  func pendingEvents_ScannedInCursorOrder_RemovedThroughAPosition(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let events = [300, 2, 17, 256].map { sequence in
      WebhookPendingEvent(
        endpoint: "billing", cursor: EventCursor(UInt64(sequence)), attempts: sequence % 5,
        nextAttemptAt: sequence == 17 ? nil : at(Double(sequence)))
    }
    let other = WebhookPendingEvent(
      endpoint: "billing2", cursor: EventCursor(5), attempts: 1, nextAttemptAt: at(9))
    try subject.repository.write { txn in
      for event in events { try txn.putWebhookEvent(event) }
      try txn.putWebhookEvent(other)
    }
    try subject.reopen()
    let sorted = events.sorted { $0.cursor < $1.cursor }
    #expect(try pending(subject, "billing") == sorted)
    #expect(try pending(subject, "billing", after: 17) == Array(sorted.dropFirst(2)))
    #expect(try pending(subject, "billing2") == [other])
    #expect(try pending(subject, "bill") == [])
    // Replaced by endpoint and cursor: one more attempt, or delivered.
    var retried = sorted[3]
    retried.attempts += 1
    retried.nextAttemptAt = at(1_000)
    try subject.repository.write { try $0.putWebhookEvent(retried) }
    let removed = try subject.repository.write {
      try $0.removeWebhookEvents(endpoint: "billing", through: EventCursor(256))
    }
    #expect(removed == 3)
    try subject.reopen()
    #expect(try pending(subject, "billing") == [retried])
    #expect(try pending(subject, "billing2") == [other])
    #expect(
      try subject.repository.write {
        try $0.removeWebhookEvents(endpoint: "billing", through: EventCursor(299))
      } == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func removeEndpoint_TakesItsStateAndEvents_AndNoOthers(kind: StoreKind) throws {
    let subject = try Subject(kind)
    try subject.repository.write { txn in
      try txn.putWebhookEndpoint(state("billing"))
      try txn.putWebhookEndpoint(state("crm"))
      try txn.putWebhookEvent(
        WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(4), attempts: 2, nextAttemptAt: at(4)))
      try txn.putWebhookEvent(
        WebhookPendingEvent(endpoint: "crm", cursor: EventCursor(4), attempts: 1, nextAttemptAt: at(4)))
      try txn.putWebhookEvent(
        WebhookPendingEvent(endpoint: "orphan", cursor: EventCursor(1), attempts: 1, nextAttemptAt: nil))
    }
    let removed = try subject.repository.write { txn in
      (
        try txn.removeWebhookEndpoint(named: "billing"), try txn.removeWebhookEndpoint(named: "orphan"),
        try txn.removeWebhookEndpoint(named: "nobody")
      )
    }
    #expect(removed == (true, true, false))
    try subject.reopen()
    #expect(try subject.repository.read { try $0.webhookEndpoint(named: "billing") } == nil)
    #expect(try pending(subject, "billing") == [])
    #expect(try pending(subject, "orphan") == [])
    #expect(try subject.repository.read { try $0.webhookEndpoint(named: "crm") } == state("crm"))
    #expect(try pending(subject, "crm").count == 1)
  }

  /// A transaction reads its own writes, and counts an event it put again and removed once
  /// (PostgreSQL keeps the puts until the commit, and removes rows at once).
  @Test(arguments: StoreKind.allCases)
  func writesOfOneTransaction_AreReadByIt_AndCountedOnce(kind: StoreKind) throws {
    let subject = try Subject(kind)
    func event(_ sequence: UInt64, attempts: Int = 1) -> WebhookPendingEvent {
      WebhookPendingEvent(
        endpoint: "billing", cursor: EventCursor(sequence), attempts: attempts,
        nextAttemptAt: at(Double(sequence)))
    }
    try subject.repository.write { txn in
      try txn.putWebhookEvent(event(1))
      try txn.putWebhookEvent(event(2))
    }
    let seen = try subject.repository.write { txn in
      try txn.putWebhookEndpoint(state("billing"))
      let read = try txn.webhookEndpoint(named: "billing")
      try txn.putWebhookEvent(event(2, attempts: 2))
      try txn.putWebhookEvent(event(3))
      let removed = try txn.removeWebhookEvents(endpoint: "billing", through: EventCursor(2))
      let left = try collected { try txn.scanWebhookEvents(endpoint: "billing", after: .origin, $0) }
      try txn.putWebhookEvent(event(4))
      let gone = try txn.removeWebhookEndpoint(named: "billing")
      try txn.putWebhookEvent(event(5))
      return (read, removed, left, gone)
    }
    #expect(seen.0 == state("billing"))
    #expect(seen.1 == 2)
    #expect(seen.2 == [event(3)])
    #expect(seen.3)
    try subject.reopen()
    #expect(try subject.repository.read { try $0.webhookEndpoint(named: "billing") } == nil)
    #expect(try pending(subject, "billing") == [event(5)])
  }

  @Test(arguments: StoreKind.allCases)
  func aFailedWrite_LeavesNoWebhookState(kind: StoreKind) throws {
    let subject = try Subject(kind)
    struct Refused: Error {}
    #expect(throws: Refused.self) {
      try subject.repository.write { txn in
        try txn.putWebhookEndpoint(state("billing"))
        try txn.putWebhookEvent(
          WebhookPendingEvent(endpoint: "billing", cursor: EventCursor(1), attempts: 1, nextAttemptAt: at(1)))
        throw Refused()
      }
    }
    #expect(try subject.repository.read { try $0.webhookEndpoint(named: "billing") } == nil)
    #expect(try pending(subject, "billing") == [])
  }
}
