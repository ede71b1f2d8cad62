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
    try repository.read { txn in
      var uses: [SubjectUse] = []
      try txn.scanSubjectUses {
        uses.append($0)
        return true
      }
      return uses
    }
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
