import FoundationEssentials
import Testing
import TrialCore

private let epoch = Date(timeIntervalSince1970: 1_800_000_000)
private func at(_ seconds: Double) -> Date { epoch.addingTimeInterval(seconds) }
private func cursor(_ sequence: UInt64) -> EventCursor { EventCursor(sequence) }

/// `WebhookQueue`: which events go when, and what must be written for it to hold across a restart.
@Suite struct WebhookQueueTests {
  /// A queue that read events 1...count, each of subject `subjects[i % subjects.count]`, all wanted
  /// but those in `unwanted`.
  private func queue(
    _ count: UInt64, subjects: [String] = ["a"], unwanted: Set<UInt64> = [],
    ordering: WebhookEndpoint.Ordering = .none, remembered: [WebhookPendingEvent] = [], position: UInt64 = 0
  ) -> WebhookQueue {
    var queue = WebhookQueue(
      endpoint: "billing", position: cursor(position), remembered: remembered, ordering: ordering)
    for sequence in (position + 1)...(position + count) {
      _ = queue.read(
        cursor: cursor(sequence), subject: subjects[Int(sequence - 1) % subjects.count],
        wanted: !unwanted.contains(sequence), now: at(0))
    }
    return queue
  }

  @Test func freshEvents_GoAtOnce_AndDeliveriesMoveThePositionOverUnwantedOnes() {
    var queue = queue(4, unwanted: [2, 4])
    #expect(queue.position == cursor(0))
    #expect(queue.nextDue() == at(0))
    let taken = queue.takeDue(now: at(0), limit: 10)
    #expect(taken.map(\.cursor) == [cursor(1), cursor(3)])
    #expect(queue.nextDue() == nil, "both are out")
    var change = queue.delivered(cursor(1))
    #expect(change.position == cursor(2), "over the unwanted 2, up to the unsettled 3")
    #expect(change.put.isEmpty)
    change = queue.delivered(cursor(3))
    #expect(change.position == cursor(4))
    #expect(queue.backlog == 0)
    #expect(queue.delivered(cursor(3)).isEmpty, "a second outcome of a settled event changes nothing")
  }

  @Test func aFailingEvent_HoldsBackNoOther_AndThePositionWaitsForIt() {
    var queue = queue(3)
    _ = queue.takeDue(now: at(0), limit: 10)
    let failed = queue.failed(cursor(1), retryAt: at(5))
    #expect(
      failed.put == [
        WebhookPendingEvent(endpoint: "billing", cursor: cursor(1), attempts: 1, nextAttemptAt: at(5))
      ])
    let second = queue.delivered(cursor(2))
    #expect(second.position == nil)
    #expect(
      second.put == [
        WebhookPendingEvent(endpoint: "billing", cursor: cursor(2), attempts: 1, nextAttemptAt: nil)
      ])
    _ = queue.delivered(cursor(3))
    #expect(queue.nextDue() == at(5))
    #expect(queue.takeDue(now: at(4), limit: 10).isEmpty)
    let retry = queue.takeDue(now: at(5), limit: 10)
    #expect(retry.map(\.cursor) == [cursor(1)])
    #expect(retry.first?.attempts == 1)
    #expect(queue.delivered(cursor(1)).position == cursor(3), "past every event delivered ahead of it")
  }

  @Test func orderingBySubject_HoldsBackOnlyTheFailingSubject() {
    var queue = queue(4, subjects: ["a", "b"], ordering: .subject)
    #expect(queue.takeDue(now: at(0), limit: 10).map(\.cursor) == [cursor(1), cursor(2)])
    _ = queue.failed(cursor(1), retryAt: at(60))
    _ = queue.delivered(cursor(2))
    #expect(queue.takeDue(now: at(1), limit: 10).map(\.cursor) == [cursor(4)], "b goes on; a's 3 waits for 1")
    _ = queue.delivered(cursor(4))
    #expect(queue.nextDue() == at(60))
    #expect(queue.takeDue(now: at(60), limit: 10).map(\.cursor) == [cursor(1)])
    _ = queue.delivered(cursor(1))
    #expect(queue.takeDue(now: at(60), limit: 10).map(\.cursor) == [cursor(3)], "then a's next, at once")
    #expect(queue.delivered(cursor(3)).position == cursor(4))
  }

  @Test func aRestart_KeepsAttemptsAndTimes_AndSendsNoDeliveredEventAgain() {
    let remembered = [
      WebhookPendingEvent(endpoint: "billing", cursor: cursor(6), attempts: 3, nextAttemptAt: at(900)),
      WebhookPendingEvent(endpoint: "billing", cursor: cursor(7), attempts: 1, nextAttemptAt: nil),
      WebhookPendingEvent(endpoint: "billing", cursor: cursor(5), attempts: 2, nextAttemptAt: nil),
    ]
    var queue = queue(3, remembered: remembered, position: 5)
    #expect(queue.backlog == 2, "6 failing, 8 fresh; 7 delivered before the restart")
    #expect(queue.takeDue(now: at(0), limit: 10).map(\.cursor) == [cursor(8)])
    #expect(queue.attempts(of: cursor(6)) == 3)
    #expect(queue.nextDue() == at(900))
    _ = queue.delivered(cursor(8))
    #expect(queue.takeDue(now: at(900), limit: 10).map(\.attempts) == [3])
    #expect(queue.delivered(cursor(6)).position == cursor(8))
  }

  @Test func anAttemptReturned_GoesAgainAtOnce() {
    var queue = queue(2)
    _ = queue.takeDue(now: at(0), limit: 1)
    #expect(queue.inFlight == 1)
    queue.returnAll(now: at(3))
    #expect(queue.inFlight == 0)
    #expect(queue.takeDue(now: at(3), limit: 10).map(\.cursor) == [cursor(1), cursor(2)])
  }

  @Test func aFullQueue_WantsNoMore_UntilEventsSettle() {
    var queue = WebhookQueue(endpoint: "billing", position: .origin, remembered: [], limit: 2)
    _ = queue.read(cursor: cursor(1), subject: "a", wanted: true, now: at(0))
    #expect(queue.wantsMore)
    _ = queue.read(cursor: cursor(2), subject: "a", wanted: true, now: at(0))
    #expect(!queue.wantsMore)
    _ = queue.takeDue(now: at(0), limit: 1)
    _ = queue.delivered(cursor(1))
    #expect(queue.wantsMore)
    #expect(queue.oldest == cursor(2))
  }
}
