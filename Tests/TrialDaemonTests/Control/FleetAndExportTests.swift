import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialPostgresTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A fleet node as GetStatus and GetFleet show it, and a store moved to another through
/// Export and trialwatchd --import.
@Suite struct FleetAndExportTests {
  static let fleet = FleetStatus.twoNodes

  @Test func getStatusAndGetFleet_OfAFleetNode_CarryItsFleet() throws {
    let fixture = try ControlFixture(fleetStatus: { Self.fleet })
    let client = try fixture.client()
    let expected = Self.fleet.fleet
    #expect(try client.getStatus().fleet == expected)
    #expect(try client.call(Trials.getFleet).fleet == expected)
    #expect(
      expected.nodes[1].leaseAge?.description == "1min 35s" && expected.nodes[0].lag?.description == "0")
    let raw = try client.call("io.trialwatch.Trials.GetFleet")
    let text = String(decoding: raw.bytes, as: UTF8.self)
    #expect(text.contains(#""shardCount":16"#) && text.contains(#""leaseAge":"2s""#), "\(text)")
  }

  @Test func getStatusAndGetFleet_OfASingleHost_CarryNoFleet() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    #expect(try client.getStatus().fleet == nil)
    #expect(try client.call(Trials.getFleet).fleet == nil)
    let raw = String(decoding: try client.call("io.trialwatch.Trials.GetFleet").bytes, as: UTF8.self)
    #expect(!raw.contains("fleet\":{"), "\(raw)")
  }

  @Test func export_OfALimitOutOfRange_IsAnInvalidParameter() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    let error = remoteError { _ = try client.call(Trials.export, ExportParameters(limit: 10_001)) }
    #expect(error?.name == ControlError.Name.invalidParameter)
    #expect(try client.call(Trials.export, ExportParameters()).records.isEmpty)
  }

  /// Trials in every state: active with pending reminders, active with a fired reminder,
  /// expired, converted, cancelled, extended to revision 2 after a reminder of revision 1,
  /// and one whose reminder was skipped as already due at its start. Some have labels, set at
  /// the start and changed as they end or move; some a plan.
  private func populate(_ fixture: ControlFixture) throws {
    let client = try fixture.client()
    let day: TimeInterval = 86_400
    let pro = TrialPlan(
      name: "pro", length: .days(14), reminders: .default, labels: try TrialLabels(["seats": "5"]))
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["pro": pro])) }
    func start(
      _ subject: String, days: Double, reminders: [Duration], labels: [String: String]? = nil,
      plan: String? = nil
    ) throws -> TrialObject {
      try client.startTrial(
        StartTrialParameters(
          subject: subject, duration: .seconds(days * 86_400), reminders: try ReminderSchedule(reminders),
          labels: labels, plan: plan))
    }
    _ = try start(
      "pending", days: 10, reminders: [.days(3), .days(1)],
      labels: ["customer": "c-991", "email": "ada+x@example.com", "note": "ünïcödé \"quoted\" ✓"])
    _ = try start("fired", days: 3, reminders: [.days(2), .days(1)])
    _ = try start("expired", days: 1, reminders: [])
    let converted = try start(
      "converted", days: 5, reminders: [.days(1)], labels: ["tier": "pro"], plan: "pro")
    let cancelled = try start("cancelled", days: 5, reminders: [.days(1)])
    let extended = try start("extended", days: 2, reminders: [.seconds(129_600)], labels: ["tier": "free"])
    _ = try start("skipped", days: 3, reminders: [.days(4)], plan: "pro")
    fixture.advance(by: 1.5 * day)
    _ = fixture.fireDue()
    _ = try client.endTrial(
      EndTrialParameters(id: converted.id, outcome: .converted, labels: ["tier": nil, "plan_bought": "pro"]))
    _ = try client.endTrial(EndTrialParameters(id: cancelled.id, outcome: .cancelled))
    _ = try client.extendTrial(
      ExtendTrialParameters(id: extended.id, change: .by(.days(5)), labels: ["tier": "pro"]))
  }

  /// Writes records as an export file: one JSON object a line.
  /// A fixture on LMDB with `populate`'s trials, its whole export, and that export written to
  /// a file in a scratch directory.
  private func exported(_ label: String) throws -> (
    fixture: ControlFixture, records: [ExportRecord], scratch: TemporaryDirectory, file: String
  ) {
    let fixture = try ControlFixture(store: .lmdb, ids: Array(1...7))
    try populate(fixture)
    let records = try exportPages(try fixture.client(), limit: 1_000).flatMap(\.records)
    let scratch = try TemporaryDirectory(label)
    let file = scratch.appending("trials.jsonl")
    try writeJSONLines(records, to: file)
    return (fixture, records, scratch, file)
  }

  /// Every page of Export, `limit` trials at a time.
  private func exportPages(_ client: VarlinkClient, limit: Int) throws -> [ExportReply] {
    var pages: [ExportReply] = []
    var parameters = ExportParameters(limit: limit)
    repeat {
      let page = try client.call(Trials.export, parameters)
      pages.append(page)
      parameters.after = page.next
    } while parameters.after != nil
    return pages
  }

  /// Every trial with its ledger entries.
  private func contents(of repository: any TrialRepository) throws -> [Trial: [LedgerEntry]] {
    try repository.read { txn in
      var contents: [Trial: [LedgerEntry]] = [:]
      for trial in try txn.allTrials() { contents[trial] = try txn.ledgerEntries(trial: trial.id) }
      return contents
    }
  }

  @Test func exportThenImport_IntoAFreshStore_RecreatesTheTrialsAndLedgerExactly() throws {
    let fixture = try ControlFixture(store: .lmdb, ids: Array(1...7))
    try populate(fixture)
    let client = try fixture.client()
    let pages = try exportPages(client, limit: 3)
    #expect(pages.map { $0.records.filter { $0.trial != nil }.count } == [3, 3, 1])
    #expect(pages.map(\.next) == [TrialID(3), TrialID(6), nil])
    let records = pages.flatMap(\.records)
    let skipped = records.compactMap(\.event).filter { $0.reason == "already-due-at-start" }
    #expect(skipped.count == 1)
    #expect(
      records.compactMap(\.trial).map(\.state) == [
        .active, .active, .expired, .converted, .cancelled, .active, .active,
      ])
    // The extended trial carries its count; the others none (absent, as in a file from before it).
    #expect(records.compactMap(\.trial).map(\.extensions) == [nil, nil, nil, nil, nil, 1, nil])

    let scratch = try TemporaryDirectory("import")
    var output: [String] = []
    var errors: [String] = []
    let commands = StoreCommands(output: { output.append($0) }, errors: { errors.append($0) })
    let (status, directory) = try commands.importIntoNewFileStore(records, in: scratch)
    #expect(status == 0, "\(errors)")
    let entries = records.count - 7
    #expect(output.first == "imported 7 trials and \(entries) ledger entries, skipped 0 already present")

    let imported = try LMDBTrialRepository(directory: directory)
    defer { imported.close() }
    #expect(try contents(of: imported) == contents(of: fixture.engine.repository))
    #expect(try StoreQueries(imported).export(after: nil, limit: 100).records == records)

    // Planned from the imported store: exactly the source's pending events; nothing re-fires.
    var source = Planner()
    try fixture.engine.repository.restore(into: &source)
    var restored = Planner()
    try imported.restore(into: &restored)
    #expect(restored.pendingEventCount == source.pendingEventCount)
    #expect(restored.pendingEventCount == 8)
    for id in (1...7).map({ TrialID(UInt64($0)) }) {
      #expect(restored.pendingEvents(of: id) == source.pendingEvents(of: id), "\(id)")
    }
    #expect(restored.takeDue(at: fixture.now).isEmpty)
  }

  @Test func exportThenImport_FromOneHostToAFleetAndBack_KeepsTrialsLedgerAndPlans() throws {
    let (fixture, records, scratch, file) = try exported("transfer")
    var errors: [String] = []
    let commands = StoreCommands(output: { _ in }, errors: { errors.append($0) })

    // The trials' plans travel as attributes, beside their labels.
    let withPlan = records.compactMap(\.trial).filter { $0.attributes?["plan"] == "pro" }
    #expect(withPlan.map(\.subject).sorted() == ["converted", "skipped"])
    #expect(withPlan.allSatisfy { $0.labels?["seats"] == "5" })

    // Into a fleet's store: the same trials, ledger and plans; nothing fired again.
    let fleet = try PostgresTestStore()
    #expect(commands.importTrials(from: file, open: { OpenedStore(fleet.repository) }) == 0, "\(errors)")
    #expect(try contents(of: fleet.repository) == contents(of: fixture.engine.repository))
    var source = Planner()
    try fixture.engine.repository.restore(into: &source)
    var planned = Planner()
    try fleet.repository.restore(into: &planned)
    #expect(planned.pendingEventCount == source.pendingEventCount)
    for id in (1...7).map({ TrialID(UInt64($0)) }) {
      #expect(planned.pendingEvents(of: id) == source.pendingEvents(of: id), "\(id)")
    }

    // And back to one host, from the fleet's export.
    let back = try StoreQueries(fleet.repository).export(after: nil, limit: 1_000).records
    #expect(back == records)
    let (status, directory) = try commands.importIntoNewFileStore(back, in: scratch)
    #expect(status == 0, "\(errors)")
    let host = try LMDBTrialRepository(directory: directory)
    defer { host.close() }
    #expect(try contents(of: host) == contents(of: fixture.engine.repository))
  }

  @Test func import_RunAgainOrIntoAStoreInUse_ChangesNothing() throws {
    let (fixture, records, scratch, file) = try exported("import")
    var output: [String] = []
    var errors: [String] = []
    let commands = StoreCommands(output: { output.append($0) }, errors: { errors.append($0) })
    let directory = scratch.appending("store")
    let open = { try LMDBTrialRepository.open(directory: directory) }
    #expect(commands.importTrials(from: file, open: open) == 0)
    #expect(commands.importTrials(from: file, open: open) == 0)
    #expect(
      output.last { $0.hasPrefix("imported") }
        == "imported 0 trials and 0 ledger entries, skipped \(records.count) already present")

    // The source's own store is open in its daemon.
    let busy = commands.importTrials(
      from: file, open: { try LMDBTrialRepository.open(directory: fixture.scratch.appending("store")) })
    #expect(busy == StoreCommands.ExitStatus.failure, "\(errors)")
  }

  /// The import of a file of `bytes` into a store it must not open: its exit status, whether it
  /// opened the store, what it wrote to standard error, and the file's path.
  private func importOfABadFile(_ bytes: [UInt8]) throws -> (
    status: Int32, opened: Bool, errors: [String], file: String
  ) {
    let scratch = try TemporaryDirectory("import")
    let file = scratch.appending("bad.jsonl")
    try Data(bytes).write(to: URL(fileURLWithPath: file))
    var errors: [String] = []
    var opened = false
    let commands = StoreCommands(output: { _ in }, errors: { errors.append($0) })
    let status = commands.importTrials(
      from: file,
      open: {
        opened = true
        return OpenedStore(InMemoryTrialRepository())
      })
    return (status, opened, errors, file)
  }

  private func trial(subject: String) -> Trial {
    Trial(
      id: TrialID(1), subject: subject,
      period: TrialPeriod(
        startDate: ControlFixture.start, endDate: ControlFixture.start.addingTimeInterval(86_400)))
  }

  @Test func import_OfAFileWithABadLine_NamesFileAndLineAndWritesNothing() throws {
    let lines = [ExportRecord(trial(subject: "acme-1")).jsonLine, "", #"{"trial":{"id":"zz"}}"#]
    let (status, opened, errors, file) = try importOfABadFile(Array(lines.joined(separator: "\n").utf8))
    #expect(status == StoreCommands.ExitStatus.problems)
    #expect(!opened)
    #expect(errors.first?.hasPrefix("cannot import \(file): line 3: trial.") == true, "\(errors)")
  }

  /// An export is JSON, so UTF-8: a line in another encoding (a subject in Latin-1) is refused,
  /// naming its line and byte, rather than read with the byte replaced and the subject changed.
  @Test func import_OfALineThatIsNotUTF8_NamesLineAndByteAndWritesNothing() throws {
    let line = Array(ExportRecord(trial(subject: "caf\u{E9}")).jsonLine.utf8)
    let accent = try #require(line.firstIndex(of: 0xC3))
    // The subject as Latin-1 writes it: é is the one byte 0xE9.
    let latin1 = line[..<accent] + [0xE9] + line[(accent + 2)...]
    let (status, opened, errors, file) = try importOfABadFile(Array("  \n".utf8) + latin1)
    #expect(status == StoreCommands.ExitStatus.problems)
    #expect(!opened)
    #expect(
      errors == ["cannot import \(file): line 2: malformed JSON: invalid UTF-8 at byte \(accent)"],
      "\(errors)")
  }
}
