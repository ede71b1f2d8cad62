import Foundation
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Writes refused for a fault of the storage, in virtual time: each answered `StoreUnavailable`
/// with its reason, counted, named in the status line, and logged once, then at most once a
/// minute however fast a client retries.
@Suite struct StoreFaultTests {
  private struct Setup {
    let scheduler = TestScheduler(now: epoch)
    let repository = InMemoryTrialRepository()
    let logs = CapturedLogs()
    let observer: SpyObserver
    let engine: Engine

    init() throws {
      observer = SpyObserver(clock: scheduler.clock)
      engine = makeEngine(
        repository: repository, scheduler: scheduler, ids: nil, observer: observer, logger: logs.makeLogger())
      _ = try engine.start()
    }

    /// A start whose commit fails with `failure` (none: it succeeds); the reply's error as a
    /// client receives it, nil on success.
    func start(_ subject: String, failing failure: (any Error)?) throws -> ControlError? {
      repository.failNextCommit = failure
      var answer: Result<CommandResult, any Error>?
      let command = try TrialCommand.start(subject: subject, end: .after(.days(30)), reminders: [])
      engine.submit(command) { answer = $0 }
      guard case .failure(let error) = answer else { return nil }
      return ControlError(answering: error)
    }

    /// The lines logged about the store's faults.
    var faultLines: [CapturedLogs.Record] {
      logs.all.filter { $0.message.hasPrefix("the store ") }
    }
  }

  private static let diskFull = StoreError(
    .noSpace, path: "/var/lib/trialwatch/data.mdb",
    problem: "no space left on the device while committing a transaction")

  @Test func refusedWrites_AreStoreUnavailable_AndLoggedAtMostTwiceAMinute() throws {
    let s = try Setup()
    var refused = 0
    var linesByMinute: [Int] = []
    // A client retrying every 3 s for ten minutes.
    for minute in 0..<10 {
      let before = s.faultLines.count
      for second in stride(from: 0, to: 60, by: 3) {
        let error = try #require(try s.start("acme-\(minute)-\(second)", failing: Self.diskFull))
        #expect(error.name == ControlError.Name.storeUnavailable)
        #expect(error.parameters.reason == "disk-full")
        #expect(error.parameters.message?.contains("no space left") == true)
        refused += 1
        s.scheduler.advance(by: 3)
      }
      linesByMinute.append(s.faultLines.count - before)
    }
    #expect(linesByMinute.allSatisfy { $0 <= 2 }, "lines by minute: \(linesByMinute)")
    #expect(s.observer.statuses.last?.hasPrefix("the store refuses writes: the disk is full (since ") == true)
    s.scheduler.advance(by: 60)  // the last summary
    let lines = s.faultLines
    #expect(lines.first?.message.hasPrefix("the store refuses writes: the disk is full") == true)
    #expect(lines.first?.metadata["reason"] == "disk-full")
    // The first line and the summaries account for every refusal.
    let summarised = lines.dropFirst().compactMap { $0.metadata["refused"].flatMap(Int.init) }.reduce(1, +)
    #expect(summarised == refused)
    let snapshot = s.engine.status().snapshot
    #expect(snapshot.refusedWrites[.diskFull] == refused)
    #expect(snapshot.storeFault?.refused == refused)
    #expect(snapshot.storeFault?.since == epoch)

    // Space returns: the next write is taken, and the log and the status say so.
    #expect(try s.start("acme-after", failing: nil) == nil)
    s.scheduler.advance(by: 60)
    #expect(s.faultLines.last?.message == "the store takes writes again")
    #expect(s.observer.statuses.last?.hasPrefix("the store refuses") == false)
    #expect(s.engine.status().snapshot.storeFault == nil)
    #expect(try s.repository.read { try $0.activeTrialID(subject: "acme-after") } != nil)
    s.engine.stop()
  }

  @Test func dueEventsUnderAFullDisk_AreRetriedQuietly_AndFireOnceWhenSpaceReturns() throws {
    let s = try Setup()
    let sink = SpySink(clock: s.scheduler.clock)
    s.engine.addSink(sink)
    #expect(try s.start("acme-1", failing: nil) == nil)
    s.repository.failCommits = Self.diskFull
    // The expiry falls due 30 days on; its commit is refused at every retry (each second)
    // for ten minutes.
    s.scheduler.advance(by: 30 * day)
    var linesByMinute: [Int] = []
    for _ in 0..<10 {
      let before = s.logs.all.count
      s.scheduler.advance(by: 60)
      linesByMinute.append(s.logs.all.count - before)
    }
    #expect(sink.delivered.isEmpty)
    #expect(linesByMinute.allSatisfy { $0 <= 2 }, "lines by minute: \(linesByMinute)")
    #expect((s.engine.status().snapshot.refusedWrites[.diskFull] ?? 0) >= 500)
    s.repository.failCommits = nil
    s.scheduler.advance(by: 60)
    #expect(sink.ids.map(\.kind) == [.expiry])
    #expect(s.faultLines.last?.message == "the store takes writes again")
    s.engine.stop()
  }

  @Test func otherFailures_StayInternalErrors_AndAreNotCounted() throws {
    let s = try Setup()
    struct Bug: Error {}
    let error = try #require(try s.start("acme-1", failing: Bug()))
    #expect(error.name == ControlError.Name.internalError)
    #expect(s.faultLines.isEmpty)
    #expect(s.engine.status().snapshot.refusedWrites.isEmpty)
    s.engine.stop()
  }

  @Test func eachReason_IsNamed() throws {
    let s = try Setup()
    let failing = StoreError(.ioError, path: "/var/lib/trialwatch/data.mdb", problem: "an I/O error")
    let error = try #require(try s.start("acme-1", failing: failing))
    #expect(error.parameters.reason == "io-error")
    #expect(error.description.contains("the disk failed to write"))
    #expect(s.faultLines.count == 1)
    s.engine.stop()
  }
}
