import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// Follow-ups (`FollowUps=`) on the memory store and the file store: each fires once after an
/// expiry, across a restart, or is called off by a conversion or a later trial of the subject.
@Suite struct FollowUpStoreTests {
  static let spans = try! FollowUpSchedule([.days(30), .days(3)])

  private func start(
    _ store: any TrialRepository, _ subject: String, id: UInt64, at now: Date, grace: Duration = .zero
  )
    throws -> Trial
  {
    try store.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: TrialAttributes(subject: subject), endDate: now + 10 * day, reminders: .none,
        grace: grace, followUps: Self.spans, now: now, ids: SequenceTrialIDGenerator([id])
      ).trial
    }
  }

  /// Takes what is due at `now` and records it: the outcomes of the follow-ups taken.
  private func take(_ store: any TrialRepository, _ planner: inout Planner, at now: Date) throws -> [String] {
    let due = planner.takeDue(at: now)
    let logged = try store.write { try TrialBook.commit(in: $0, due, now: now) }
    return logged.map(\.entry).filter { $0.event.kind.followUpSpan != nil }.map {
      switch $0.outcome {
      case .fired: "\($0.event.id.kind.name) \(Int($0.event.kind.span / .days(1)))d fired"
      case .skipped(let reason):
        "\($0.event.id.kind.name) \(Int($0.event.kind.span / .days(1)))d \(reason.code)"
      }
    }
  }

  private func stores() throws -> [(any TrialRepository, TemporaryDirectory?)] {
    let directory = try TemporaryDirectory("follow-ups")
    return [
      (InMemoryTrialRepository(), nil),
      (try LMDBTrialRepository(directory: directory.appending("store")), directory),
    ]
  }

  @Test func afterExpiry_EachFiresOnce_AcrossARestart() throws {
    for (store, _) in try stores() {
      let trial = try start(store, "acme", id: 0x51, at: origin)
      var planner = Planner()
      try store.restore(into: &planner)
      #expect(try take(store, &planner, at: origin + 10 * day).isEmpty)
      #expect(try store.trial(trial.id)?.state == .expired)
      #expect(try take(store, &planner, at: origin + 13 * day) == ["follow-up 3d fired"])
      // A restart: the expired trial's follow-up still pending is planned again, the taken one not.
      var restarted = Planner()
      try store.restore(into: &restarted)
      #expect(restarted.pendingEventCount == 1)
      #expect(try take(store, &restarted, at: origin + 40 * day) == ["follow-up 30d fired"])
      var again = Planner()
      try store.restore(into: &again)
      #expect(again.pendingEventCount == 0)
      let ids = try store.read { try $0.ledgerEntries(trial: trial.id) }.map(\.id.description)
      #expect(ids.contains("\(trial.id)-r1-follow-up-259200000ms"))
    }
  }

  @Test func conversionDuringGrace_CallsThemOff() throws {
    for (store, _) in try stores() {
      let trial = try start(store, "acme", id: 0x52, at: origin, grace: .days(2))
      var planner = Planner()
      try store.restore(into: &planner)
      _ = try take(store, &planner, at: origin + 10 * day)
      let converted = try store.write {
        try TrialBook.endTrial(in: $0, trial.id, outcome: .converted, now: origin + 11 * day)
      }
      planner.add(converted, now: origin + 11 * day)
      #expect(planner.pendingEventCount == 2)
      var restarted = Planner()
      try store.restore(into: &restarted)
      #expect(
        try take(store, &restarted, at: origin + 50 * day) == [
          "follow-up 3d called-off-by-conversion", "follow-up 30d called-off-by-conversion",
        ])
    }
  }

  @Test func newTrialOfTheSubject_CallsThemOff() throws {
    for (store, _) in try stores() {
      _ = try start(store, "acme", id: 0x53, at: origin)
      var planner = Planner()
      try store.restore(into: &planner)
      _ = try take(store, &planner, at: origin + 10 * day)
      #expect(try take(store, &planner, at: origin + 13 * day) == ["follow-up 3d fired"])
      let second = try start(store, "acme", id: 0x54, at: origin + 20 * day)
      planner.add(second, now: origin + 20 * day)
      // The second trial's own first follow-up fires (day 33); the first's last is called off.
      #expect(
        try take(store, &planner, at: origin + 40 * day) == [
          "follow-up 3d fired", "follow-up 30d called-off-by-new-trial",
        ])
    }
  }

  @Test func trialRecord_WithFollowUps_ReadsBackTheSame() throws {
    let period = TrialPeriod(startDate: origin, endDate: origin + 10 * day)
    let trial = Trial(
      id: TrialID(7), subject: "acme", period: period, state: .expired, endedAt: origin + 10 * day,
      followUps: Self.spans)
    var writer = ByteWriter()
    try RecordCodec().encode(trial, into: &writer)
    #expect(writer.bytes[2] & RecordCodec.followUpsFlag != 0)
    #expect(try writer.bytes.withUnsafeBytes { try RecordCodec().decodeTrial($0, id: trial.id) } == trial)
    #expect(EventID("\(trial.id)-r1-follow-up-259200000ms")?.kind == .followUp(after: .days(3)))
    #expect(
      EventID.kind(order: EventID(trialID: trial.id, revision: 1, kind: .followUp(after: .days(3))).order)
        == .followUp(after: .days(3)))
  }
}
