import Foundation
import TestSupport
import Testing
import TrialCore
import TrialPostgres
import TrialPostgresTesting
import TrialTesting

@testable import TrialStore

/// A repository under test; for the file store, with its directory and a way to reopen it.
final class Subject {
  let kind: StoreKind
  private let directory: TemporaryDirectory?
  private let shared: PostgresTestStore?
  private(set) var repository: any TrialRepository

  init(_ kind: StoreKind) throws {
    self.kind = kind
    switch kind {
    case .lmdb:
      let directory = try TemporaryDirectory("contract")
      self.directory = directory
      shared = nil
      repository = try LMDBTrialRepository(directory: directory.appending("store"))
    case .memory:
      directory = nil
      shared = nil
      repository = InMemoryTrialRepository()
    case .postgres:
      directory = nil
      let store = try PostgresTestStore()
      shared = store
      repository = store.repository
    }
  }

  /// Starts a trial of `name` at `origin`, ending `days` later, with the id `id`.
  @discardableResult
  func start(
    _ name: String = "acme-1", days: Double, reminders: ReminderSchedule = .default, id: UInt64
  ) throws -> (trial: Trial, skipped: [DueEvent]) {
    try repository.startTrial(
      subject: name, endDate: origin.addingTimeInterval(days * day), reminders: reminders, now: origin,
      ids: SequenceTrialIDGenerator([id]))
  }

  /// Closes and opens the file store again (the in-memory one stays as it is); in between,
  /// checks it as `trialwatchd --verify-store` does and returns what that found.
  @discardableResult
  func reopen() throws -> StoreCheckReport? {
    if let shared {
      // A new connection, as a restarted node has.
      repository = try PostgresTrialRepository(
        conninfo: shared.conninfo, node: shared.repository.node, shards: shared.repository.shards,
        ownership: shared.repository.ownership, refusesEarlyFires: false)
      return nil
    }
    guard let directory, let store = repository as? LMDBTrialRepository else { return nil }
    store.close()
    // The reader is closed (its registration released) before the store opens again.
    let reader = try LMDBStoreReader(directory: directory.appending("store"))
    let report = try reader.verify()
    reader.close()
    repository = try LMDBTrialRepository(directory: directory.appending("store"))
    return report
  }
}

/// The repository contract, run against the LMDB file store, the fleet's PostgreSQL store and
/// the in-memory repository alike: all must behave the same.
@Suite struct RepositoryContractTests {
  @Test(arguments: StoreKind.allCases)
  func takenFirstID_LeadsToTheSecond(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let first = try subject.start(days: 5, id: 7)
    #expect(first.trial.id == TrialID(7))
    let ids = SequenceTrialIDGenerator([7, 9])
    let second = try subject.repository.startTrial(
      subject: "acme-2", endDate: origin.addingTimeInterval(5 * day), reminders: .default, now: origin,
      ids: ids)
    #expect(second.trial.id == TrialID(9))
    #expect(ids.handedOut == [TrialID(7), TrialID(9)])
    try subject.reopen()
    #expect(try subject.repository.read { try $0.trial(TrialID(9)) }?.subject == "acme-2")
    #expect(try subject.repository.read { try $0.trial(TrialID(7)) }?.subject == "acme-1")
  }

