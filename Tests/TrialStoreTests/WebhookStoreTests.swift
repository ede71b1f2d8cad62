import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// The file store's own side of webhook endpoints' state (database `webhooks`, schema 8): the
/// upgrade that creates it, its records, and the names it refuses.
@Suite struct WebhookStoreTests {
  private func state(_ name: String) -> WebhookEndpointState {
    var state = WebhookEndpointState(name: name)
    let answer = WebhookAttempt.answered(status: 429, retryAfter: .seconds(90))
    state.health.record(answer, at: origin, disableAfter: .days(5))
    state.health.record(.answered(status: 410, retryAfter: nil), at: origin + 60, disableAfter: .days(5))
    state.keep(
      WebhookAttemptRecord(
        at: origin, cursor: EventCursor(1), messageID: "0000000000000001-1-expiry", number: 1,
        outcome: answer,
        duration: .milliseconds(250)))
    state.skip = 1...1
    return state
  }

  private func event(_ name: String, _ sequence: UInt64) -> WebhookPendingEvent {
    WebhookPendingEvent(
      endpoint: name, cursor: EventCursor(sequence), attempts: 3, nextAttemptAt: origin + Double(sequence))
  }

  /// Writes a state and an event, opens the store again, and reads them back.
  private func roundTrip(_ store: LMDBTrialRepository, path: String) throws -> LMDBTrialRepository {
    try store.write { txn in
      try txn.putWebhookEndpoint(state("hooks"))
      try txn.putWebhookEvent(event("hooks", 1))
    }
    store.close()
    let reopened = try LMDBTrialRepository(directory: path)
    #expect(try reopened.read { try $0.webhookEndpoint(named: "hooks") } == state("hooks"))
    #expect(
      try reopened.read { txn in
        try collected { try txn.scanWebhookEvents(endpoint: "hooks", after: .origin, $0) }
      }
        == [event("hooks", 1)])
    return reopened
  }

  @Test(arguments: UpgradeFixture.all)
  func storeOfAnEarlierSchema_ReadAsItIs_HasNoWebhookState(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("webhooks")
    let path = try fixture.copy(into: directory)
    let reader = try LMDBStoreReader(directory: path)
    defer { reader.close() }
    let read = try reader.read { txn in
      (
        try txn.webhookEndpoint(named: "hooks"), try collected { try txn.scanWebhookEndpoints($0) },
        try collected { try txn.scanWebhookEvents(endpoint: "hooks", after: .origin, $0) }
      )
    }
    #expect(read.0 == nil && read.1.isEmpty && read.2.isEmpty)
  }

  @Test(arguments: UpgradeFixture.all)
  func storeOfAnEarlierSchema_Upgraded_KeepsWebhookState(fixture: UpgradeFixture) throws {
    let directory = try TemporaryDirectory("webhooks")
    let path = try fixture.copy(into: directory)
    let store = try FixtureStore.open(path)
    #expect(store.upgradedFrom == fixture.schema)
    #expect(try store.read { try $0.webhookEndpoint(named: "hooks") } == nil)
    try roundTrip(store, path: path).close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }

  /// A store of schema 7, its nine databases as that version made them, is upgraded with the
  /// new database, and keeps the copy of what it was.
  @Test func storeOfSchema7_Upgraded_CreatesTheWebhooksDatabase() throws {
    let directory = try TemporaryDirectory("webhooks")
    let path = directory.appending("store")
    let environment = try LMDBEnvironment(
      directory: path, initialMapSize: 1 << 20, maximumMapSize: 1 << 30, maxDatabases: 9, create: true)
    try environment.write { txn in
      for name in LMDBTrialRepository.Databases.names where name != "webhooks" {
        _ = try txn.openDatabase(name, create: true)
      }
      let meta = try #require(try txn.openDatabase("meta", create: false))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.schema, UInt32(7))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.logLast, UInt64(0))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.logPrunedThrough, UInt64(0))
    }
    environment.close()
    #expect(try LMDBStoreReader(directory: path).statistics().schema == 7)

    let store = try FixtureStore.open(path)
    #expect(store.upgrade?.fromSchema == 7 && store.upgrade?.toSchema == LMDBTrialRepository.schemaVersion)
    #expect(store.upgrade?.keptCopy == path + "/" + FixtureStore.copyName(schema: 7))
    // A trial whose expiry is logged at cursor 1, the event pending for the endpoint.
    let trial = try store.write { txn in
      try TrialBook.startTrial(
        in: txn, subject: "alpha", endDate: origin + day, reminders: .none, now: origin,
        ids: SequenceTrialIDGenerator([1])
      ).trial
    }
    let expiry = DueEvent(event: trial.events[0], takenAt: origin + day, disposition: .fire, isLate: false)
    _ = try store.write { txn in try TrialBook.commit(in: txn, [expiry], now: origin + day) }
    let reopened = try roundTrip(store, path: path)
    #expect(try reopened.statistics().schema == LMDBTrialRepository.schemaVersion)
    reopened.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }

  @Test func endpointState_RecordOfEveryPart_ReadsBackTheSame() throws {
    var full = state("a.b-c_9")
    full.health.failingSince = origin - 1
    full.health.lastAttempt = .failed("TLS: certificate has expired ✗")
    full.health.disabled = .failing(since: origin - 1, at: origin + 3)
    full.skip = 0...UInt64.max
    for number in 2...WebhookEndpointState.keptAttempts {
      full.keep(
        WebhookAttemptRecord(
          at: origin + Double(number), cursor: number.isMultiple(of: 2) ? nil : EventCursor(UInt64(number)),
          messageID: "msg_\(number)", number: number,
          outcome: .answered(status: 200 + number, retryAfter: nil),
          duration: .microseconds(number)))
    }
    for state in [full, WebhookEndpointState(name: "x")] {
      var writer = ByteWriter()
      try WebhookRecords.encode(state, into: &writer)
      let read = try writer.bytes.withUnsafeBytes { try WebhookRecords.decodeState($0, name: state.name) }
      #expect(read == state)
    }
  }

  /// Spans are kept to the microsecond, as the ledger's lateness is (and as PostgreSQL keeps them).
  @Test func attemptDuration_FinerThanAMicrosecond_IsKeptToTheMicrosecond() throws {
    var state = WebhookEndpointState(name: "hooks")
    state.keep(
      WebhookAttemptRecord(
        at: origin, cursor: nil, messageID: "msg_1", number: 1,
        outcome: .answered(status: 503, retryAfter: .nanoseconds(2_499)), duration: .nanoseconds(1_600)))
    var writer = ByteWriter()
    try WebhookRecords.encode(state, into: &writer)
    let read = try writer.bytes.withUnsafeBytes { try WebhookRecords.decodeState($0, name: "hooks") }
    #expect(read.attempts.first?.duration == .microseconds(2))
    #expect(read.attempts.first?.outcome == .answered(status: 503, retryAfter: .microseconds(2)))
  }

  @Test(arguments: ["", "Hooks", "a b", String(repeating: "a", count: 65)])
  func putWebhookEndpoint_NameAPlanCouldNotHave_IsRefused(name: String) throws {
    let directory = try TemporaryDirectory("webhooks")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    defer { store.close() }
    let refused = #expect(throws: TrialError.self) {
      try store.write { try $0.putWebhookEndpoint(state(name)) }
    }
    #expect(refused?.description.contains("webhook endpoint's name") == true)
    #expect(throws: TrialError.self) { try store.write { try $0.putWebhookEvent(event(name, 1)) } }
    #expect(try store.read { try $0.webhookEndpoint(named: name) } == nil)
  }

  @Test func endpointState_OfMoreAttemptsThanKept_IsRefused() throws {
    let directory = try TemporaryDirectory("webhooks")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    defer { store.close() }
    var crowded = state("hooks")
    crowded.attempts = Array(repeating: crowded.attempts[0], count: WebhookEndpointState.keptAttempts + 1)
    #expect(throws: TrialError.self) { try store.write { try $0.putWebhookEndpoint(crowded) } }
  }

  /// A scan of the states passes over each endpoint's events with one seek, and over the
  /// events of an endpoint without a state.
  @Test func scanWebhookEndpoints_AmongManyEvents_ReadsTheStatesInNameOrder() throws {
    let directory = try TemporaryDirectory("webhooks")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    defer { store.close() }
    try store.write { txn in
      for name in ["b", "a", "a0", "c"] { try txn.putWebhookEndpoint(state(name)) }
      for sequence in 1...300 { try txn.putWebhookEvent(event("a", UInt64(sequence))) }
      try txn.putWebhookEvent(event("b-orphan", 2))
    }
    let names = try store.read { txn in try collected { try txn.scanWebhookEndpoints($0) }.map(\.name) }
    #expect(names == ["a", "a0", "b", "c"])
    let first = try store.read { txn in
      try collected { body in try txn.scanWebhookEndpoints { try body($0) && false } }.map(\.name)
    }
    #expect(first == ["a"])
    let pending = try store.read { txn in
      try collected { try txn.scanWebhookEvents(endpoint: "a", after: EventCursor(290), $0) }
    }
    #expect(pending.map(\.cursor.sequence) == Array(291...300))
  }
}
