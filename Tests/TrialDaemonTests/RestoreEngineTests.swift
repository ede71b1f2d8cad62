import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialEngine
import TrialStore

@Suite struct RestoreEngineTests {
  /// The daemon's engine keeps trials on LMDB in virtual time. A backup is taken midway, the
  /// store moves on, then the backup is restored and the engine starts on it later: the
  /// events that fell due since the backup fire at start, late, under the catch-up policy
  /// (the latest only); the events in the backup's ledger never fire again.
  @Test func restoredBackup_FiresWhatFellDueSinceLate_AndNeverRefiresItsLedger() throws {
    let scratch = try TemporaryDirectory("restore-engine")
    let directory = scratch.appending("store")
    let start = ControlFixture.start
    let day: TimeInterval = 86_400
    func at(_ days: Double) -> Date { start.addingTimeInterval(days * day) }

    // A ends at day 2 (reminder 1 day before), B at day 4 (3 days and 1 day before), C at day
    // 10 (3 days before).
    var parts = try EngineParts(
      repository: LMDBTrialRepository(directory: directory), ids: [1, 2, 3], start: start)
    let plans: [(String, Double, [Double])] = [("A", 2, [1]), ("B", 4, [3, 1]), ("C", 10, [3])]
    let trials = try plans.map { subject, end, reminders in
      try parts.queue.sync {
        try parts.engine.perform(
          .start(subject: subject, end: .at(at(end)), reminders: reminders.map { .seconds($0 * day) }))
      }.trial
    }
    let (a, b, c) = (trials[0], trials[1], trials[2])

    parts.advance(by: 1.5 * day)
    let beforeBackup = parts.fireDue().map(\.id)
    #expect(Set(beforeBackup) == [a.events[0].id, b.events[0].id])
    let backup = scratch.appending("backup")
    let report = try (parts.repository as! LMDBTrialRepository).backup(to: backup)
    #expect(report.statistics.ledgerEntries == 2)

    parts.advance(by: 2 * day)  // day 3.5: A expires, B's 1-day reminder fires: after the backup.
    #expect(Set(parts.fireDue().map(\.id)) == [a.events[1].id, b.events[1].id])
    parts.close()

    let restored = try StoreRestore.restore(backup: backup, into: directory, now: at(3.5))
    #expect(restored.keptAside != nil)

    // The daemon starts again at day 5, on the restored store.
    parts = try EngineParts(repository: LMDBTrialRepository(directory: directory), ids: [], start: at(5))
    let atStart = parts.fireDue()
    // A's expiry fires late; B's 1-day reminder is superseded by its expiry, which fires late.
    #expect(atStart.map(\.id).sorted() == [a.events[1].id, b.events[1].id, b.events[2].id].sorted())
    for event in atStart {
      #expect(event.takenAt == at(5))
      #expect(event.lateness != nil, "\(event.id) is late")
      #expect(event.state == (event.id == b.events[1].id ? .skipped : .fired), "\(event.id)")
    }
    #expect(atStart.first { $0.id == b.events[1].id }?.reason == "superseded-by-expiry")
    #expect(Set(atStart.map(\.id)).isDisjoint(with: beforeBackup), "the backup's ledger never fires again")

    // From here on, time runs as usual: C's reminder and expiry fire once each, on time.
    parts.advance(by: 6 * day)
    let later = parts.fireDue()
    #expect(later.map(\.id) == [c.events[0].id, c.events[1].id])
    #expect(later.allSatisfy { $0.lateness == nil })
    #expect(Set(later.map(\.id)).isDisjoint(with: beforeBackup + atStart.map(\.id)))
    let stored = try parts.storedTrials()
    #expect(stored.map(\.state) == [.expired, .expired, .expired])
    // The events taken before the backup kept the time they were taken at.
    let ledger = try parts.queue.sync { try parts.repository.read { try $0.ledgerEntries(trial: a.id) } }
    #expect(ledger.first { $0.id == a.events[0].id }?.takenAt == at(1))
    parts.close()
  }
}
