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
