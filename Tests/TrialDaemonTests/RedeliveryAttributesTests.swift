import Foundation
import Systemd
import SystemdTesting
import Testing
import TrialCore
import TrialDaemonTesting
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// The journal carries an event as it was taken: labels changed between the take and a
/// delivery that comes later (held back, or after a restart) are not the event's.
@Suite struct RedeliveryAttributesTests {
  /// A trial with `tier=gold` whose reminder is taken at one day, and whose journal is down then.
  func takenWhileTheJournalIsDown(_ h: PacedHarness) throws -> Trial {
    let trial = try h.engine.perform(
      .start(subject: "acme", labels: ["tier": "gold"], end: .after(.days(3)), reminders: [.days(2)])
    ).trial
    h.journal.failuresLeft = Int.max
    h.scheduler.advance(by: 86_400)
    #expect(h.journal.sent.isEmpty && h.engine.heldEvents == 1, "the reminder is held")
    return trial
  }

  @Test func heldEvent_DeliveredAfterItsLabelsChanged_CarriesThemAsTaken() throws {
    let h = try PacedHarness.started(limit: nil)
    let trial = try takenWhileTheJournalIsDown(h)
    _ = try h.engine.perform(.extend(trial.id, .by(.days(1)), labels: ["tier": "silver"]))
    h.journal.failuresLeft = 0
    h.scheduler.advance(by: 1)
    #expect(h.journal.values("EVENT_KIND") == ["reminder"])
    #expect(h.journal.values("TRIAL_LABEL_TIER") == ["gold"])
    h.engine.stop()
  }

  @Test func outboxEvent_DeliveredAtStartAfterItsLabelsChanged_CarriesThemAsTaken() throws {
    let repository = InMemoryTrialRepository()
    let first = try PacedHarness.started(limit: nil, repository: repository)
    let trial = try takenWhileTheJournalIsDown(first)
    first.engine.stop()
    // Changed while the daemon was down: the trial as it is now says silver.
    _ = try repository.write { txn in
      try TrialBook.extendTrial(
        in: txn, trial.id, to: trial.period.endDate.addingTimeInterval(86_400), labels: ["tier": "silver"],
        now: first.scheduler.clock.now())
    }
    let second = PacedHarness(limit: nil, repository: repository, now: first.scheduler.clock.now())
    _ = try second.engine.start()
    #expect(second.journal.values("EVENT_KIND") == ["reminder"])
    #expect(second.journal.values("TRIAL_LABEL_TIER") == ["gold"])
    second.engine.stop()
  }
}
