import Foundation
import TestSupport
import Testing
import TrialCore
import TrialPostgres
import TrialPostgresTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon

/// Plans that grant a trial once, with the daemon's Unicode folding (libunistring): subjects
/// told apart as `SubjectKey=` says, on the file store and on a fleet's shared store.
@Suite struct SubjectOnceTests {
  static let now = Date(timeIntervalSince1970: 1_795_788_000)
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "pro": TrialPlan(name: "pro", length: .days(14), reminders: .none, once: .plan, subjectKey: .email)
    ])

  static func fold(_ text: String) throws(TrialError) -> String { try SubjectFolding.unicode.fold(text) }

  @Test(
    arguments: [
      ("ALICE", "alice"), ("ＡＬＩＣＥ", "alice"), ("Straße", "strasse"), ("STRASSE", "strasse"),
      ("ﬁle", "file"), ("al\u{200B}ice", "alice"), ("so\u{00AD}fa", "sofa"),
      ("\u{212B}ngstr\u{F6}m", "ångström"),
      ("e\u{301}clair", "éclair"), ("ΣΊΣΥΦΟΣ", "σίσυφοσ"), ("plain-ascii_1", "plain-ascii_1"),
    ])
  func unicodeFolding_IsNFKCCaseFolding_WithoutIgnorables(text: String, folded: String) throws {
    #expect(try Self.fold(text) == folded)
    #expect(try Self.fold(folded) == folded)
    #expect(SubjectFolding.unicodeUnavailable == nil)
  }

  @Test func subjectOfIgnorablesOnly_IsRefusedNamingThePlan() {
    let plan = Self.defaults.plans["pro"]!
    let error = #expect(throws: TrialError.self) { try plan.use(of: "\u{200B}\u{FEFF}", fold: Self.fold) }
    #expect(error?.description.contains("nothing left under SubjectKey=email of plan \"pro\"") == true)
  }

  @Test func emailKeys_OfVariantsOfOneAddress_AreOne() throws {
    let variants = [
      "alice@gmail.com", "Alice@Gmail.com", "a.l.i.c.e@gmail.com", "alice+trial@gmail.com",
      "A.Lice+x@GoogleMail.com", "ａｌｉｃｅ＠ｇｍａｉｌ．ｃｏｍ", "al\u{200B}ice@gmail.com",
    ]
    let keys = Set(try variants.map { try SubjectKeyRule.email.key(of: $0, fold: Self.fold) })
    #expect(keys == ["alice@gmail.com"])
    #expect(try SubjectKeyRule.email.key(of: "a.lice@example.com", fold: Self.fold) == "a.lice@example.com")
  }

  /// 10,000 attempts to register again, by 1,000 subjects that had their trial, each written
  /// another way (case, +tags, gmail dots, googlemail, full-width letters): not one trial more.
  @Test func reRegistrationsOfUsedSubjects_UnderEmailKeys_GrantNoSecondTrial() throws {
    let directory = try TemporaryDirectory("once")
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    var generator = SeededGenerator(seed: 25)
    let users = (0..<1_000).map { "user\($0)" }
    func domain(_ index: Int) -> String { index % 2 == 0 ? "gmail.com" : "example.org" }
    var nextID: UInt64 = 1
    func start(_ subjects: [String]) throws -> Int {
      try store.write { txn in
        var granted = 0
        for subject in subjects {
          nextID += 1
          do {
            _ = try TrialBook.apply(
              try .start(subject: subject, plan: "pro"), in: txn, now: Self.now, defaults: Self.defaults,
              ids: SequenceTrialIDGenerator([nextID]), folding: .unicode)
            granted += 1
          } catch let error as TrialError {
            switch error.code {
            case .trialAlreadyUsed, .subjectAlreadyActive: continue
            default: throw error
            }
          }
        }
        return granted
      }
    }
    #expect(try start(users.enumerated().map { "\($1)@\(domain($0))" }) == 1_000)
    var attempts: [String] = []
    for _ in 0..<10_000 {
      let index = Int.random(in: 0..<users.count, using: &generator)
      var local = users[index]
      var host = domain(index)
      if Bool.random(using: &generator) { local = local.uppercased() }
      if Bool.random(using: &generator) { local += "+t\(Int.random(in: 0..<99, using: &generator))" }
      if host == "gmail.com" {
        if Bool.random(using: &generator) { local = local.map(String.init).joined(separator: ".") }
        if Bool.random(using: &generator) { host = "GoogleMail.com" }
      }
      var address = local + "@" + host
      if Int.random(in: 0..<10, using: &generator) == 0 {
        // Full-width forms, which NFKC folds to ASCII.
        address = String(
          String.UnicodeScalarView(
            address.unicodeScalars.map { scalar in
              (0x21...0x7E).contains(scalar.value) ? Unicode.Scalar(scalar.value + 0xFEE0)! : scalar
            }))
      }
      attempts.append(address)
    }
    var granted = 0
    for batch in stride(from: 0, to: attempts.count, by: 500) {
      granted += try start(Array(attempts[batch..<min(batch + 500, attempts.count)]))
    }
    #expect(granted == 0)
    let trials = try store.read { try $0.allTrials() }
    #expect(trials.count == 1_000)
  }

  /// Two nodes of a fleet start one subject (written two ways) at once: the node whose commit
  /// comes second finds the use the other recorded, runs its transaction again, and is refused.
  @Test func twoNodesStartingOneKey_GrantExactlyOne() throws {
    let store = try PostgresTestStore(node: "node-a")
    let other = try PostgresTrialRepository(
      conninfo: store.conninfo, node: "node-b", shards: ShardMap(count: 8))
    func start(
      _ subject: String, on repository: any TrialRepository, id: UInt64, _ txn: any TrialWriteTransaction
    )
      throws -> Trial
    {
      try TrialBook.apply(
        try .start(subject: subject, plan: "pro"), in: txn, now: Self.now, defaults: Self.defaults,
        ids: SequenceTrialIDGenerator([id]), folding: .unicode
      ).trial
    }
    var runs = 0
    var theirs: Trial?
    let ours = Result {
      try store.repository.write { txn in
        runs += 1
        let trial = try start("Dora@Example.com", on: store.repository, id: 0xA1, txn)
        if theirs == nil {
          // Node b starts the same key and commits after node a read that there was no use.
          theirs = try other.write { try start("dora+b@example.com", on: other, id: 0xB1, $0) }
        }
        return trial
      }
    }
    #expect(runs == 2)
    #expect(throws: TrialError.self) { try ours.get() }
    if case .failure(let error as TrialError) = ours, case .trialAlreadyUsed(let use, _) = error.code {
      #expect(use.trial == theirs?.id && use.subject == "dora+b@example.com")
    } else {
      Issue.record("node a was not refused with the use node b recorded: \(ours)")
    }
    let trials = try store.repository.read { try $0.allTrials() }
    #expect(trials.map(\.id) == [TrialID(0xB1)])
  }
}
