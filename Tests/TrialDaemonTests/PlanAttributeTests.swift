import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialStore
import TrialTesting

@testable import TrialDaemon

/// The `plan` attribute reaches every place a trial's attributes go: the store's trial and
/// event records, the journal, the wire (both writers of a trial reply) and consume's environment.
@Suite struct PlanAttributeTests {
  static let now = Date(timeIntervalSince1970: 1_795_788_000)

  static func attributes() throws -> TrialAttributes {
    TrialAttributes(subject: "acme-42", plan: "pro", labels: try TrialLabels(["customer": "c-991"]))
  }

  @Test func planOfATrial_ReadsBackFromTheStore_OnTheTrialAndItsEvents() throws {
    let directory = try TemporaryDirectory("plan")
    let store = try LMDBTrialRepository(directory: directory.path)
    let started = try store.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: try Self.attributes(), endDate: Self.now.addingTimeInterval(86_400),
        reminders: .none, now: Self.now, ids: SequenceTrialIDGenerator([7]))
    }
    let expiry = try #require(started.trial.events.last)
    _ = try store.commit(
      [DueEvent(event: expiry, takenAt: expiry.due, disposition: .fire, isLate: false)], now: expiry.due)
    #expect(try store.read { try $0.trial(started.trial.id) }?.attributes == (try Self.attributes()))
    let logged = try store.loggedEvents(after: .origin, limit: 10)
    #expect(logged.map(\.attributes) == [try Self.attributes()])
  }

  @Test func planOfATrial_IsAJournalFieldAfterTheSubject() throws {
    let trial = Trial(
      id: TrialID(7), attributes: try Self.attributes(),
      period: TrialPeriod(startDate: Self.now, endDate: Self.now.addingTimeInterval(86_400)), reminders: .none
    )
    let entry = LedgerEntry(event: trial.events[0], outcome: .fired, takenAt: Self.now, isLate: false)
    let names = EventJournalEntry.fields(for: entry, attributes: trial.attributes, trial: trial).map {
      "\($0.name)=\($0.value)"
    }
    let subject = try #require(names.firstIndex(of: "TRIAL_SUBJECT=acme-42"))
    #expect(names[subject + 1] == "TRIAL_PLAN=pro")
    #expect(names[subject + 2] == "TRIAL_LABEL_CUSTOMER=c-991")
  }

  @Test func planOfATrial_IsOnTheWire_AndTheFastReplyIsJSONEncodersBytes() throws {
    let trial = Trial(
      id: TrialID(7), attributes: try Self.attributes(),
      period: TrialPeriod(startDate: Self.now, endDate: Self.now.addingTimeInterval(86_400)), reminders: .none
    )
    let object = TrialObject(trial, now: Self.now)
    #expect(object.named["plan"] == "pro")
    let reply = TrialReply(trial: object)
    #expect(FastPath.message(reply) == WireCoding.makeEncoder().message(OutgoingReply(parameters: reply)))
    var without = object
    without.named["plan"] = nil
    let plain = TrialReply(trial: without)
    #expect(FastPath.message(plain) == WireCoding.makeEncoder().message(OutgoingReply(parameters: plain)))
    #expect(!String(decoding: FastPath.message(plain), as: UTF8.self).contains("plan"))

    let entry = LedgerEntry(event: trial.events[0], outcome: .fired, takenAt: Self.now, isLate: false)
    let event = EventObject(entry, attributes: trial.attributes)
    #expect(event.named["plan"] == "pro")
    #expect(
      event.attributeVariables.map { "\($0.name)=\($0.value)" } == [
        "TRIAL_SUBJECT=acme-42", "TRIAL_PLAN=pro", "TRIAL_LABEL_CUSTOMER=c-991",
      ])
  }
}