  @Test(arguments: StoreKind.allCases)
  func secondActiveTrialForASubject_IsRefused_NamingTheExistingTrial(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let end = origin.addingTimeInterval(5 * day)
    let first = try subject.repository.startTrial(
      subject: "acme-42", endDate: end, reminders: .default, now: origin,
      ids: SequenceTrialIDGenerator([0x42]))
    let error = try #require(throws: TrialError.self) {
      try subject.repository.startTrial(
        subject: "acme-42", endDate: end, reminders: .default, now: origin,
        ids: SequenceTrialIDGenerator([0x43]))
    }
    #expect(error.code == .subjectAlreadyActive(subject: "acme-42", existing: first.trial.id))
    #expect(error.description.contains("\(first.trial.id)"))
    #expect(try subject.repository.read { try $0.trial(TrialID(0x43)) } == nil)
    // Once the first ends, the subject is free again.
    try subject.reopen()
    _ = try subject.repository.endTrial(
      first.trial.id, outcome: .converted, now: origin.addingTimeInterval(day))
    #expect(try subject.repository.read { try $0.activeTrialID(subject: "acme-42") } == nil)
    #expect(try subject.repository.read { try $0.latestTrialID(subject: "acme-42") } == first.trial.id)
    #expect(try subject.repository.read { try $0.latestTrialID(subject: "nobody") } == nil)
    let again = try subject.repository.startTrial(
      subject: "acme-42", endDate: end, reminders: .default, now: origin.addingTimeInterval(day),
      ids: SequenceTrialIDGenerator([0x44]))
    #expect(try subject.repository.read { try $0.activeTrialID(subject: "acme-42") } == again.trial.id)
    #expect(try subject.repository.read { try $0.latestTrialID(subject: "acme-42") } == again.trial.id)
  }

  @Test(arguments: StoreKind.allCases)
  func commit_RecordsEachEventExactlyOnce_AndExpiryEndsTheTrial(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let started = try subject.start(days: 5, id: 1)
    var planner = Planner()
    planner.add(started.trial, now: origin)
    let late = origin.addingTimeInterval(6 * day)
    let due = planner.takeDue(at: late)
    #expect(due.count == 3)
    let recorded = try subject.repository.commit(due, now: late)
    #expect(recorded.map(\.id) == due.map(\.event.id))
    try subject.reopen()
    // The same events again: nothing is recorded twice.
    #expect(try subject.repository.commit(due, now: late.addingTimeInterval(1)).isEmpty)
    let trial = try #require(try subject.repository.read { try $0.trial(started.trial.id) })
    #expect(trial.state == .expired)
    #expect(trial.endedAt == late)
    #expect(try subject.repository.read { try $0.activeTrialID(subject: "acme-1") } == nil)
    let entries = try subject.repository.read { try $0.ledgerEntries(trial: started.trial.id) }
    #expect(entries == recorded.map(\.entry).sorted { $0.id < $1.id })
    // Policy `latest`: the 3-day reminder is superseded, the expiry fires.
    #expect(entries.first?.outcome == .skipped(.supersededByExpiry))
    #expect(entries.last?.outcome == .fired)
    #expect(entries.last?.isLate == true)
  }

  @Test(arguments: StoreKind.allCases)
  func eventsOfAnOlderRevision_AreNeverRecorded(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let started = try subject.start(days: 5, reminders: .none, id: 1)
    let oldExpiry = started.trial.events.last!
    _ = try subject.repository.extendTrial(
      started.trial.id, to: origin.addingTimeInterval(9 * day), now: origin)
    let stale = DueEvent(event: oldExpiry, takenAt: oldExpiry.due, disposition: .fire, isLate: false)
    #expect(try subject.repository.commit([stale], now: oldExpiry.due).isEmpty)
    #expect(try subject.repository.read { try $0.trial(started.trial.id) }?.state == .active)
  }

  @Test(arguments: StoreKind.allCases)
  func outbox_HoldsUndeliveredEntries_UntilMarkedDelivered(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let trials = try startTrials(subject.repository, count: 4)
    var planner = Planner(policy: CatchUpPolicy(reminders: .all))
    for trial in trials { planner.add(trial, now: origin) }
    let now = origin.addingTimeInterval(3 * day)
    let recorded = try subject.repository.commit(planner.takeDue(at: now), now: now)
    #expect(recorded.count >= 4)
    #expect(try subject.repository.outbox() == recorded.map(\.entry).sorted { $0.id < $1.id })
    let delivered = Array(recorded.prefix(2).map(\.id))
    try subject.repository.markDelivered(delivered, at: now.addingTimeInterval(5))
    try subject.reopen()
    let outbox = try subject.repository.outbox()
    #expect(outbox.map(\.id) == recorded.dropFirst(2).map(\.id).sorted())
    for id in delivered {
      #expect(
        try subject.repository.read { try $0.ledgerEntry(id) }?.deliveredAt == now.addingTimeInterval(5))
    }
    // Delivering twice keeps the first delivery time.
    try subject.repository.markDelivered(delivered, at: now.addingTimeInterval(60))
    #expect(
      try subject.repository.read { try $0.ledgerEntry(delivered[0]) }?.deliveredAt
        == now.addingTimeInterval(5))
  }

  @Test(arguments: StoreKind.allCases)
  func lastSeenWallTime_IsKept_EvenWhenItGoesBack(kind: StoreKind) throws {
    let subject = try Subject(kind)
    #expect(try subject.repository.read { try $0.lastSeenWallTime() } == nil)
    let later = origin.addingTimeInterval(1234.5678)
    _ = try subject.repository.commit([], now: later)
    try subject.reopen()
    #expect(try subject.repository.read { try $0.lastSeenWallTime() } == later)
    try subject.repository.write { try $0.setLastSeenWallTime(origin) }
    #expect(try subject.repository.read { try $0.lastSeenWallTime() } == origin)
  }

  @Test(arguments: StoreKind.allCases)
  func restore_PlansWhatIsNotInTheLedger_AndCountsByState(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let trials = try startTrials(subject.repository, count: 30)
    _ = try subject.repository.endTrial(trials[0].id, outcome: .cancelled, now: origin)
    _ = try subject.repository.endTrial(trials[1].id, outcome: .converted, now: origin)
    _ = try subject.repository.extendTrial(trials[2].id, to: origin.addingTimeInterval(20 * day), now: origin)
    var live = Planner()
    try subject.repository.restore(into: &live)
    let now = origin.addingTimeInterval(3.5 * day)
    _ = try subject.repository.commit(live.takeDue(at: now), now: now)
    try subject.reopen()

    var restored = Planner()
    var progressCalls: [Int] = []
    let summary = try subject.repository.restore(into: &restored, progressEvery: 10) {
      progressCalls.append($0)
    }
    #expect(summary.trials == 30)
    #expect(progressCalls == [10, 20, 30])
    let snapshot = try RepositorySnapshot(subject.repository)
    #expect(summary.byState[.cancelled] == 1)
    #expect(summary.byState[.converted] == 1)
    #expect(summary.byState[.expired] == snapshot.trials.filter { $0.state == .expired }.count)
    #expect(summary.byState[.active] == snapshot.trials.filter(\.isActive).count)
    #expect(restored.pendingEventCount == live.pendingEventCount)
    for trial in snapshot.trials {
      #expect(restored.pendingEvents(of: trial.id) == live.pendingEvents(of: trial.id))
    }
    for entry in snapshot.ledger { #expect(restored.pendingEvent(entry.id) == nil) }
    // The store's own restore and the generic one agree.
    var generic = Planner()
    let genericSummary = try subject.repository.restoreByScanning(into: &generic, progressEvery: 10) { _ in }
    #expect(genericSummary == summary)
    for trial in snapshot.trials {
      #expect(generic.pendingEvents(of: trial.id) == restored.pendingEvents(of: trial.id))
    }
  }

  @Test(arguments: StoreKind.allCases)
  func scanTrials_FromAfter_GoesInIDOrderUntilStopped(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let ids: [UInt64] = [0x50, 0x3, UInt64.max, 0x1000, 0x7]
    for (index, id) in ids.enumerated() {
      _ = try subject.repository.startTrial(
        subject: "s\(index)", endDate: origin.addingTimeInterval(day), reminders: .none, now: origin,
        ids: SequenceTrialIDGenerator([id]))
    }
    func scan(after: TrialID?, limit: Int) throws -> [UInt64] {
      try subject.repository.read { txn in
        var seen: [UInt64] = []
        try txn.scanTrials(after: after) { trial in
          seen.append(trial.id.rawValue)
          return seen.count < limit
        }
        return seen
      }
    }
    #expect(try scan(after: nil, limit: 10) == ids.sorted())
    #expect(try scan(after: TrialID(0x7), limit: 2) == [0x50, 0x1000])
    #expect(try scan(after: TrialID(0x8), limit: 10) == [0x50, 0x1000, UInt64.max])
    #expect(try scan(after: TrialID(UInt64.max), limit: 10) == [])
  }

  @Test(arguments: StoreKind.allCases)
  func everyKindOfLedgerEntry_ReadsBackExactly(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let reminders = try ReminderSchedule([.days(3), .days(1), .milliseconds(90_125)])
    let started = try subject.repository.startTrial(
      subject: "ünïcödé subject ✓", endDate: origin.addingTimeInterval(5 * day + 0.000_123),
      reminders: reminders,
      now: origin, ids: SequenceTrialIDGenerator([0xfeed_f00d_dead_beef]))
    let events = started.trial.events
    let taken = origin.addingTimeInterval(4.2 * day)
    let reasons: [DueEvent.Disposition] = [
      .skip(.supersededByReminder(events[1].id)),
      .skip(.beyondGrace(lateness: .milliseconds(12_500), grace: .hours(1))), .fire,
    ]
    let due = zip(events, reasons).map { DueEvent(event: $0, takenAt: taken, disposition: $1, isLate: true) }
    let recorded = try subject.repository.commit(due, now: taken)
    try subject.reopen()
    let read = try subject.repository.read { try $0.ledgerEntries(trial: started.trial.id) }
    #expect(read == recorded.map(\.entry))
    #expect(try subject.repository.read { try $0.trial(started.trial.id) } == started.trial)
    for event in recorded {
      #expect(try subject.repository.read { try $0.ledgerEntry(event.id) } == event.entry)
    }
    // Skipped at start and at extension, delivered at once.
    let extended = try subject.repository.extendTrial(
      started.trial.id, to: origin.addingTimeInterval(4.21 * day + 120), now: taken)
    #expect(extended.skipped.count == 2)
    let all = try subject.repository.read { try $0.ledgerEntries(trial: started.trial.id) }
    #expect(
      all.suffix(2).map(\.outcome) == [.skipped(.alreadyDueAtExtension), .skipped(.alreadyDueAtExtension)])
    #expect(all.suffix(2).allSatisfy { $0.deliveredAt == taken })
  }

  /// Random sequences of operations, applied to both repositories: after every step they
  /// hold the same trials, ledger, outbox and last-seen time, and fail the same way.
  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func randomOperations_LeaveBothRepositoriesEqual(seed: UInt64) throws {
    var random = SeededGenerator(seed: seed)
    let file = try Subject(.lmdb)
    let memory = try Subject(.memory)
    var planner = Planner()
    var now = origin
    var known: [TrialID] = []
    for step in 0..<300 {
      now = now.addingTimeInterval(Double.random(in: 0...(0.4 * day), using: &random))
      let choice = Int.random(in: 0..<100, using: &random)
      func both<R: Equatable>(_ operation: (any TrialRepository) throws -> R) -> Result<R, TrialError>? {
        let results = [file.repository, memory.repository].map { repository -> Result<R, TrialError>? in
          do {
            return .success(try operation(repository))
          } catch let error as TrialError {
            return .failure(error)
          } catch {
            Issue.record("step \(step): unexpected error \(error)")
            return nil
          }
        }
        #expect(results[0] == results[1], "step \(step)")
        return results[0]
      }
      switch choice {
      case 0..<40:
        let id = UInt64.random(in: 1...400, using: &random)
        let length = Double.random(in: 0.1...6, using: &random) * day
        let result = both {
          try $0.startTrial(
            subject: "s\(id % 50)", endDate: now.addingTimeInterval(length), reminders: .default, now: now,
            ids: SequenceTrialIDGenerator([id, id + 1000])
          ).trial
        }
        if case .success(let started)? = result {
          planner.add(started, now: now)
          known.append(started.id)
        }
      case 40..<50 where !known.isEmpty:
        let id = known.randomElement(using: &random)!
        let result = both { try $0.extendTrial(id, to: now.addingTimeInterval(2 * day), now: now).trial }
        if case .success(let extended)? = result {
          planner.add(extended, now: now, reason: .alreadyDueAtExtension)
        }
      case 50..<60 where !known.isEmpty:
        let id = known.randomElement(using: &random)!
        if case .success? = both({ try $0.endTrial(id, outcome: .cancelled, now: now) }) {
          planner.cancel(id)
        }
      case 60..<85:
        let due = planner.takeDue(at: now)
        _ = both { try $0.commit(due + due.prefix(2), now: now) }
      case 85..<95:
        let outbox = try memory.repository.outbox().map(\.id)
        let chosen = outbox.filter { _ in Bool.random(using: &random) }
        _ = both { repository -> Bool in
          try repository.markDelivered(chosen, at: now)
          return true
        }
      default:
        // A write that throws changes nothing.
        _ = both { repository -> Bool in
          do {
            try repository.write { txn in
              try txn.setLastSeenWallTime(now)
              _ = try TrialBook.startTrial(
                in: txn, subject: "doomed", endDate: now.addingTimeInterval(day), reminders: .default,
                now: now,
                ids: SequenceTrialIDGenerator([UInt64.max - 1]))
              throw TrialError.invalid(.trial, "abort")
            }
          } catch let error as TrialError where error == .invalid(.trial, "abort") {
            return true
          }
          return false
        }
      }
      if step % 25 == 0, let report = try file.reopen() {
        // Whatever the operations did, the store verifies clean.
        #expect(report.isClean, "step \(step): \(report.problems.prefix(3))")
      }
      let difference = try RepositorySnapshot(file.repository).difference(
        from: RepositorySnapshot(memory.repository))
      #expect(difference == nil, "step \(step)")
    }
    var fromFile = Planner()
    var fromMemory = Planner()
    #expect(try file.repository.restore(into: &fromFile) == memory.repository.restore(into: &fromMemory))
    #expect(fromFile.pendingEventCount == fromMemory.pendingEventCount)
    #expect(fromFile.pendingEventCount == planner.pendingEventCount)
  }
}
