import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialPostgresTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// The records of subjects granted a trial once travel with an export: after the trials, a
/// page at a time, into a fleet's store and back; an import keeps a record the store has.
@Suite struct UseTransferTests {
  static let start = Date(timeIntervalSinceReferenceDate: 780_000_000.25)

  static func use(_ scope: SubjectUse.Scope, _ key: String, trial: UInt64) -> SubjectUse {
    SubjectUse(
      scope: scope, key: key, subject: key.uppercased(), plan: "pro", firstStartedAt: start,
      trial: TrialID(trial))
  }

  /// Among them one whose subject a cooldown (`OnceFor=`) let start again: its last start too.
  static let uses = [
    use(.all, "zoë@example.com", trial: 1), use(.all, "ada@example.com", trial: 2),
    renewed(use(.plan("pro"), "ada@example.com", trial: 3)), use(.plan("pro"), "bo with spaces", trial: 4),
    use(.plan("pro-2"), "cy@example.com", trial: 5),
  ]

  static func renewed(_ use: SubjectUse) -> SubjectUse {
    var use = use
    use.lastStartedAt = start.addingTimeInterval(270 * 86_400 + 0.5)
    use.lastTrial = TrialID(33)
    return use
  }

  /// Every page of Export's uses, `limit` at a time.
  private func usePages(_ queries: StoreQueries, limit: Int) throws -> [ExportReply] {
    var pages: [ExportReply] = []
    var after: SubjectUse.Position?
    repeat {
      let page = try queries.exportUses(after: after, limit: limit)
      pages.append(page)
      after = page.nextUse
    } while after != nil
    return pages
  }

  private func storedUses(_ repository: any TrialRepository) throws -> [SubjectUse] {
    try repository.read { try $0.allSubjectUses() }
  }

  @Test func exportThenImport_OfUses_CarriesThemToAFleetAndBack() throws {
    let scratch = try TemporaryDirectory("use-transfer")
    let source = try LMDBTrialRepository(directory: scratch.appending("source"))
    defer { source.close() }
    try source.write { txn in for use in Self.uses { try txn.putSubjectUse(use) } }
    let pages = try usePages(StoreQueries(source), limit: 2)
    #expect(pages.map(\.records.count) == [2, 2, 1])
    let records = pages.flatMap(\.records)
    let exported = try records.map { try #require($0.use).use() }
    #expect(exported == (try storedUses(source)))
    #expect(Set(exported) == Set(Self.uses))
    // The position of the last use of a page, as the wire writes it, reads back.
    let cursor = try #require(pages[0].nextUse)
    #expect(SubjectUse.Position(cursor.description) == cursor)
    #expect(try ExportRecord.read(line: records[3].jsonLine.utf8) == .use(exported[3]))

    let file = scratch.appending("uses.jsonl")
    try writeJSONLines(records, to: file)
    var output: [String] = []
    var errors: [String] = []
    let commands = StoreCommands(output: { output.append($0) }, errors: { errors.append($0) })
    let fleet = try PostgresTestStore()
    // The fleet already has one of them, with another first trial: it keeps its own.
    let own = Self.use(.all, "ada@example.com", trial: 99)
    try fleet.repository.write { try $0.putSubjectUse(own) }
    #expect(commands.importTrials(from: file, open: { OpenedStore(fleet.repository) }) == 0, "\(errors)")
    #expect(
      output.first
        == "imported 0 trials and 0 ledger entries and 4 records of subjects granted a trial once, "
        + "skipped 1 already present")
    #expect(
      Set(try storedUses(fleet.repository)) == Set(Self.uses.filter { $0.position != own.position } + [own]))
    let back = try usePages(StoreQueries(fleet.repository), limit: 3).flatMap(\.records)
    #expect(back.count == 5)

    // Into a fresh store on one host, from the fleet's export.
    let (status, directory) = try commands.importIntoNewFileStore(back, in: scratch)
    #expect(status == 0, "\(errors)")
    let host = try LMDBTrialRepository(directory: directory)
    defer { host.close() }
    #expect(try storedUses(host) == (try storedUses(fleet.repository)))
  }

  @Test func import_OfAUseTwice_NamesBothLines() throws {
    let scratch = try TemporaryDirectory("use-twice")
    let line = ExportRecord(Self.uses[0]).jsonLine
    let file = scratch.appending("uses.jsonl")
    try Data((line + "\n" + line + "\n").utf8).write(to: URL(fileURLWithPath: file))
    var errors: [String] = []
    let commands = StoreCommands(output: { _ in }, errors: { errors.append($0) })
    let directory = scratch.appending("store")
    let status = commands.importTrials(
      from: file, open: { try LMDBTrialRepository.open(directory: directory) })
    #expect(status == StoreCommands.ExitStatus.problems)
    #expect(
      errors.first?.contains(
        "line 2: the use of all by key \"zoë@example.com\" appears again (first on line 1)") == true,
      "\(errors)")
  }

  /// A line of an export of a version before cooldowns (no last start) imports with its first
  /// start as its last; a line of this version carries the last start, and one before the first
  /// is refused naming the field.
  @Test func useLine_WithAndWithoutTheLastStart_ReadsAsItsVersionWrote() throws {
    let old =
      #"{"use":{"scope":"plan:pro","key":"k","subject":"K","plan":"pro","firstStartedAt":"#
      + #""2026-01-01T00:00:00.250000Z","id":"0000000000000007"}}"#
    guard case .use(let use) = try ExportRecord.read(line: Array(old.utf8)) else {
      Issue.record("not a use")
      return
    }
    #expect(use.lastTrial == TrialID(7) && use.lastStartedAt == use.firstStartedAt && !use.hasLaterStart)
    #expect(!ExportRecord(use).jsonLine.contains("last"))
    let line = ExportRecord(Self.uses[2]).jsonLine
    #expect(line.contains(#""lastStartedAt":"#) && line.contains(#""lastId":"0000000000000021""#))
    #expect(try ExportRecord.read(line: Array(line.utf8)) == .use(Self.uses[2]))
    var early = Self.uses[2]
    early.lastStartedAt = early.firstStartedAt - 1
    let problem = #expect(throws: WireProblem.self) {
      try ExportRecord.read(line: Array(ExportRecord(early).jsonLine.utf8))
    }
    #expect(problem?.description.contains("lastStartedAt") == true, "\(String(describing: problem))")
  }
}
