import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// The records of subjects that had a trial granted once, on every store: kept across a reopen
/// and whatever becomes of the trial, found by scope and key, removed only when asked.
@Suite struct SubjectUseContractTests {
  static let folding = SubjectFolding { $0.lowercased() }
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "pro": TrialPlan(
        name: "pro", length: .days(14), reminders: .none, once: .plan, subjectKey: .email),
      "team": TrialPlan(name: "team", length: .days(30), reminders: .none, once: .all, subjectKey: .email),
    ])

  private func start(_ subject: String, plan: String, on store: Subject, id: UInt64) throws -> Trial {
    try store.repository.write { txn in
      try TrialBook.apply(
        try .start(subject: subject, plan: plan), in: txn, now: origin, defaults: Self.defaults,
        ids: SequenceTrialIDGenerator([id]), folding: Self.folding
      ).trial
    }
  }

  private func uses(_ repository: any TrialRepository) throws -> [SubjectUse] {
    try repository.read { try $0.allSubjectUses() }
  }

  @Test(arguments: StoreKind.allCases)
  func uses_OutliveTheirTrials_AndAReopen(kind: StoreKind) throws {
    let store = try Subject(kind)
    let first = try start("Ada+a@Example.com", plan: "pro", on: store, id: 0x61)
    let team = try start("bo@example.com", plan: "team", on: store, id: 0x62)
    _ = try store.repository.endTrial(first.id, outcome: .converted, now: origin)
    try store.reopen()
    let recorded = try uses(store.repository)
    #expect(
      recorded == [
        SubjectUse(
          scope: .all, key: "bo@example.com", subject: "bo@example.com", plan: "team", firstStartedAt: origin,
          trial: team.id),
        SubjectUse(
          scope: .plan("pro"), key: "ada@example.com", subject: "Ada+a@Example.com", plan: "pro",
          firstStartedAt: origin, trial: first.id),
      ])
    let refused = #expect(throws: TrialError.self) {
      try start("ada@example.com", plan: "pro", on: store, id: 0x63)
    }
    #expect(refused?.code == .trialAlreadyUsed(recorded[1]))
    #expect(
      try store.repository.read { try $0.subjectUse(scope: .plan("pro"), key: "ada@example.com") }
        == recorded[1])
    #expect(
      try store.repository.read { try $0.subjectUse(scope: .plan("team"), key: "ada@example.com") } == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func removedUse_IsGone_AndAnotherStartRecordsItAgain(kind: StoreKind) throws {
    let store = try Subject(kind)
    let first = try start("cy@example.com", plan: "pro", on: store, id: 0x71)
    _ = try store.repository.endTrial(first.id, outcome: .cancelled, now: origin)
    #expect(
      try store.repository.write { try $0.removeSubjectUse(scope: .plan("pro"), key: "cy@example.com") })
    #expect(
      !(try store.repository.write { try $0.removeSubjectUse(scope: .plan("pro"), key: "cy@example.com") }))
    try store.reopen()
    let second = try start("cy@example.com", plan: "pro", on: store, id: 0x72)
    #expect(try uses(store.repository).map(\.trial) == [second.id])
  }

  @Test(arguments: StoreKind.allCases)
  func manyUses_ScanInFull_InScopeAndKeyOrder(kind: StoreKind) throws {
    let store = try Subject(kind)
    try store.repository.write { txn in
      for index in 0..<2_500 {
        try txn.putSubjectUse(
          SubjectUse(
            scope: index % 2 == 0 ? .all : .plan("pro"), key: "k\(index)", subject: "s\(index)", plan: "pro",
            firstStartedAt: origin, trial: TrialID(UInt64(index + 1))))
      }
    }
    let scanned = try uses(store.repository)
    #expect(scanned.count == 2_500)
    let keys = scanned.map { Array("\($0.scope)\u{0}\($0.key)".utf8) }
    #expect(keys == keys.sorted { $0.lexicographicallyPrecedes($1) })
  }
}

/// A restore keeps the records of subjects granted a trial once that the replaced store held.
@Suite struct SubjectUseRestoreTests {
  static func use(_ key: String, trial: UInt64) -> SubjectUse {
    SubjectUse(
      scope: .plan("pro"), key: key, subject: key.uppercased(), plan: "pro", firstStartedAt: origin,
      trial: TrialID(trial))
  }

