import Foundation
import TestSupport
import Testing
import TrialCore
import TrialPostgres
import TrialPostgresTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// A second trial after a cooldown (`OnceFor=`), on every store, in the stores' own time (each
/// start is given its `now`): refused until the last start plus the cooldown, granted then, the
/// record's last start moved, refused again until the next window; kept across a reopen.
@Suite struct UseCooldownContractTests {
  static let folding = SubjectFolding { $0.lowercased() }
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "ddg": TrialPlan(
        name: "ddg", length: .days(14), reminders: .none, once: .plan, subjectKey: .email, onceFor: .days(270)
      ),
      "team": TrialPlan(name: "team", length: .days(7), reminders: .none, once: .all, onceFor: .days(30)),
      "edu": TrialPlan(name: "edu", length: .days(7), reminders: .none, once: .all, onceFor: .days(30)),
    ])

  static func at(_ days: Double) -> Date { origin.addingTimeInterval(days * day) }

  static func start(
    _ subject: String, plan: String, on repository: any TrialRepository, id: UInt64, at now: Date
  ) throws -> Trial {
    try repository.write { txn in
      try TrialBook.apply(
        try .start(subject: subject, plan: plan), in: txn, now: now, defaults: defaults,
        ids: SequenceTrialIDGenerator([id]), folding: folding
      ).trial
    }
  }

  /// The refusal of a start at `now`: the use it names and when the subject may start again.
  static func refusal(
    _ subject: String, plan: String, on repository: any TrialRepository, at now: Date
  ) -> (use: SubjectUse, availableAt: Date?)? {
    do {
      let trial = try start(subject, plan: plan, on: repository, id: 0xFFFF, at: now)
      Issue.record("started \(trial.id) at \(now)")
    } catch let error as TrialError {
      if case .trialAlreadyUsed(let use, let availableAt) = error.code { return (use, availableAt) }
      Issue.record("refused otherwise: \(error)")
    } catch {
      Issue.record("failed: \(error)")
    }
    return nil
  }

  static func use(_ scope: SubjectUse.Scope, _ key: String, on repository: any TrialRepository) throws
    -> SubjectUse?
  {
    try repository.read { try $0.subjectUse(scope: scope, key: key) }
  }

  @Test(arguments: StoreKind.allCases)
  func cooldown_RefusesUntilTheLastStartPlusOnceFor_ThenGrantsOnce(kind: StoreKind) throws {
    let store = try Subject(kind)
    let first = try Self.start("Dana+1@Example.com", plan: "ddg", on: store.repository, id: 0x11, at: origin)
    _ = try store.repository.endTrial(first.id, outcome: .cancelled, now: Self.at(14))
    // Refused with the first start's window, to the second.
    for now in [Self.at(100), Self.at(270) - 0.001] {
      let refused = Self.refusal("dana@example.com", plan: "ddg", on: store.repository, at: now)
      #expect(refused?.availableAt == Self.at(270))
      #expect(refused?.use.lastTrial == first.id && refused?.use.lastStartedAt == origin)
    }
    try store.reopen()
    // At the window's start: granted, the record keeping its first start and taking this one.
    let second = try Self.start(
      "dana+2@example.com", plan: "ddg", on: store.repository, id: 0x12, at: Self.at(270))
    let renewed = SubjectUse(
      scope: .plan("ddg"), key: "dana@example.com", subject: "Dana+1@Example.com", plan: "ddg",
      firstStartedAt: origin, trial: first.id, lastStartedAt: Self.at(270), lastTrial: second.id)
    #expect(try Self.use(.plan("ddg"), "dana@example.com", on: store.repository) == renewed)
    _ = try store.repository.endTrial(second.id, outcome: .converted, now: Self.at(280))
    let report = try store.reopen()
    #expect(report?.isClean ?? true, "\(report?.problems ?? [])")
    #expect(try Self.use(.plan("ddg"), "dana@example.com", on: store.repository) == renewed)
    // The next window runs from the second start.
    let again = Self.refusal("DANA@example.com", plan: "ddg", on: store.repository, at: Self.at(539))
    #expect(again?.use == renewed && again?.availableAt == Self.at(540))
    let error = TrialError(.trialAlreadyUsed(renewed, availableAt: Self.at(540)))
    #expect(error.description.contains("last trial \(second.id), started \(RFC3339.format(Self.at(270)))"))
    #expect(error.description.contains("it may start again at \(RFC3339.format(Self.at(540)))"))
    let third = try Self.start(
      "dana@example.com", plan: "ddg", on: store.repository, id: 0x13, at: Self.at(541))
    let last = try Self.use(.plan("ddg"), "dana@example.com", on: store.repository)
    #expect(last?.trial == first.id && last?.firstStartedAt == origin)
    #expect(last?.lastTrial == third.id && last?.lastStartedAt == Self.at(541))
    #expect(try store.repository.read { try $0.allTrials() }.count == 3)
  }

  @Test(arguments: StoreKind.allCases)
  func onceForAll_AcrossTwoPlans_SharesOneWindow(kind: StoreKind) throws {
    let store = try Subject(kind)
    let team = try Self.start("eve", plan: "team", on: store.repository, id: 0x21, at: origin)
    _ = try store.repository.endTrial(team.id, outcome: .cancelled, now: Self.at(1))
    let refused = Self.refusal("eve", plan: "edu", on: store.repository, at: Self.at(10))
    #expect(refused?.use.plan == "team" && refused?.availableAt == Self.at(30))
    let edu = try Self.start("eve", plan: "edu", on: store.repository, id: 0x22, at: Self.at(30))
    _ = try store.repository.endTrial(edu.id, outcome: .cancelled, now: Self.at(37))
    try store.reopen()
    let use = try Self.use(.all, "eve", on: store.repository)
    #expect(use?.plan == "team" && use?.trial == team.id && use?.lastTrial == edu.id)
    // The other plan's trial waits for the window of the last start, whichever plan made it.
    #expect(
      Self.refusal("eve", plan: "team", on: store.repository, at: Self.at(40))?.availableAt == Self.at(60))
    _ = try Self.start("eve", plan: "team", on: store.repository, id: 0x23, at: Self.at(60))
    #expect(try Self.use(.all, "eve", on: store.repository)?.lastTrial == TrialID(0x23))
  }

  /// Two nodes of a fleet start one subject after its cooldown at once: both read the use as
  /// it was; the node whose commit comes second finds the last start moved, runs its
  /// transaction again, and is refused until the new window.
  @Test func twoNodesStartingAfterACooldown_GrantExactlyOne() throws {
    let store = try PostgresTestStore(node: "node-a")
    let other = try PostgresTrialRepository(
      conninfo: store.conninfo, node: "node-b", shards: ShardMap(count: 8))
    let first = try Self.start("fay@example.com", plan: "ddg", on: store.repository, id: 0xA0, at: origin)
    _ = try store.repository.endTrial(first.id, outcome: .cancelled, now: Self.at(14))
    var runs = 0
    var theirs: Trial?
    let ours = Result {
      try store.repository.write { txn in
        runs += 1
        let trial = try TrialBook.apply(
          try .start(subject: "fay@example.com", plan: "ddg"), in: txn, now: Self.at(300),
          defaults: Self.defaults,
          ids: SequenceTrialIDGenerator([0xA1]), folding: Self.folding
        ).trial
        if theirs == nil {
          theirs = try Self.start("Fay+b@example.com", plan: "ddg", on: other, id: 0xB1, at: Self.at(300))
        }
        return trial
      }
    }
    #expect(runs == 2)
    if case .failure(let error as TrialError) = ours,
      case .trialAlreadyUsed(let use, let availableAt) = error.code
    {
      #expect(use.lastTrial == theirs?.id && availableAt == Self.at(570))
    } else {
      Issue.record("node a was not refused with the start node b recorded: \(ours)")
    }
    let use = try Self.use(.plan("ddg"), "fay@example.com", on: store.repository)
    #expect(use?.trial == first.id && use?.lastTrial == TrialID(0xB1) && use?.lastStartedAt == Self.at(300))
  }
}

