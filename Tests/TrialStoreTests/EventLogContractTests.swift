import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Starts one trial per instant (ids from `firstID`, no reminders, ending then) and fires the
/// expiries, each taken at its instant, in one commit each: one logged event per instant.
@discardableResult
func fireExpiries(_ repository: any TrialRepository, at instants: [Date], firstID: UInt64 = 1) throws
  -> [LoggedEvent]
{
  var logged: [LoggedEvent] = []
  for (index, instant) in instants.enumerated() {
    let id = firstID + UInt64(index)
    let trial = try repository.startTrial(
      subject: "log-\(id)", endDate: instant, reminders: .none, now: origin.addingTimeInterval(-day),
      ids: SequenceTrialIDGenerator([id])
    ).trial
    let expiry = DueEvent(event: trial.events[0], takenAt: instant, disposition: .fire, isLate: false)
    logged += try repository.commit([expiry], now: instant)
  }
  return logged
}

/// Every event of the log, in cursor order.
func loggedEvents(_ repository: any TrialRepository, after: EventCursor = .origin) throws -> [LoggedEvent] {
  try repository.read { txn in
    var events: [LoggedEvent] = []
    try txn.scanEvents(after: after) {
      events.append($0)
      return true
    }
    return events
  }
}

/// The event log and its consumers, through the repository's primitives: the same in the file
/// store and in memory.
@Suite struct EventLogContractTests {
  @Test(arguments: StoreKind.allCases)
  func commit_LogsEachEventUnderConsecutiveCursors_AndTheLogSurvivesReopen(kind: StoreKind) throws {
    let subject = try Subject(kind)
    #expect(try subject.repository.read { try $0.eventLogBounds() } == EventLogBounds())
    let trials = try startTrials(subject.repository, count: 6)
    // The 3-day reminders of the trials ending within 3 days were due at their start.
    let atStart = try loggedEvents(subject.repository)
    #expect(atStart.map(\.entry.outcome) == [.skipped(.alreadyDueAtStart), .skipped(.alreadyDueAtStart)])
    var planner = Planner(policy: CatchUpPolicy(reminders: .all))
    for trial in trials { planner.add(trial, now: origin) }
    var recorded: [LoggedEvent] = []
    for step in 1...8 {
      let now = origin.addingTimeInterval(Double(step) * day)
      recorded += try subject.repository.commit(planner.takeDue(at: now), now: now)
    }
    #expect(recorded.count == 16)
    #expect(atStart.map(\.cursor.sequence) + recorded.map(\.cursor.sequence) == Array(1...18))
    let report = try subject.reopen()
    #expect(report?.isClean != false, "\(report?.problems.prefix(3) ?? [])")
    #expect(try loggedEvents(subject.repository) == atStart + recorded)
    let bounds = try subject.repository.read { try $0.eventLogBounds() }
    #expect(bounds == EventLogBounds(last: EventCursor(18), prunedThrough: .origin, count: 18))
    #expect(bounds.first == EventCursor(1))
    // Each logged event is its ledger entry (as taken, without the delivery) and its trial's subject.
    for event in recorded {
      #expect(try subject.repository.read { try $0.ledgerEntry(event.id) } == event.entry)
      #expect(event.subject == trials.first { $0.id == event.id.trialID }?.subject)
    }
    // Appending after a reopen goes on from the last cursor.
    let more = try fireExpiries(subject.repository, at: [origin.addingTimeInterval(9 * day)], firstID: 100)
    #expect(more.map(\.cursor) == [EventCursor(19)])
  }

  @Test(arguments: StoreKind.allCases)
  func commit_ReturnsLoggedEventsInTheOrderGiven_WithIncreasingCursors(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let trials = try startTrials(subject.repository, count: 4)
    let before = try subject.repository.read { try $0.eventLogBounds() }.last.sequence
    let now = origin.addingTimeInterval(20 * day)
    // Expiries, most of them late, given against id order; the second of trial 3 is a repeat.
    let order = [3, 0, 2, 1, 3]
    let due = order.map {
      DueEvent(event: trials[$0].events.last!, takenAt: now, disposition: .fire, isLate: true)
    }
    let recorded = try subject.repository.commit(due, now: now)
    #expect(recorded.map(\.id) == order.dropLast().map { trials[$0].events.last!.id })
    #expect(recorded.map(\.cursor) == (1...4).map { EventCursor(before + $0) })
    #expect(recorded.map(\.subject) == order.dropLast().map { trials[$0].subject })
    #expect(try loggedEvents(subject.repository, after: EventCursor(before)) == recorded)
    // Nothing already in the ledger is logged again, and no cursor is spent on it.
    #expect(try subject.repository.commit(due, now: now).isEmpty)
    #expect(try subject.repository.read { try $0.eventLogBounds() }.last == EventCursor(before + 4))
  }

