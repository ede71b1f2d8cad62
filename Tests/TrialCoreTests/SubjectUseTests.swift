import Foundation
import Testing
import TrialCore
import TrialTesting

/// Plans that grant a subject its trial once: the keys subjects are told apart by, and the
/// record that refuses a second trial, on the in-memory store (the stores' own tests run the
/// same on LMDB and PostgreSQL).
@Suite struct SubjectUseTests {
  /// A stand-in for Unicode case folding that is exact for ASCII (the daemon's is libunistring's).
  static let asciiFolding = SubjectFolding { $0.lowercased() }
  static let now = Date(timeIntervalSince1970: 1_795_788_000)

  static func plan(_ name: String, once: TrialOnce, key: SubjectKeyRule = .exact) -> TrialPlan {
    TrialPlan(name: name, length: .days(14), reminders: .none, once: once, subjectKey: key)
  }

  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "pro": plan("pro", once: .plan, key: .email), "team": plan("team", once: .all, key: .email),
      "edu": plan("edu", once: .all, key: .email), "free": plan("free", once: .no),
    ])

  @Test(
    arguments: [
      ("Alice@Example.com", "alice@example.com"),
      ("alice+trial@example.com", "alice@example.com"),
      ("a.l.ice+x+y@gmail.com", "alice@gmail.com"),
      ("A.Lice@GoogleMail.com", "alice@gmail.com"),
      ("a.lice@example.com", "a.lice@example.com"),
      ("+tag@example.com", "+tag@example.com"),
      ("no-at-sign", "no-at-sign"),
      ("two@at@signs", "two@at@signs"),
    ])
  func emailKey_OfAnAddress_IsFoldedWithoutTagsOrGmailDots(subject: String, key: String) throws {
    #expect(try SubjectKeyRule.email.key(of: subject, fold: Self.asciiFolding.fold) == key)
  }

  @Test func exactAndCasefoldKeys_AreTheSubjectAndItsFolding() throws {
    #expect(
      try SubjectKeyRule.exact.key(of: "Ab+c@gmail.com", fold: Self.asciiFolding.fold) == "Ab+c@gmail.com")
    #expect(
      try SubjectKeyRule.casefold.key(of: "Ab+c@gmail.com", fold: Self.asciiFolding.fold) == "ab+c@gmail.com")
  }

  @Test func scope_ReadsBackFromItsText() {
    for scope in [SubjectUse.Scope.all, .plan("pro"), .plan("a.b-c_9")] {
      #expect(SubjectUse.Scope(scope.description) == scope)
    }
    #expect(
      SubjectUse.Scope("plan:") == nil && SubjectUse.Scope("plan:Pro") == nil && SubjectUse.Scope("x") == nil)
  }

  private func start(_ subject: String, plan: String, in repository: any TrialRepository, id: UInt64) throws
    -> Trial
  {
    try repository.write { txn in
      try TrialBook.apply(
        try .start(subject: subject, plan: plan), in: txn, now: Self.now, defaults: Self.defaults,
        ids: SequenceTrialIDGenerator([id]), folding: Self.asciiFolding
      ).trial
    }
  }

  private func refusal(_ subject: String, plan: String, in repository: any TrialRepository) -> SubjectUse? {
    do {
      _ = try start(subject, plan: plan, in: repository, id: 0xFFFF)
      return nil
    } catch let error as TrialError {
      guard case .trialAlreadyUsed(let use, _) = error.code else { return nil }
      return use
    } catch {
      return nil
    }
  }

  @Test func onceForAPlan_RefusesASecondTrial_EvenAfterTheFirstEnded() throws {
    let repository = InMemoryTrialRepository()
    let first = try start("Alice+1@Example.com", plan: "pro", in: repository, id: 1)
    _ = try repository.endTrial(first.id, outcome: .cancelled, now: Self.now)
    let use = try #require(refusal("alice+2@example.com", plan: "pro", in: repository))
    #expect(use.trial == first.id && use.subject == "Alice+1@Example.com" && use.plan == "pro")
    #expect(use.firstStartedAt == Self.now && use.scope == .plan("pro") && use.key == "alice@example.com")
    // Another plan's trial is not refused; a plan without Once= never is.
    _ = try start("alice@example.com", plan: "team", in: repository, id: 2)
    #expect(try repository.read { try $0.allTrials() }.count == 2)
  }

  @Test func onceAcrossPlans_RefusesTheOtherPlansWithOnceAll() throws {
    let repository = InMemoryTrialRepository()
    let first = try start("bob@example.com", plan: "team", in: repository, id: 1)
    _ = try repository.endTrial(first.id, outcome: .converted, now: Self.now)
    let use = try #require(refusal("Bob@example.com", plan: "edu", in: repository))
    #expect(use.plan == "team" && use.scope == .all)
    _ = try start("bob@example.com", plan: "free", in: repository, id: 2)
  }

  @Test func grantAgain_LetsOneMoreTrialStart_ThenRecordsThatOne() throws {
    let repository = InMemoryTrialRepository()
    let first = try start("carol@example.com", plan: "pro", in: repository, id: 1)
    _ = try repository.endTrial(first.id, outcome: .cancelled, now: Self.now)
    let removed = try repository.write {
      try TrialBook.grantAgain(
        in: $0, subject: "CAROL@example.com", plan: "pro", defaults: Self.defaults, folding: Self.asciiFolding
      )
    }
    #expect(removed?.trial == first.id)
    let second = try start("carol@example.com", plan: "pro", in: repository, id: 2)
    _ = try repository.endTrial(second.id, outcome: .cancelled, now: Self.now)
    #expect(refusal("carol@example.com", plan: "pro", in: repository)?.trial == second.id)
    // Nothing recorded: nil; a plan without Once=: refused naming it.
    #expect(
      try repository.write {
        try TrialBook.grantAgain(
          in: $0, subject: "dan@example.com", plan: "pro", defaults: Self.defaults, folding: Self.asciiFolding
        )
      } == nil)
    #expect(throws: TrialError.self) {
      try repository.write {
        try TrialBook.grantAgain(
          in: $0, subject: "dan@example.com", plan: "free", defaults: Self.defaults,
          folding: Self.asciiFolding)
      }
    }
  }

  @Test func twoStartsOfOneKeyInOneTransaction_GrantOne() throws {
    let repository = InMemoryTrialRepository()
    let outcomes = try repository.write { txn in
      ["eve@example.com", "Eve+x@example.com"].enumerated().map { index, subject in
        Result {
          try TrialBook.apply(
            try .start(subject: subject, plan: "pro"), in: txn, now: Self.now, defaults: Self.defaults,
            ids: SequenceTrialIDGenerator([UInt64(index + 1)]), folding: Self.asciiFolding)
        }
      }
    }
    #expect((try? outcomes[0].get()) != nil)
    #expect((try? outcomes[1].get()) == nil)
  }

  @Test func keyLongerThanARecordHolds_IsRefusedNamingTheSubject() {
    let long = SubjectFolding { String(repeating: $0, count: 3) }
    let subject = String(repeating: "x", count: 200)
    #expect(throws: TrialError.self) {
      try Self.plan("pro", once: .plan, key: .casefold).use(of: subject, fold: long.fold)
    }
  }
}