  @Test func restoreOfABackupTakenBeforeAUse_KeepsTheUse_AndTheBackupsOwn() throws {
    let directory = try TemporaryDirectory("restore-uses")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try store.write { try $0.putSubjectUse(Self.use("early@example.com", trial: 1)) }
    let backup = directory.appending("backup")
    _ = try store.backup(to: backup)
    // After the backup: one more use.
    try store.write { try $0.putSubjectUse(Self.use("late@example.com", trial: 2)) }
    store.close()

    let report = try StoreRestore.restore(backup: backup, into: path, now: origin)
    #expect(report.keptUses == 1)
    let restored = try LMDBTrialRepository(directory: path)
    let keys = try restored.read { try $0.allSubjectUses() }.map(\.key)
    #expect(keys == ["early@example.com", "late@example.com"])
    restored.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.contains("merging") || $0.contains("restoring") })
  }

  @Test func restoreOfABackupOfAnEarlierSchema_IsUpgradedWithTheUses() throws {
    let directory = try TemporaryDirectory("restore-uses-old")
    let old = try FixtureStore.copy(schema: 3, into: directory)
    let backup = directory.appending("backup")
    _ = try LMDBStoreReader(directory: old).backup(to: backup)
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try store.write { try $0.putSubjectUse(Self.use("used@example.com", trial: 9)) }
    store.close()

    let report = try StoreRestore.restore(backup: backup, into: path, now: origin)
    #expect(report.keptUses == 1)
    let reader = try LMDBStoreReader(directory: path)
    #expect(try reader.statistics().schema == LMDBTrialRepository.schemaVersion)
    #expect(
      try reader.read { try $0.subjectUse(scope: .plan("pro"), key: "used@example.com") }?.trial == TrialID(9)
    )
    #expect(try reader.verify().isClean)
  }
}

/// Removing ended trials past their retention, on every store: each with its ledger and its
/// subject's index entry; active trials, and the uses, stay.
@Suite struct TrialRetentionContractTests {
  @Test(arguments: StoreKind.allCases)
  func step_RemovesEndedTrialsPastTheRetention_WithTheirLedger(kind: StoreKind) throws {
    let store = try Subject(kind)
    let ended = try store.start("ended-1", days: 2, reminders: try ReminderSchedule([.days(1)]), id: 0x11)
      .trial
    let recent = try store.start("recent-2", days: 30, id: 0x12).trial
    let active = try store.start("active-3", days: 90, id: 0x13).trial
    // The first fires its reminder and expiry (undelivered: in the outbox); the second is cancelled later.
    let fired = origin.addingTimeInterval(2 * day)
    _ = try store.repository.commit(
      ended.events.map { DueEvent(event: $0, takenAt: fired, disposition: .fire, isLate: false) }, now: fired)
    _ = try store.repository.endTrial(
      recent.id, outcome: .cancelled, now: origin.addingTimeInterval(20 * day))
    try store.repository.write {
      try $0.putSubjectUse(
        SubjectUse(
          scope: .all, key: "ended-1", subject: "ended-1", plan: "pro", firstStartedAt: origin,
          trial: ended.id))
    }
    let now = origin.addingTimeInterval(40 * day)
    let (step, transitions) = try store.repository.write {
      (try TrialRetention.step(now: now, retention: .days(30), after: nil, limit: 10, in: $0), $0.transitions)
    }
    #expect(step.removed == 1 && step.next == nil)
    #expect(transitions.map { [$0.from, $0.to] } == [[.expired, nil]])
    #expect(step.earliestEnd == origin.addingTimeInterval(20 * day))
    let report = try store.reopen()
    #expect(report?.isClean ?? true, "\(report?.problems ?? [])")
    let repository = store.repository
    #expect(try repository.read { try $0.trial(ended.id) } == nil)
    #expect(try repository.read { try $0.ledgerEntries(trial: ended.id) }.isEmpty)
    #expect(try repository.read { try $0.latestTrialID(subject: "ended-1") } == nil)
    #expect(try repository.read { try $0.trial(recent.id) }?.state == .cancelled)
    #expect(try repository.read { try $0.trial(active.id) }?.isActive == true)
    #expect(try repository.read { try $0.subjectUse(scope: .all, key: "ended-1") }?.trial == ended.id)
    #expect(try store.repository.outbox().isEmpty)
    // A step of one trial goes on after it.
    let first = try store.repository.write {
      try TrialRetention.step(now: now, retention: .days(30), after: nil, limit: 1, in: $0)
    }
    #expect(first.next == recent.id && first.removed == 0)
  }
}