  @Test(arguments: StoreKind.allCases)
  func remindersSkippedAtStartAndAtExtension_AreLogged(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let started = try subject.start(days: 2, id: 1)
    #expect(started.skipped.count == 1)
    let extended = try subject.repository.extendTrial(
      TrialID(1), to: origin.addingTimeInterval(day / 2), now: origin.addingTimeInterval(60))
    #expect(extended.skipped.count == 2)
    try subject.reopen()
    let log = try loggedEvents(subject.repository)
    #expect(log.map(\.id) == (started.skipped + extended.skipped).map(\.event.id))
    #expect(log.map(\.cursor.sequence) == [1, 2, 3])
    #expect(
      log.map(\.entry.outcome) == [
        .skipped(.alreadyDueAtStart), .skipped(.alreadyDueAtExtension), .skipped(.alreadyDueAtExtension),
      ])
    #expect(log.allSatisfy { $0.subject == "acme-1" && $0.entry.deliveredAt == nil })
    // In the ledger they are delivered at once; the log keeps no delivery time.
    #expect(try subject.repository.read { try $0.ledgerEntry(log[0].id) }?.deliveredAt == origin)
  }

  @Test(arguments: StoreKind.allCases)
  func appendEvent_KeepsEveryKindOfEntryExactly_ButNotItsDelivery(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let reminders = try ReminderSchedule([.days(3), .milliseconds(90_125)])
    let trial = Trial(
      id: TrialID(0xfeed), subject: "ünïcödé ✓",
      period: TrialPeriod(startDate: origin, endDate: origin.addingTimeInterval(5 * day)),
      reminders: reminders)
    let taken = origin.addingTimeInterval(4.2 * day + 0.000_123)
    let outcomes: [LedgerEntry.Outcome] = [
      .skipped(.supersededByReminder(trial.events[1].id)),
      .skipped(.beyondGrace(lateness: .milliseconds(12_500), grace: .hours(1))), .fired,
      .skipped(.alreadyDueAtStart), .skipped(.alreadyDueAtExtension), .skipped(.supersededByExpiry),
    ]
    let entries = outcomes.enumerated().map { index, outcome in
      LedgerEntry(
        event: trial.events[index % 3], outcome: outcome, takenAt: taken, isLate: index % 2 == 0,
        deliveredAt: index == 2 ? taken : nil)
    }
    let appended = try subject.repository.write { txn in
      try entries.map { try txn.appendEvent($0, attributes: trial.attributes) }
    }
    try subject.reopen()
    let log = try loggedEvents(subject.repository)
    #expect(log == appended)
    #expect(
      log.map(\.entry)
        == entries.map {
          LedgerEntry(event: $0.event, outcome: $0.outcome, takenAt: taken, isLate: $0.isLate)
        })
    #expect(log.allSatisfy { $0.subject == "ünïcödé ✓" })
  }

  @Test(arguments: StoreKind.allCases)
  func pruneEvents_RemovesTheOldest_AndNeverMovesBack(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let all = try fireExpiries(
      subject.repository, at: (1...6).map { origin.addingTimeInterval(Double($0) * day) })
    func bounds() throws -> EventLogBounds { try subject.repository.read { try $0.eventLogBounds() } }
    #expect(try subject.repository.write { try $0.pruneEvents(through: EventCursor(2)) } == 2)
    #expect(try bounds() == EventLogBounds(last: EventCursor(6), prunedThrough: EventCursor(2), count: 4))
    #expect(try bounds().first == EventCursor(3))
    // Through a cursor already pruned: nothing, and the bound stays.
    #expect(try subject.repository.write { try $0.pruneEvents(through: EventCursor(1)) } == 0)
    #expect(try bounds().prunedThrough == EventCursor(2))
    try subject.reopen()
    #expect(try loggedEvents(subject.repository) == Array(all.dropFirst(2)))
    // Beyond the newest: everything, and the bound stops at the newest.
    #expect(try subject.repository.write { try $0.pruneEvents(through: EventCursor(99)) } == 4)
    #expect(try bounds() == EventLogBounds(last: EventCursor(6), prunedThrough: EventCursor(6), count: 0))
    #expect(try bounds().first == nil)
    #expect(try loggedEvents(subject.repository).isEmpty)
    // Cursors are never reused.
    let next = try fireExpiries(subject.repository, at: [origin.addingTimeInterval(7 * day)], firstID: 50)
    #expect(next.map(\.cursor) == [EventCursor(7)])
    try subject.reopen()
    #expect(try bounds() == EventLogBounds(last: EventCursor(7), prunedThrough: EventCursor(6), count: 1))
    #expect(try loggedEvents(subject.repository) == next)
  }

  @Test(arguments: StoreKind.allCases)
  func scanEvents_AfterACursor_StartsRightAfterItUntilStopped(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let all = try fireExpiries(
      subject.repository, at: (1...5).map { origin.addingTimeInterval(Double($0) * day) })
    _ = try subject.repository.write { try $0.pruneEvents(through: EventCursor(1)) }
    func scan(after: UInt64, limit: Int = 100) throws -> [UInt64] {
      try subject.repository.read { txn in
        var seen: [UInt64] = []
        try txn.scanEvents(after: EventCursor(after)) {
          seen.append($0.cursor.sequence)
          return seen.count < limit
        }
        return seen
      }
    }
    #expect(try scan(after: 0) == [2, 3, 4, 5])
    #expect(try scan(after: 2) == [3, 4, 5])
    #expect(try scan(after: 2, limit: 2) == [3, 4])
    #expect(try scan(after: 5) == [])
    #expect(try scan(after: 77) == [])
    #expect(try scan(after: UInt64.max) == [])
    #expect(try loggedEvents(subject.repository, after: EventCursor(3)) == Array(all.suffix(2)))
  }

  @Test(arguments: StoreKind.allCases)
  func consumers_ArePutReadScannedAndRemoved(kind: StoreKind) throws {
    let subject = try Subject(kind)
    try fireExpiries(subject.repository, at: [origin.addingTimeInterval(day)])
    let consumers = [
      ConsumerRecord(
        name: "mailer", acknowledged: EventCursor(1), createdAt: origin.addingTimeInterval(0.125)),
      ConsumerRecord(
        name: "billing.sync@host:1", acknowledged: .origin, createdAt: origin,
        acknowledgedAt: origin.addingTimeInterval(0.5),
        lost: 12, lostAt: origin.addingTimeInterval(3 * day + 0.001)),
      ConsumerRecord(name: "audit_2", acknowledged: .origin, createdAt: origin, lost: UInt64.max),
    ]
    try subject.repository.write { txn in for consumer in consumers { try txn.putConsumer(consumer) } }
    try subject.reopen()
    for consumer in consumers {
      #expect(try subject.repository.read { try $0.consumer(named: consumer.name) } == consumer)
    }
    #expect(try subject.repository.read { try $0.consumer(named: "nobody") } == nil)
    #expect(try subject.repository.read { try $0.consumer(named: "") } == nil)
    let sorted = consumers.sorted { $0.name < $1.name }
    #expect(try subject.repository.read { try EventFeed.consumers(in: $0) } == sorted)
    let firstTwo = try subject.repository.read { txn in
      var names: [String] = []
      try txn.scanConsumers {
        names.append($0.name)
        return names.count < 2
      }
      return names
    }
    #expect(firstTwo == sorted.prefix(2).map(\.name))
    // Replaced whole.
    var moved = consumers[0]
    moved.acknowledged = EventCursor(1)
    moved.acknowledgedAt = origin.addingTimeInterval(day)
    try subject.repository.write { try $0.putConsumer(moved) }
    #expect(try subject.repository.read { try $0.consumer(named: "mailer") } == moved)
    #expect(try subject.repository.write { try $0.removeConsumer(named: "mailer") })
    #expect(try !subject.repository.write { try $0.removeConsumer(named: "mailer") })
    try subject.reopen()
    #expect(
      try subject.repository.read { try EventFeed.consumers(in: $0) }.map(\.name) == [
        "audit_2", "billing.sync@host:1",
      ])
  }

  @Test(arguments: StoreKind.allCases)
  func throwInsideAWrite_LeavesTheLogAndTheConsumersAsTheyWere(kind: StoreKind) throws {
    let subject = try Subject(kind)
    try fireExpiries(
      subject.repository, at: [origin.addingTimeInterval(day), origin.addingTimeInterval(2 * day)])
    try subject.repository.write { txn in
      _ = try EventFeed.createConsumer(named: "mailer", after: .origin, now: origin, in: txn)
    }
    let before = try RepositorySnapshot(subject.repository)
    struct Stop: Error {}
    #expect(throws: Stop.self) {
      try subject.repository.write { txn in
        _ = try txn.pruneEvents(through: EventCursor(1))
        _ = try txn.appendEvent(before.events[0].entry, attributes: TrialAttributes(subject: "again"))
        _ = try txn.removeConsumer(named: "mailer")
        try txn.putConsumer(ConsumerRecord(name: "other", acknowledged: .origin, createdAt: origin))
        throw Stop()
      }
    }
    #expect(try RepositorySnapshot(subject.repository).difference(from: before) == nil)
    #expect(
      try fireExpiries(subject.repository, at: [origin.addingTimeInterval(3 * day)], firstID: 9).map(\.cursor)
        == [EventCursor(3)])
  }
}
