import Foundation
import Testing
import TrialCore
import TrialTesting

/// The trial operations written once over `TrialRepository`, on the in-memory repository.
struct TrialBookTests {
  struct InjectedFailure: Error, Equatable {}

  let now = Date(timeIntervalSinceReferenceDate: 760_000_000)
  let repository = InMemoryTrialRepository()

  func days(_ count: Double) -> Date { now.addingTimeInterval(count * 86_400) }

  @discardableResult
  func start(
    _ subject: String, days length: Double = 5, reminders: ReminderSchedule = .default,
    ids: any TrialIDGenerator = RandomTrialIDGenerator(), at date: Date? = nil
  ) throws -> (trial: Trial, skipped: [DueEvent]) {
    let when = date ?? now
    return try repository.startTrial(
      subject: subject, endDate: when.addingTimeInterval(length * 86_400), reminders: reminders, now: when,
      ids: ids)
  }

  func stored(_ id: TrialID) throws -> Trial? {
    try repository.read { try $0.trial(id) }
  }

  func storedTrials() throws -> [Trial] {
    try repository.read { try $0.allTrials() }
  }

  func ledger(_ id: EventID) throws -> LedgerEntry? {
    try repository.read { try $0.ledgerEntry(id) }
  }

  @Test func startTrial_StoresAnActiveTrial() throws {
    let ids = SequenceTrialIDGenerator([0x42])
    let (trial, skipped) = try start("acme-42", ids: ids)
    #expect(skipped.isEmpty)
    #expect(trial.id == TrialID(0x42))
    #expect(trial.subject == "acme-42")
    #expect(trial.state == .active)
    #expect(trial.revision == 1)
    #expect(trial.period == TrialPeriod(startDate: now, endDate: days(5)))
    #expect(try stored(trial.id) == trial)
    #expect(try repository.read { try $0.activeTrialID(subject: "acme-42") } == trial.id)
    #expect(repository.commitCount == 1)
  }

  @Test func startTrial_IdTaken_RetriesWithTheNextId() throws {
    let ids = SequenceTrialIDGenerator([7, 7, 9])
    let first = try start("first", ids: ids).trial
    let second = try start("second", ids: ids).trial
    #expect(first.id == TrialID(7))
    #expect(second.id == TrialID(9))
    #expect(ids.handedOut == [TrialID(7), TrialID(7), TrialID(9)])
    #expect(try stored(TrialID(7))?.subject == "first")
    #expect(try stored(TrialID(9))?.subject == "second")
  }

