import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialPostgres
import TrialPostgresTesting
import TrialStore

@testable import TrialControlServer
@testable import TrialDaemon
@testable import TrialEngine

/// Cursors after `trialwatchd --restore` and `--import`: the log's generation is carried in
/// every cursor handed out after, and a cursor of another generation is refused, naming both
/// and where to resume, over the socket, in virtual time.
@Suite struct CursorGenerationTests {
  /// Starts one-day trials without reminders; the next day their expiries are logged.
  private func startTrials(_ client: VarlinkClient, _ subjects: [String]) throws {
    for subject in subjects {
      #expect(
        try client.call(
          "io.trialwatch.Trials.StartTrial", #"{"subject":"\#(subject)","duration":"1d","reminders":[]}"#
        )
        .error == nil)
    }
  }

  /// The first reply of a Watch after `cursor`.
  private func watch(_ fixture: ControlFixture, after cursor: String) throws -> VarlinkReply {
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"\#(cursor)"}"#, more: true))
    return try watcher.receive()
  }

  /// The error of an acknowledgement of `cursor` by consumer `mailer`; nil when it succeeds.
  private func acknowledge(_ client: VarlinkClient, _ cursor: String) -> ControlError? {
    remoteError {
      _ = try client.call(
        "io.trialwatch.Trials.AcknowledgeEvent", #"{"consumer":"mailer","cursor":"\#(cursor)"}"#)
    }
  }

  private func trialwatchd(_ arguments: [String]) throws -> ChildProcess.Completion {
    try ChildProcess.run(.product("trialwatchd"), arguments, timeout: 60)
  }

  @Test func restore_ThenACursorOfTheLogBefore_IsRefusedNamingBothGenerationsAndWhereToResume() throws {
    let scratch = try TemporaryDirectory("cursor-restore")
    let store = scratch.appending("store")
    let backup = scratch.appending("backup.mdb")
    var fixture = try ControlFixture(ids: Array(1...9), repository: LMDBTrialRepository(directory: store))
    var client = try fixture.client()
    try startTrials(client, ["a", "b", "c"])
    fixture.advance(by: 86_400)
    #expect(
      try client.call(Trials.createConsumer, CreateConsumerParameters(name: "mailer", after: EventCursor(2)))
        .consumer.acknowledged == EventCursor(2))
    #expect(try trialwatchd(["--backup", backup, "--state-dir", store]).status == .exited(0))
    // After the backup: two more events, and the consumer handles one of them.
    try startTrials(client, ["d", "e"])
    fixture.advance(by: 86_400)
    #expect(acknowledge(client, "0000000000000004") == nil)
    #expect(try client.call(Trials.getEventLog).log.last == EventCursor(5))
    let now = fixture.now
    #expect(fixture.stop())
    fixture.engine.close()

    let restore = try trialwatchd(["--restore", backup, "--state-dir", store])
    #expect(restore.status == .exited(0), "\(restore.output)\(restore.errors)")
    #expect(
      restore.output.contains(
        "the event log goes on in generation 1 after cursor 0000000000000003-00000001: a cursor handed out "
          + "before is refused with CursorGeneration"), "\(restore.output)")

    fixture = try ControlFixture(ids: [10], start: now, repository: LMDBTrialRepository(directory: store))
    client = try fixture.client()
    // A cursor handed out after the backup names another event now: resume where the backup ends.
    let late = try watch(fixture, after: "0000000000000005")
    #expect(late.error == ControlError.Name.cursorGeneration)
    #expect(late.errorParameters.cursor == "0000000000000005")
    #expect(late.errorParameters.generation == 1)
    #expect(late.errorParameters.resumeAfter == "0000000000000003-00000001")
    // One from before the backup names the same event in the restored log.
    let early = try watch(fixture, after: "0000000000000002")
    #expect(early.errorParameters.resumeAfter == "0000000000000002-00000001")
    let text = ControlError(name: late.error!, parameters: late.errorParameters).description
    #expect(text.contains("generation 0") && text.contains("generation 1"), "\(text)")
    #expect(text.contains("resume after 0000000000000003-00000001"), "\(text)")

    // A consumer's position is the store's, restored with it, in the new generation; an
    // acknowledgement of a cursor of the log before is refused, and the position stays.
    #expect(acknowledge(client, "0000000000000003")?.name == ControlError.Name.cursorGeneration)
    let consumer = try client.call(Trials.getConsumer, ConsumerNameParameters(name: "mailer")).consumer
    #expect(consumer.acknowledged.description == "0000000000000002-00000001")

    // From the resume point the log goes on, every cursor of generation 1.
    let watcher = try fixture.client()
    try watcher.sendBytes(
      message("io.trialwatch.Trials.Watch", #"{"after":"0000000000000002-00000001"}"#, more: true))
    #expect(try watcher.receive().parameters(as: WatchReply.self).event == nil)
    let replayed = try watcher.receive().parameters(as: WatchReply.self).event
    #expect(replayed?.cursor?.description == "0000000000000003-00000001")
    try startTrials(client, ["f"])
    fixture.advance(by: 86_400)
    let live = try watcher.receive().parameters(as: WatchReply.self).event
    #expect(live?.cursor?.description == "0000000000000004-00000001")
    #expect(live?.subject == "f")
    #expect(acknowledge(client, "0000000000000004-00000001") == nil)
    #expect(try client.call(Trials.getEventLog).log.last.description == "0000000000000004-00000001")
    #expect(fixture.stop())
    fixture.engine.close()

    // Restored again, from the same backup: a generation neither log had.
    let again = try trialwatchd(["--restore", backup, "--state-dir", store])
    #expect(again.output.contains("generation 2 after cursor 0000000000000003-00000002"), "\(again.output)")
    fixture = try ControlFixture(start: now, repository: LMDBTrialRepository(directory: store))
    let stale = try watch(fixture, after: "0000000000000004-00000001")
    #expect(stale.errorParameters.resumeAfter == "0000000000000003-00000002")
    #expect(try watch(fixture, after: "0000000000000001-00000002").error == nil)
  }

  /// A store never restored keeps handing out and taking cursors of 16 digits.
  @Test func storeNeverRestored_KeepsCursorsOfSixteenDigits() throws {
    let fixture = try ControlFixture(store: .lmdb, ids: [1])
    let client = try fixture.client()
    try startTrials(client, ["a"])
    fixture.advance(by: 86_400)
    #expect(try client.call(Trials.getEventLog).log.last.description == "0000000000000001")
    #expect(try watch(fixture, after: "0000000000000000").error == nil)
    let foreign = try watch(fixture, after: "0000000000000001-00000003")
    #expect(foreign.error == ControlError.Name.cursorGeneration)
    #expect(
      foreign.errorParameters.resumeAfter == "0000000000000000", "an unknown generation: from the start")
  }

  /// An import writes into a store whose log stays as it was, in a new generation: cursors of
  /// the source's log, which may have the same numbers, are refused. On PostgreSQL the nodes
  /// run on during the import; on LMDB the daemon is stopped.
  @Test(arguments: [StoreKind.lmdb, .postgres])
  func import_StartsANewGeneration_AndAnOldCursorIsRefused(store kind: StoreKind) throws {
    let scratch = try TemporaryDirectory("cursor-import")
    let source = try ControlFixture(ids: [100])
    try startTrials(try source.client(), ["moved"])
    let file = scratch.appending("trials.jsonl")
    let records = try StoreQueries(source.engine.repository).export(after: nil, limit: 100).records
    try writeJSONLines(records, to: file)
    var output: [String] = []
    let commands = StoreCommands(output: { output.append($0) }, errors: { output.append($0) })

    let directory = scratch.appending("store")
    let postgres = kind == .postgres ? try PostgresTestStore() : nil
    let repository: any TrialRepository =
      try postgres?.repository ?? LMDBTrialRepository(directory: directory)
    var fixture = try ControlFixture(ids: [1, 2], repository: repository)
    try startTrials(try fixture.client(), ["a", "b"])
    fixture.advance(by: 86_400)
    let now = fixture.now
    // On PostgreSQL a Watch runs on through the import.
    let running = postgres == nil ? nil : try fixture.client()
    if let running {
      try running.sendBytes(message("io.trialwatch.Trials.Watch", "{}", more: true))
      #expect(try running.receive().parameters(as: WatchReply.self).event == nil)
    }
    if let postgres {
      let importer = try PostgresTrialRepository(
        conninfo: postgres.conninfo, node: "importer", shards: ShardMap(count: 8), ownership: ShardOwnership()
      )
      #expect(commands.importTrials(from: file, open: { OpenedStore(importer) }) == 0, "\(output)")
    } else {
      #expect(fixture.stop())
      fixture.engine.close()
      #expect(
        commands.importTrials(from: file, open: { try LMDBTrialRepository.open(directory: directory) }) == 0,
        "\(output)")
      fixture = try ControlFixture(start: now, repository: LMDBTrialRepository(directory: directory))
    }
    #expect(output.contains(StoreCommands.describe(LogGeneration(number: 1, began: 2))), "\(output)")
    let old = try watch(fixture, after: "0000000000000001")
    #expect(old.error == ControlError.Name.cursorGeneration)
    #expect(old.errorParameters.resumeAfter == "0000000000000002-00000001")
    let log = try fixture.client().call(Trials.getEventLog).log
    // On LMDB the daemon starts again after the import: the imported trial, due, expires then.
    #expect(log.last.generation == 1 && log.last.sequence == (kind == .lmdb ? 3 : 2), "\(log.last)")
    #expect(try watch(fixture, after: "0000000000000001-00000001").error == nil)
    if let running {
      try startTrials(try fixture.client(), ["after-import"])
      fixture.advance(by: 86_400)
      var subjects: [String: String] = [:]
      while subjects["after-import"] == nil,
        let event = try running.receive().parameters(as: WatchReply.self).event
      {
        subjects[event.subject ?? "?"] = event.cursor?.description
      }
      #expect(subjects["after-import"]?.hasSuffix("-00000001") == true, "\(subjects)")
    }
  }
}
