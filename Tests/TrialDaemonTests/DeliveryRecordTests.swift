import Foundation
import Testing
import TrialCore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Firing costs one durable commit: deliveries are recorded by the engine's next write when
/// the next wake is due within 5 ms, else at once after the wake; a crash before that
/// delivers them again with their ids.
@Suite struct DeliveryRecordTests {
  /// Trials of one expiry each, ending `offsets` seconds after the epoch.
  private func startTrials(_ h: Harness, endingAfter offsets: [TimeInterval]) throws {
    for (index, offset) in offsets.enumerated() {
      _ = try h.engine.perform(
        .start(subject: "t\(index)", end: .at(epoch.addingTimeInterval(offset)), reminders: []))
    }
  }

  private func undelivered(_ h: Harness) throws -> Set<EventID> {
    Set(try h.repository.outbox().map(\.id))
  }

  @Test func wakes_ThatFireEvents_CommitOnceEach() throws {
    let h = try Harness.started(ids: [1, 2, 3, 4])
    try startTrials(h, endingAfter: [10, 10.002, 10.004, 20])
    let commits = h.repository.commitCount
    h.scheduler.advance(to: epoch.addingTimeInterval(10.004))
    #expect(h.sink.delivered.count == 3)
    // Each wake's commit recorded the deliveries of the one before, due within 5 ms; after
    // the third, nothing is due that soon: its delivery is recorded at once.
    #expect(h.repository.commitCount - commits == 4, "three wakes, then the deliveries of the last")
    #expect(try undelivered(h).isEmpty)
    let entry = try h.repository.read { try $0.ledgerEntry(h.sink.ids[2]) }
    #expect(entry?.deliveredAt == epoch.addingTimeInterval(10.004), "the time it was delivered")
    #expect(!h.scheduler.pending.contains { $0.label == "record deliveries" })
  }

  @Test func deliveries_WithTheNextWakeSoon_WaitForItsCommit() throws {
    let h = try Harness.started(ids: [1, 2])
    try startTrials(h, endingAfter: [10, 10.005])
    h.scheduler.advance(to: epoch.addingTimeInterval(10))
    #expect(try undelivered(h) == [h.sink.ids[0]])
    #expect(h.engine.unrecordedDeliveries.apply(to: try h.repository.outbox()).allSatisfy(\.isDelivered))
    let commits = h.repository.commitCount
    h.scheduler.advance(to: epoch.addingTimeInterval(10.005))
    #expect(h.repository.commitCount - commits == 2, "the wake's commit, then the last deliveries'")
    #expect(try undelivered(h).isEmpty)
  }

  @Test func deliveries_ThenACommand_RideInItsCommit() throws {
    let h = try Harness.started(ids: [1, 2, 3])
    try startTrials(h, endingAfter: [10, 10.004])
    h.scheduler.advance(to: epoch.addingTimeInterval(10))
    let commits = h.repository.commitCount
    try startTrials(h, endingAfter: [100])
    #expect(h.repository.commitCount - commits == 1)
    #expect(try undelivered(h).isEmpty)
    #expect(!h.scheduler.pending.contains { $0.label == "record deliveries" })
  }

  @Test func crash_BeforeTheDeliveriesAreRecorded_DeliversThemAgainWithTheirIDs() throws {
    let repository = InMemoryTrialRepository()
    let first = try Harness.started(repository: repository, ids: [1, 2, 3])
    try startTrials(first, endingAfter: [10, 10.002, 10.004])
    first.scheduler.advance(to: epoch.addingTimeInterval(10.002))
    let delivered = first.sink.ids
    #expect(delivered.count == 2)
    // Killed here: no stop, nothing more written. The first delivery rode in the second
    // wake's commit; the second waited for the third wake's, which never came.
    #expect(try repository.outbox().map(\.id) == [delivered[1]])

    let second = Harness(repository: repository, scheduler: TestScheduler(now: epoch.addingTimeInterval(11)))
    let report = try second.engine.start()
    #expect(report.redelivered == 1 && report.caughtUp == 1)
    #expect(second.sink.ids.first == delivered[1], "delivered again with its id")
    #expect(second.sink.ids.count == 2, "and the third, late; nothing fired twice")
    #expect(Set(delivered + second.sink.ids).count == 3)
    second.engine.stop()
    #expect(try repository.outbox().isEmpty, "the last write records them")
  }

  @Test func stop_RecordsTheDeliveries_InItsLastWrite() throws {
    let h = try Harness.started(ids: [1, 2])
    try startTrials(h, endingAfter: [10, 10.005])
    h.scheduler.advance(to: epoch.addingTimeInterval(10))
    #expect(try undelivered(h).count == 1)
    h.engine.stop()
    #expect(try undelivered(h).isEmpty)
    h.scheduler.expectNoPendingActions()
  }
}