  @Test func startTrial_EveryIdTaken_GivesUpAfterTheAttemptLimit() throws {
    let ids = SequenceTrialIDGenerator([7], fallbackStart: 0)
    try start("first", ids: ids)
    let always7 = SequenceTrialIDGenerator(Array(repeating: 7, count: 100))
    #expect(throws: TrialError(.idSpaceExhausted(attempts: TrialBook.idAttempts))) {
      try start("second", ids: always7)
    }
    #expect(always7.handedOut.count == TrialBook.idAttempts)
  }

  @Test func startTrial_SubjectWithAnActiveTrial_IsRefusedNamingTheExistingTrial() throws {
    let existing = try start("acme-42", ids: SequenceTrialIDGenerator([0xBEEF])).trial
    let error = #expect(throws: TrialError.self) {
      try start("acme-42", ids: SequenceTrialIDGenerator([0xCAFE]))
    }
    #expect(error?.code == .subjectAlreadyActive(subject: "acme-42", existing: existing.id))
    #expect(error?.description.contains("000000000000beef") == true)
    #expect(try stored(TrialID(0xCAFE)) == nil)
  }

  @Test func startTrial_SubjectWhoseTrialEnded_MayStartAgain() throws {
    let first = try start("acme-42").trial
    _ = try repository.endTrial(first.id, outcome: .converted, now: days(1))
    #expect(try repository.read { try $0.activeTrialID(subject: "acme-42") } == nil)
    let second = try start("acme-42", at: days(2)).trial
    #expect(second.id != first.id)
    #expect(try repository.read { try $0.activeTrialID(subject: "acme-42") } == second.id)
  }

  @Test func startTrial_BadInput_IsRefusedNamingTheField() throws {
    #expect(throws: TrialError.invalid(.subject, "subject must not be empty")) { try start("") }
    #expect(throws: TrialError.invalid(.end, "the end must lie in the future")) {
      try start("acme", days: 0)
    }
    #expect(try storedTrials().isEmpty)
  }

  @Test func startTrial_RemindersAlreadyDue_AreRecordedAsSkippedAndDelivered() throws {
    let (trial, skipped) = try start("short", days: 2)
    #expect(skipped.map(\.event) == [trial.events[0]])
    #expect(skipped.map(\.disposition) == [.skip(.alreadyDueAtStart)])
    let entry = try #require(try ledger(trial.events[0].id))
    #expect(entry.outcome == .skipped(.alreadyDueAtStart))
    #expect(entry.isDelivered)
    #expect(try repository.outbox().isEmpty)
  }

  @Test func failingCommit_ChangesNothing() throws {
    let trial = try start("acme").trial
    let commits = repository.commitCount

    repository.failNextCommit = InjectedFailure()
    #expect(throws: InjectedFailure.self) { try start("other") }
    #expect(try repository.read { try $0.activeTrialID(subject: "other") } == nil)

    var planner = Planner()
    planner.add(trial, now: now)
    let due = planner.takeDue(at: days(5))
    repository.failNextCommit = InjectedFailure()
    #expect(throws: InjectedFailure.self) { try repository.commit(due, now: days(5)) }
    #expect(try stored(trial.id)?.state == .active)
    #expect(try due.allSatisfy { try ledger($0.event.id) == nil })
    #expect(try repository.outbox().isEmpty)
    #expect(try repository.read { try $0.lastSeenWallTime() } == nil)

    repository.failNextCommit = InjectedFailure()
    #expect(throws: InjectedFailure.self) { try repository.extendTrial(trial.id, to: days(9), now: now) }
    #expect(try stored(trial.id) == trial)
    #expect(repository.commitCount == commits)

    // The failure is used up: the same commit now goes through.
    #expect(try repository.commit(due, now: days(5)).count == 3)
  }

  @Test func commit_IsExactlyOnce() throws {
    let trial = try start("acme").trial
    var planner = Planner()
    planner.add(trial, now: now)
    let first = planner.takeDue(at: days(2))
    #expect(first.count == 1)

    let recorded = try repository.commit(first, now: days(2))
    #expect(recorded.map(\.id) == [trial.events[0].id])
    #expect(recorded.first?.fired == true)
    #expect(try repository.commit(first, now: days(2)).isEmpty, "the same event is recorded once")
    #expect(try repository.commit(first + first, now: days(2)).isEmpty)
    #expect(try repository.outbox().map(\.id) == [trial.events[0].id])
    #expect(try repository.read { try $0.lastSeenWallTime() } == days(2))
  }

  @Test func commit_SameEventTwiceInOneBatch_IsRecordedOnce() throws {
    let trial = try start("acme").trial
    var planner = Planner()
    planner.add(trial, now: now)
    let due = planner.takeDue(at: days(2))
    #expect(try repository.commit(due + due, now: days(2)).map(\.id) == [trial.events[0].id])
  }

  @Test func commit_OldRevisionEvents_AreNotRecorded() throws {
    let trial = try start("acme").trial
    var planner = Planner()
    planner.add(trial, now: now)
    // Taken under revision 1, but the trial was extended before the commit.
    let stale = planner.takeDue(at: days(2))
    let (extended, _) = try repository.extendTrial(trial.id, to: days(10), now: days(1))
    #expect(extended.revision == 2)
    #expect(try repository.commit(stale, now: days(2)).isEmpty)
    #expect(try ledger(stale[0].event.id) == nil)
  }

  @Test func commit_EndedTrialEvents_AreNotRecorded() throws {
    let trial = try start("acme").trial
    var planner = Planner()
    planner.add(trial, now: now)
    let due = planner.takeDue(at: days(6))
    let ended = try repository.endTrial(trial.id, outcome: .cancelled, now: days(1))
    #expect(ended.state == .cancelled)
    #expect(ended.endedAt == days(1))
    #expect(try repository.commit(due, now: days(6)).isEmpty)
    #expect(try stored(trial.id)?.state == .cancelled)
    #expect(try repository.outbox().isEmpty)
  }

  @Test func commit_Expiry_MovesTheTrialToExpired() throws {
    let trial = try start("acme").trial
    var planner = Planner(policy: CatchUpPolicy(reminders: .latest))
    planner.add(trial, now: now)
    let due = planner.takeDue(at: days(6))
    let recorded = try repository.commit(due, now: days(6))
    #expect(recorded.map(\.id) == trial.events.map(\.id))
    #expect(
      recorded.map(\.entry.outcome) == [.skipped(.supersededByExpiry), .skipped(.supersededByExpiry), .fired])
    #expect(recorded.last?.entry.lateness == .days(1))
    #expect(recorded.last?.entry.isLate == true)
    let expired = try #require(try stored(trial.id))
    #expect(expired.state == .expired)
    #expect(expired.endedAt == days(6))
    #expect(try repository.read { try $0.activeTrialID(subject: "acme") } == nil)
  }

  @Test func outbox_HoldsUndeliveredEntriesUntilMarkedDelivered() throws {
    let first = try start("a", ids: SequenceTrialIDGenerator([1])).trial
    let second = try start("b", days: 4, ids: SequenceTrialIDGenerator([2])).trial
    var planner = Planner(policy: CatchUpPolicy(reminders: .all))
    planner.add(first, now: now)
    planner.add(second, now: now)
    _ = try repository.commit(planner.takeDue(at: days(2.5)), now: days(2.5))
    let outbox = try repository.outbox()
    #expect(outbox.map(\.id) == [first.events[0].id, second.events[0].id])
    #expect(outbox.allSatisfy { !$0.isDelivered })

    try repository.markDelivered([second.events[0].id], at: days(2.6))
    #expect(try repository.outbox().map(\.id) == [first.events[0].id])
    #expect(try ledger(second.events[0].id)?.deliveredAt == days(2.6))

    // Marking again, or marking unknown ids, changes nothing.
    try repository.markDelivered([second.events[0].id, EventID("00000000000000ff-r1-expiry")!], at: days(3))
    #expect(try ledger(second.events[0].id)?.deliveredAt == days(2.6))
    try repository.markDelivered(outbox.map(\.id), at: days(3))
    #expect(try repository.outbox().isEmpty)
  }

  @Test func extendAndEnd_RefuseUnknownAndEndedTrials() throws {
    let trial = try start("acme", ids: SequenceTrialIDGenerator([5])).trial
    #expect(throws: TrialError.notFound(id: TrialID(6))) {
      try repository.extendTrial(TrialID(6), to: days(9), now: now)
    }
    #expect(throws: TrialError.invalid(.end, "the new end must lie in the future")) {
      try repository.extendTrial(trial.id, to: now, now: now)
    }
    _ = try repository.endTrial(trial.id, outcome: .converted, now: days(1))
    let error = #expect(throws: TrialError.self) {
      try repository.endTrial(trial.id, outcome: .cancelled, now: days(2))
    }
    #expect(error?.code == .notActive(trial.id, .converted))
    #expect(error?.description == "trial 0000000000000005 is not active (it is converted)")
    #expect(throws: TrialError(.notActive(trial.id, .converted))) {
      try repository.extendTrial(trial.id, to: days(9), now: days(2))
    }
  }

  @Test func extend_RemindersOfTheNewRevisionAlreadyDue_AreRecordedAsSkipped() throws {
    let trial = try start("acme").trial
    let (extended, skipped) = try repository.extendTrial(trial.id, to: days(6), now: days(4))
    #expect(skipped.map(\.event) == [extended.events[0]])
    #expect(skipped.map(\.disposition) == [.skip(.alreadyDueAtExtension)])
    #expect(try ledger(extended.events[0].id)?.outcome == .skipped(.alreadyDueAtExtension))
    #expect(try stored(trial.id) == extended)
  }

  @Test func restore_RebuildsThePlannerFromTheLedger() throws {
    let policy = CatchUpPolicy(reminders: .all)
    var live = Planner(policy: policy)
    let ids = SequenceTrialIDGenerator([1, 2, 3, 4])
    let a = try start("a", ids: ids).trial
    let b = try start("b", days: 2, ids: ids).trial  // its 3-day reminder is skipped at start
    let c = try start("c", days: 10, ids: ids).trial
    let d = try start("d", ids: ids).trial
    for trial in [a, b, c, d] { live.add(trial, now: now) }
    _ = try repository.extendTrial(c.id, to: days(12), now: days(1))
    live.add(try #require(try stored(c.id)), now: days(1), reason: .alreadyDueAtExtension)
    _ = try repository.endTrial(d.id, outcome: .cancelled, now: days(1))
    live.cancel(d.id)
    _ = try repository.commit(live.takeDue(at: days(2.5)), now: days(2.5))

    var restored = Planner(policy: policy)
    #expect(try repository.restore(into: &restored).trials == 4)
    #expect(restored.pendingEventCount == live.pendingEventCount)
    for trial in [a, b, c, d] {
      #expect(restored.pendingEvents(of: trial.id) == live.pendingEvents(of: trial.id))
    }
    #expect(restored.pendingEvents(of: b.id).isEmpty, "b expired on day 2")
    #expect(restored.pendingEvents(of: d.id).isEmpty)
    #expect(restored.nextEvent == live.nextEvent)
  }

  @Test func restore_EventTakenButNotCommitted_FiresAgainLate() throws {
    let trial = try start("acme").trial
    var live = Planner(policy: CatchUpPolicy(reminders: .all))
    live.add(trial, now: now)
    // Taken on day 2, but the process died before the commit.
    #expect(live.takeDue(at: days(2)).count == 1)

    var restored = Planner(policy: CatchUpPolicy(reminders: .all))
    try repository.restore(into: &restored)
    #expect(restored.pendingEvents(of: trial.id) == trial.events)
    let due = restored.takeDue(at: days(3))
    #expect(due.map(\.event) == [trial.events[0]])
    #expect(due.first?.isLate == true)
    #expect(try repository.commit(due, now: days(3)).count == 1)
  }
}
