import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

@Suite struct VerifyTests {
  /// A store holding `StoreCorruption`'s fixture, closed; returns its directory.
  private func fixtureStore(in directory: TemporaryDirectory) throws -> String {
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(store)
    store.close()
    return path
  }

  @Test func verify_CleanStore_FindsNoProblemsAndCountsEverything() throws {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let reader = try LMDBStoreReader(directory: path)
    let report = try reader.verify()
    #expect(report.isClean, "\(report.problems)")
    #expect(report.trials == 5)
    #expect(report.activeTrials == 3)
    #expect(report.subjects == 5)
    #expect(report.ledgerEntries == 3)
    #expect(report.outboxEntries == 1)
    #expect(report.lastSeen != nil)
    #expect(report.loggedEvents == 3)
    #expect(report.consumers == 1)
    #expect(report.logLast == EventCursor(3))
    #expect(report.logPrunedThrough == .origin)
    #expect(report.schema == LMDBTrialRepository.schemaVersion)
    #expect(
      report.summary.hasSuffix(
        "5 trials (3 active), 3 ledger entries, 1 undelivered, 3 logged events, 1 consumer: no problems"))
    #expect(report.summary.hasPrefix(reader.dataFilePath))
  }

  @Test func verify_ManyTrialsFiredExtendedAndEnded_IsClean() throws {
    let directory = try TemporaryDirectory("verify")
    let (path, store) = try workloadStore(batches: 40, in: directory)
    let statistics = try store.statistics()
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.isClean, "\(report.problems.prefix(5))")
    #expect(report.trials == statistics.trials)
    #expect(report.activeTrials == statistics.activeTrials)
    #expect(report.ledgerEntries == statistics.ledgerEntries)
    #expect(report.outboxEntries == statistics.outboxEntries)
    #expect(statistics.ledgerEntries > 100)
  }

  /// Each kind of damage, planted alone, is found, and named by its database and key.
  @Test(arguments: StoreCorruption.allCases)
  func verify_PlantedCorruption_IsFoundAndNamesItsKeys(_ corruption: StoreCorruption) throws {
    let directory = try TemporaryDirectory("verify")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    try StoreCorruption.makeFixture(store)
    let expected = try corruption.plant(in: store)
    store.close()

    let report = try LMDBStoreReader(directory: path).verify()
    #expect(!report.isClean)
    let found = Set(report.problems.map { "\($0.database) \($0.keyHex)" })
    let wanted = Set(expected.map { "\($0.database) \($0.key.map { String(format: "%02x", $0) }.joined())" })
    #expect(found == wanted, "\(report.problems)")
    for item in expected {
      let problems = report.problems.filter { $0.database == item.database && $0.key == item.key }
      for word in item.words {
        #expect(problems.contains { $0.message.contains(word) }, "\(word) in \(problems)")
      }
      for problem in problems { #expect(problem.description.contains("(key \(problem.keyHex))")) }
    }
    #expect(report.summary.contains("\(report.problemCount) problem"))
  }

  /// Found by the store-file fuzz target (FuzzTesting/Regressions/store-file/
  /// active-count-reserves-without-bound): the restore reserved room for as many trials as the
  /// meta record counts active, and a damaged count crashed it (or would reserve without bound).
  @Test func restore_WithADamagedActiveCount_ReservesOnlyForTheTrialsThereAre() throws {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let store = try LMDBTrialRepository(directory: path)
    defer { store.close() }
    try store.withRawRecords { raw in
      try raw.put(
        "meta", Array("active-trials".utf8), withUnsafeBytes(of: UInt64(Int.max).littleEndian) { Array($0) })
    }
    var planner = Planner()
    #expect(try store.restore(into: &planner).trials == 5)
    #expect(planner.trialCount == 3)
  }

  /// Found by the store-records fuzz target (FuzzTesting/Regressions/store-records/
  /// cohort-counts-overflow-int64): a cohort record whose figures overflow when added up
  /// crashed the check of its figures, in every read of the conversion figures.
  @Test func cohorts_WithFiguresThatOverflowWhenAdded_AreAnUnreadableRecord() throws {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let store = try LMDBTrialRepository(directory: path)
    // Version 1; started Int64.min, converted, cancelled, expired 0, paused 1; no hours.
    var value: [UInt8] = [1]
    for count in [Int64.min, 0, 0, 0, 1] { withUnsafeBytes(of: count.littleEndian) { value += $0 } }
    value += [0, 0, 0, 0]
    let key: [UInt8] = [0x80, 0, 0x50, 0]
    try store.withRawRecords { try $0.put("cohorts", key, value) }
    let error = #expect(throws: StoreError.self) {
      try store.read { try $0.cohorts(from: .min, through: .max) }
    }
    #expect(error?.kind == .corruptRecord && error?.problem.contains("do not add up") == true)
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(report.problems.contains { $0.database == "cohorts" && $0.key == key }, "\(report.problems)")
  }

  /// Found by the store-file fuzz target (FuzzTesting/Regressions/store-file/
  /// earlier-schema-with-an-event-log and earlier-schema-with-cohorts): a store whose schema
  /// record says 1 (or 6) while it holds an event log (or cohorts) verified clean, yet the
  /// daemon's upgrade refused it (or took the damaged cohorts as they were). So for webhook
  /// endpoints' records in a store that says 7.
  @Test(arguments: [(UInt32(1), "events"), (UInt32(6), "cohorts"), (UInt32(7), "webhooks")])
  func verify_StoreOfAnEarlierSchemaWithRecordsOfALaterOne_NamesTheirDatabase(schema: UInt32, name: String)
    throws
  {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let store = try LMDBTrialRepository(directory: path)
    try store.withRawRecords { raw in
      try raw.put("meta", Array("schema".utf8), withUnsafeBytes(of: schema.littleEndian) { Array($0) })
      if name == "cohorts" { try raw.put("cohorts", [6], [1]) }
    }
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    #expect(
      report.problems.contains { $0.database == "main" && $0.key == Array(name.utf8) },
      "\(report.problems)")
    if schema == 1 {
      let error = #expect(throws: StoreError.self) { try LMDBTrialRepository(directory: path) }
      #expect(error?.kind == .damaged)
    }
  }

  /// Found by the store-file fuzz target (FuzzTesting/Regressions/store-file/
  /// trial-start-moved-out-of-its-cohort): a trial whose start moved to another day verified
  /// clean, and the engine, expiring it, then wrote figures below zero for its new cohort.
  @Test func verify_TrialMovedOutOfItsCohort_NamesBothCohorts() throws {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let store = try LMDBTrialRepository(directory: path)
    let moved = try #require(try store.trial(TrialID(5)))
    var changed = moved
    changed.period = TrialPeriod(
      startDate: moved.period.startDate.addingTimeInterval(-3 * 86_400), endDate: moved.period.endDate)
    try store.write { try $0.putTrial(changed) }
    store.close()
    let report = try LMDBStoreReader(directory: path).verify()
    let cohorts = report.problems.filter { $0.database == "cohorts" }.map(\.message)
    #expect(cohorts.count == 2, "\(report.problems)")
    #expect(cohorts.contains { $0.contains("count 3 active") && $0.contains("holds 2") })
    #expect(cohorts.contains { $0.contains("no figures for the 1 active") })
  }

  @Test func problemDescription_NamesTheRecordReadablyAndInHex() {
    let key = StoreCorruption.ledgerKey(EventID(trialID: TrialID(42), revision: 1, kind: .expiry))
    let problem = StoreProblem(
      database: "ledger", key: key, message: "no trial 000000000000002a has this entry")
    #expect(
      problem.description
        == "ledger/000000000000002a-r1-expiry (key 000000000000002a00000001ffffffffffffffff): "
        + "no trial 000000000000002a has this entry")
    let subject = StoreProblem(database: "subjects", key: Array("acme-42".utf8), message: "x")
    #expect(subject.description == "subjects/\"acme-42\" (key 61636d652d3432): x")
  }

  @Test func reader_StoreOpenInThisProcess_IsRefusedAsInUse() throws {
    let directory = try TemporaryDirectory("verify")
    let path = directory.appending("store")
    let store = try LMDBTrialRepository(directory: path)
    let error = try #require(throws: StoreError.self) { try LMDBStoreReader(directory: path) }
    #expect(error.kind == .inUse)
    store.close()
    _ = try LMDBStoreReader(directory: path)
  }

  @Test func reader_MissingStore_IsNotFoundAndCreatesNothing() throws {
    let directory = try TemporaryDirectory("verify")
    let path = directory.appending("absent")
    #expect(throws: StoreError.self) { try LMDBStoreReader(directory: path) }
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let error = try #require(throws: StoreError.self) { try LMDBStoreReader(directory: path) }
    #expect(error.kind == .notFound)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
  }

  @Test func reader_StoreWithoutLMDBLockFile_CreatesItWithTheDirectorysOwner() throws {
    let directory = try TemporaryDirectory("verify")
    let path = try fixtureStore(in: directory)
    let lockFile = path + "/lock.mdb"
    try FileManager.default.removeItem(atPath: lockFile)
    if getuid() == 0 { #expect(chown(path, 65534, 65534) == 0) }
    let reader = try LMDBStoreReader(directory: path)
    #expect(try reader.verify().isClean)
    reader.close()
    var st = stat()
    #expect(stat(lockFile, &st) == 0)
    if getuid() == 0 { #expect(st.st_uid == 65534 && st.st_gid == 65534, "not left to root") }
    #expect(st.st_mode & 0o777 == 0o600)
  }
}
