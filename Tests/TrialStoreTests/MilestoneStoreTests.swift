import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// Milestones (`Milestones=`) on the memory store and the file store: the trial's spans and the
/// ledger's milestones (fired, skipped by an end or a pause) read back the same, and a restart
/// plans again only those not taken.
@Suite struct MilestoneStoreTests {
  static let spans = try! MilestoneSchedule([.days(2), .days(1), .days(12)])

  private func start(_ store: any TrialRepository, _ subject: String, id: UInt64, at now: Date) throws
    -> Trial
  {
    try store.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: TrialAttributes(subject: subject), endDate: now + 10 * day, reminders: .none,
        milestones: Self.spans, now: now, ids: SequenceTrialIDGenerator([id])
      ).trial
    }
  }

  /// The outcomes of the trial's milestones in the ledger, in id order.
  private func outcomes(_ store: any TrialRepository, _ id: TrialID) throws -> [String] {
    try store.read { try $0.ledgerEntries(trial: id) }.compactMap { entry in
      guard let span = entry.event.kind.milestoneSpan else { return nil }
      let outcome =
        switch entry.outcome {
        case .fired: "fired"
        case .skipped(let reason): reason.code
        }
      return "r\(entry.event.revision)-\(Int(span / .days(1)))d \(outcome)"
    }
  }

  private func stores() throws -> [(any TrialRepository, TemporaryDirectory?)] {
    let directory = try TemporaryDirectory("milestones")
    return [
      (InMemoryTrialRepository(), nil),
      (try LMDBTrialRepository(directory: directory.appending("store")), directory),
    ]
  }

  @Test func eachFiresOnce_AcrossARestart() throws {
    for (store, _) in try stores() {
      let trial = try start(store, "acme", id: 0x61, at: origin)
      #expect(try store.trial(trial.id)?.milestones == Self.spans)
      var planner = Planner()
      try store.restore(into: &planner)
      // Two milestones before the end, and the expiry: the one after the end is not planned.
      #expect(planner.pendingEventCount == 3)
      let due = planner.takeDue(at: origin + 1.5 * day)
      _ = try store.write { try TrialBook.commit(in: $0, due, now: origin + 1.5 * day) }
      var restarted = Planner()
      try store.restore(into: &restarted)
      #expect(restarted.pendingEventCount == 2)
      let rest = restarted.takeDue(at: origin + 20 * day)
      _ = try store.write { try TrialBook.commit(in: $0, rest, now: origin + 20 * day) }
      #expect(try outcomes(store, trial.id) == ["r1-1d fired", "r1-2d fired", "r1-12d trial-ended"])
      // Ended, cut to those that came.
      #expect(try store.trial(trial.id)?.milestones.spans == [.days(1), .days(2)])
      var again = Planner()
      try store.restore(into: &again)
      #expect(again.pendingEventCount == 0)
    }
  }

  @Test func pauseAndConversion_SkipThoseNotCome() throws {
    for (store, _) in try stores() {
      let paused = try start(store, "acme", id: 0x62, at: origin)
      let converted = try start(store, "beta", id: 0x63, at: origin)
      _ = try store.write {
        try TrialBook.pauseTrial(in: $0, paused.id, maxPause: nil, now: origin + 1.5 * day)
      }
      _ = try store.write {
        try TrialBook.endTrial(in: $0, converted.id, outcome: .converted, now: origin + 0.5 * day)
      }
      #expect(try outcomes(store, paused.id) == ["r1-1d paused", "r1-2d paused", "r1-12d paused"])
      #expect(
        try outcomes(store, converted.id) == ["r1-1d trial-ended", "r1-2d trial-ended", "r1-12d trial-ended"])
      #expect(try store.trial(converted.id)?.milestones == MilestoneSchedule.none)
      // None was taken before the pause (the one due then included): none is left to the resume.
      let resumed = try store.write { try TrialBook.resumeTrial(in: $0, paused.id, now: origin + 3 * day) }
      #expect(resumed.trial.milestones == MilestoneSchedule.none)
      #expect(resumed.skipped.isEmpty)
      var planner = Planner()
      try store.restore(into: &planner)
      // Only the resumed trial's expiry.
      #expect(planner.pendingEventCount == 1)
    }
  }

  @Test func trialRecord_WithMilestones_ReadsBackTheSame() throws {
    let period = TrialPeriod(startDate: origin, endDate: origin + 10 * day)
    let trial = Trial(
      id: TrialID(7), subject: "acme", period: period, followUps: try FollowUpSchedule([.days(3)]),
      milestones: Self.spans)
    var writer = ByteWriter()
    try RecordCodec().encode(trial, into: &writer)
    #expect(writer.bytes[2] & RecordCodec.milestonesFlag != 0)
    #expect(try writer.bytes.withUnsafeBytes { try RecordCodec().decodeTrial($0, id: trial.id) } == trial)
    let id = EventID(trialID: trial.id, revision: 1, kind: .milestone(after: .days(1)))
    #expect(id.description == "\(trial.id)-r1-milestone-86400000ms")
    #expect(EventID(id.description) == id)
    #expect(EventID.kind(order: id.order) == .milestone(after: .days(1)))
    #expect(id.order >> 60 == 2)
  }
}
