import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// `[Trials] Retention=` in the engine, in virtual time: ended trials removed once they have
/// been ended that long, in steps, with nothing armed while nothing can come of age.
@Suite struct TrialRetentionEngineTests {
  private func harness(retention: Double?, batch: Int = 1_000, ids: [UInt64]) throws -> Harness {
    var settings = EngineSettings()
    settings.trialRetention = retention.map { .seconds($0 * 86_400) }
    settings.trialRetentionStartDelay = .zero
    settings.pruneBatch = batch
    return try Harness.started(settings: settings, ids: ids)
  }

  private func trials(_ h: Harness) throws -> [String] {
    try h.repository.read { try $0.allTrials() }.map(\.subject).sorted()
  }

  @Test func endedTrials_AreRemovedOnceEndedForTheRetention_AndNoSooner() throws {
    let h = try harness(retention: 30, ids: [1, 2, 3])
    let converted = try h.start("converted", days: 10, reminders: [])
    try h.start("expired", days: 5, reminders: [])
    try h.start("active", days: 100, reminders: [])
    // The pass at the start found nothing ended: nothing is armed until a trial ends.
    h.scheduler.advance(by: 0)
    #expect(!h.scheduler.pending.contains { $0.label == "retire" })
    h.scheduler.advance(by: day)
    _ = try h.engine.perform(.end(converted.id, .converted))
    h.scheduler.advance(by: 4 * day)  // the expiry, 5 days in
    #expect(h.engine.counts[.converted] == 1 && h.engine.counts[.expired] == 1)
    // 31 days in: the conversion (1 day in) is 30 days old; the expiry (5 days in) not yet.
    h.scheduler.advance(by: 26 * day - 1)
    #expect(try trials(h) == ["active", "converted", "expired"])
    h.scheduler.advance(by: 1)
    #expect(try trials(h) == ["active", "expired"])
    #expect(h.engine.counts[.converted] == 0 && h.engine.counts[.expired] == 1)
    #expect(try h.repository.read { try $0.ledgerEntries(trial: converted.id) }.isEmpty)
    h.scheduler.advance(by: 4 * day)
    #expect(try trials(h) == ["active"])
    #expect(h.engine.counts[.expired] == 0 && h.engine.counts[.active] == 1)
    // Nothing can come of age: nothing armed for it.
    #expect(!h.scheduler.pending.contains { $0.label == "retire" })
  }

  @Test func withoutRetention_EndedTrialsStay_AndNothingIsArmed() throws {
    let h = try harness(retention: nil, ids: [1])
    let trial = try h.start("kept", days: 10, reminders: [])
    _ = try h.engine.perform(.end(trial.id, .cancelled))
    h.scheduler.advance(by: 1000 * day)
    #expect(try trials(h) == ["kept"])
    #expect(!h.scheduler.pending.contains { $0.label == "retire" })
  }

  @Test func removal_GoesInSteps_OfTheBatchSize() throws {
    let h = try harness(retention: 1, batch: 2, ids: Array(1...5))
    for index in 1...5 { try h.start("t\(index)", days: 1, reminders: []) }
    h.scheduler.advance(by: day)
    h.scheduler.advance(by: 1)  // the deliveries are recorded
    let commits = h.repository.commitCount
    h.scheduler.advance(by: day)
    #expect(try trials(h).isEmpty)
    // Steps of 2, 2 and 1 trials examined (the last finds the end), each its own commit.
    #expect(h.repository.commitCount - commits == 3)
  }

  @Test func aStartedEngine_RemovesTrialsThatCameOfAgeWhileItWasStopped() throws {
    let repository = InMemoryTrialRepository()
    let first = try Harness.started(repository: repository, ids: [1, 2])
    try first.start("old", days: 1, reminders: [])
    try first.start("young", days: 20, reminders: [])
    first.scheduler.advance(by: day)
    first.engine.stop()
    var settings = EngineSettings()
    settings.trialRetention = .seconds(5 * 86_400)
    let second = Harness(
      repository: repository, scheduler: TestScheduler(now: epoch.addingTimeInterval(10 * day)),
      settings: settings)
    _ = try second.engine.start()
    // The first pass waits a minute after the start, so as not to hold the start up.
    second.scheduler.advance(by: 59)
    #expect(try trials(second) == ["old", "young"])
    second.scheduler.advance(by: 1)
    #expect(try trials(second) == ["young"])
  }
}