/// The file store's use records: a use of one trial keeps the record of version 1 (as schema 8
/// wrote it), one a cooldown let start again is of version 2; a store of schema 8 is upgraded
/// without a change to its records, and its uses read with their first start as their last.
@Suite struct UseRecordVersionTests {
  static let single = SubjectUse(
    scope: .plan("ddg"), key: "gus@example.com", subject: "Gus@Example.com", plan: "ddg",
    firstStartedAt: origin,
    trial: TrialID(7))

  /// A record of version 1, field by field as schema 8 wrote it.
  static func version1(_ use: SubjectUse) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(1)
    writer.u64(use.trial.rawValue)
    writer.date(use.firstStartedAt)
    writer.u16(UInt16(use.subject.utf8.count))
    writer.bytes += use.subject.utf8
    writer.u8(UInt8(use.plan.utf8.count))
    writer.bytes += use.plan.utf8
    return writer.bytes
  }

  static func decode(_ use: SubjectUse, _ value: [UInt8]) throws -> SubjectUse {
    try UseRecords.withKey(use.scope, use.key) { key in
      try value.withUnsafeBytes { try UseRecords.decode(key: key, value: $0) }
    }
  }

  @Test func useOfOneTrial_IsWrittenAsVersion1_AndALaterStartAsVersion2() throws {
    var writer = ByteWriter()
    try UseRecords.encode(Self.single, into: &writer)
    #expect(writer.bytes == Self.version1(Self.single))
    var renewed = Self.single
    renewed.lastStartedAt = origin.addingTimeInterval(270 * day)
    renewed.lastTrial = TrialID(9)
    writer.reset()
    try UseRecords.encode(renewed, into: &writer)
    #expect(writer.bytes.first == 2 && writer.bytes.count == Self.version1(Self.single).count + 16)
    #expect(try Self.decode(renewed, writer.bytes) == renewed)
    // A last start before the first is damage, named.
    renewed.lastStartedAt = origin - 1
    writer.reset()
    try UseRecords.encode(renewed, into: &writer)
    let problem = #expect(throws: RecordProblem.self) { try Self.decode(renewed, writer.bytes) }
    #expect(problem?.message.contains("last start lies before the first") == true)
  }

  @Test func storeOfSchema8_Upgraded_ReadsItsUsesWithTheFirstStartAsTheLast() throws {
    let directory = try TemporaryDirectory("use-upgrade")
    let path = directory.appending("store")
    let environment = try LMDBEnvironment(
      directory: path, initialMapSize: 1 << 20, maximumMapSize: 1 << 30,
      maxDatabases: LMDBTrialRepository.Databases.names.count, create: true)
    let record = Self.version1(Self.single)
    try environment.write { txn in
      for name in LMDBTrialRepository.Databases.names { _ = try txn.openDatabase(name, create: true) }
      let meta = try #require(try txn.openDatabase("meta", create: false))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.schema, UInt32(8))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.logLast, UInt64(0))
      try StoreUpgrade.putMeta(txn, meta, LMDBTrialRepository.MetaKey.logPrunedThrough, UInt64(0))
      let uses = try #require(try txn.openDatabase("uses", create: false))
      try UseRecords.withKey(Self.single.scope, Self.single.key) { key in
        try record.withUnsafeBytes { try txn.put(uses, key, $0) }
      }
    }
    environment.close()
    #expect(try LMDBStoreReader(directory: path).statistics().schema == 8)

    let store = try FixtureStore.open(path)
    #expect(store.upgrade?.fromSchema == 8 && store.upgrade?.toSchema == LMDBTrialRepository.schemaVersion)
    let kept = try store.withRawRecords { try $0.get("uses", Array("plan:ddg\u{0}gus@example.com".utf8)) }
    #expect(kept == record)
    let read = try store.read { try $0.subjectUse(scope: .plan("ddg"), key: "gus@example.com") }
    #expect(read == Self.single && read?.lastTrial == TrialID(7) && read?.lastStartedAt == origin)
    // The cooldown runs from that start.
    let now = origin.addingTimeInterval(270 * day)
    let trial = try UseCooldownContractTests.start("gus@example.com", plan: "ddg", on: store, id: 8, at: now)
    store.close()
    let reopened = try LMDBTrialRepository(directory: path)
    let renewed = try reopened.read { try $0.subjectUse(scope: .plan("ddg"), key: "gus@example.com") }
    #expect(renewed?.trial == TrialID(7) && renewed?.lastTrial == trial.id && renewed?.lastStartedAt == now)
    reopened.close()
    #expect(try LMDBStoreReader(directory: path).verify().isClean)
  }
}
