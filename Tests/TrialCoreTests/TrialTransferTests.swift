import Foundation
import Testing
import TrialCore
import TrialTesting

@Suite struct TrialTransferTests {
  private let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
  private let day: TimeInterval = 86_400

  /// A trial of 5 days with reminders 3 days and 1 day before its end.
  private func trial(
    _ id: UInt64, _ subject: String, state: TrialState = .active, endedAt: Date? = nil
  ) -> Trial {
    Trial(
      id: TrialID(id), subject: subject,
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(5 * day)), state: state,
      endedAt: endedAt)
  }

  private func entry(_ event: TrialEvent, delivered: Bool = true) -> LedgerEntry {
    LedgerEntry(
      event: event, outcome: .fired, takenAt: event.due, isLate: false,
      deliveredAt: delivered ? event.due : nil)
  }

  /// An active trial with its first reminder fired, an expired one with every event taken, and
  /// a cancelled one; numbered from line 1.
  private func file() -> [TrialTransfer.Line] {
    let active = trial(1, "acme-1")
    let expired = trial(2, "acme-2", state: .expired, endedAt: start.addingTimeInterval(5 * day))
    let cancelled = trial(3, "acme-3", state: .cancelled, endedAt: start.addingTimeInterval(day))
    let records: [TrialTransfer.Record] =
      [.trial(active), .entry(entry(active.events[0], delivered: false)), .trial(expired)]
      + expired.events.map { .entry(entry($0)) } + [.trial(cancelled)]
    return records.enumerated().map { TrialTransfer.Line($0.offset + 1, $0.element) }
  }

  private func run(_ lines: [TrialTransfer.Line], into repository: any TrialRepository) throws
    -> TrialTransfer.Summary
  {
    try TrialTransfer.run({ each in for line in lines { try each(line) } }, into: repository)
  }

  /// The problem an import ends with.
  private func problem(_ body: () throws -> Void) -> TrialTransfer.Problem? {
    do {
      try body()
      return nil
    } catch {
      return error as? TrialTransfer.Problem
    }
  }

  @Test func import_IntoAnEmptyStore_WritesEveryTrialAndEntry() throws {
    let repository = InMemoryTrialRepository()
    let summary = try run(file(), into: repository)
    var expected = TrialTransfer.Summary(trials: 3, entries: 4, skipped: 0)
    expected.generation = LogGeneration(number: 1, began: 0)
    #expect(summary == expected, "an import that wrote something starts a new generation of the log")
    #expect(try repository.read { try $0.eventLogBounds().generation } == expected.generation)
    #expect(summary.description == "imported 3 trials and 4 ledger entries, skipped 0 already present")
    let trials = try repository.read { try $0.allTrials() }
    #expect(trials.map(\.id) == [TrialID(1), TrialID(2), TrialID(3)])
    #expect(try repository.read { try $0.activeTrialID(subject: "acme-1") } == TrialID(1))
    // The undelivered entry waits in the outbox.
    let outbox = try repository.read { txn in
      var entries: [LedgerEntry] = []
      try txn.scanOutbox {
        entries.append($0)
        return true
      }
      return entries
    }
    #expect(outbox.map(\.id) == [trial(1, "acme-1").events[0].id])
  }

  @Test func import_RunAgain_SkipsEverythingAlreadyStored() throws {
    let repository = InMemoryTrialRepository()
    _ = try run(file(), into: repository)
    let again = try run(file(), into: repository)
    #expect(again == TrialTransfer.Summary(trials: 0, entries: 0, skipped: 7), "no new generation")
    #expect(try repository.read { try $0.eventLogBounds().generation.number } == 1)
  }

  @Test func import_OfEntriesNotYetStored_AddsThemToAStoredTrial() throws {
    let repository = InMemoryTrialRepository()
    let active = trial(1, "acme-1")
    _ = try run([TrialTransfer.Line(1, .trial(active))], into: repository)
    let summary = try run(
      [TrialTransfer.Line(1, .trial(active)), TrialTransfer.Line(2, .entry(entry(active.events[0])))],
      into: repository)
    #expect(summary.entries == 1 && summary.skipped == 1 && summary.trials == 0)
    #expect(summary.generation?.number == 2)
  }

  @Test func import_OfATrialStoredDifferently_IsRefusedNamingItsLine() throws {
    let repository = InMemoryTrialRepository()
    _ = try run(file(), into: repository)
    var lines = file()
    lines[2].record = .trial(trial(2, "renamed", state: .expired, endedAt: start.addingTimeInterval(5 * day)))
    let found = problem { _ = try run(lines, into: repository) }
    #expect(found?.line == 3)
    #expect(
      found?.problem.contains("trial 0000000000000002 is already stored with a different subject") == true)
  }

  @Test func import_OfATrialWithOtherLabelsOrPlan_IsRefusedNamingThem() throws {
    let repository = InMemoryTrialRepository()
    let stored = trial(1, "acme-1")
    _ = try run([TrialTransfer.Line(1, .trial(stored))], into: repository)
    var labelled = stored
    labelled.labels = try TrialLabels(["tier": "pro"])
    labelled.attributes.plan = "pro"
    let found = problem { _ = try run([TrialTransfer.Line(4, .trial(labelled))], into: repository) }
    #expect(found?.line == 4)
    #expect(
      found?.problem.contains("already stored with a different labels, attributes") == true,
      "\(String(describing: found))")
  }

  @Test func import_OfAnActiveTrialWhoseSubjectIsActive_IsRefusedNamingBothIDs() throws {
    let repository = InMemoryTrialRepository()
    _ = try run([TrialTransfer.Line(1, .trial(trial(9, "acme-1")))], into: repository)
    let found = problem { _ = try run(file(), into: repository) }
    #expect(found?.line == 1)
    #expect(found?.problem.contains("0000000000000009") == true)
    #expect(found?.problem.contains("0000000000000001") == true)
    // Nothing of the file was written.
    #expect(try repository.read { try $0.allTrials() }.map(\.id) == [TrialID(9)])

    let twice = [
      TrialTransfer.Line(1, .trial(trial(1, "same"))), TrialTransfer.Line(2, .trial(trial(2, "same"))),
    ]
    let inFile = problem { _ = try run(twice, into: InMemoryTrialRepository()) }
    #expect(inFile?.line == 2)
    #expect(
      inFile?.problem
        == "subject \"same\" has two open (active or paused) trials: 0000000000000001 (line 1) and 0000000000000002"
    )
  }

  @Test func validate_OfMisplacedOrInconsistentRecords_NamesTheLine() {
    let active = trial(1, "acme-1")
    let orphan = [TrialTransfer.Line(1, .entry(entry(active.events[0])))]
    #expect(
      problem { try TrialTransfer.validate { each in for line in orphan { try each(line) } } }?.line == 1)

    // An expired trial without its expiry in the ledger: the trial's line.
    let expired = trial(2, "acme-2", state: .expired, endedAt: start.addingTimeInterval(5 * day))
    let missing = [TrialTransfer.Line(4, .trial(expired))]
    let found = problem { try TrialTransfer.validate { each in for line in missing { try each(line) } } }
    #expect(found?.line == 4)
    #expect(found?.problem.contains("is not in the ledger") == true)

    // An active trial with its expiry in the ledger: the entry's line.
    let expiry = [
      TrialTransfer.Line(1, .trial(active)), TrialTransfer.Line(2, .entry(entry(active.events[2]))),
    ]
    #expect(
      problem { try TrialTransfer.validate { each in for line in expiry { try each(line) } } }?.line == 2)

    let repeated = [TrialTransfer.Line(1, .trial(active)), TrialTransfer.Line(2, .trial(active))]
    let again = problem { try TrialTransfer.validate { each in for line in repeated { try each(line) } } }
    #expect(again?.description == "line 2: trial 0000000000000001 appears again (first on line 1)")
  }

  @Test func import_OfAFileWithABadLine_WritesNothing() throws {
    let repository = InMemoryTrialRepository()
    var lines = file()
    lines.append(TrialTransfer.Line(9, .entry(entry(trial(7, "acme-7").events[0]))))
    #expect(problem { _ = try run(lines, into: repository) }?.line == 9)
    #expect(try repository.read { try $0.allTrials() }.isEmpty)
    #expect(repository.commitCount == 0)
  }

  @Test func import_OfManyRecords_CommitsInBatches() throws {
    let repository = InMemoryTrialRepository()
    let count = TrialTransfer.batchSize + 10
    let lines = (1...count).map { TrialTransfer.Line($0, .trial(trial(UInt64($0), "acme-\($0)"))) }
    #expect(try run(lines, into: repository).trials == count)
    #expect(repository.commitCount == 3, "two batches, then the log's new generation")
  }

  @Test func transferTime_OfADate_IsExactToTheMicrosecond() {
    let date = Date(timeIntervalSinceReferenceDate: 800_000_000.123_456_7)
    #expect(TransferTime.microseconds(date) == 800_000_000_123_457)
    #expect(TransferTime.rounded(TransferTime.rounded(date)) == TransferTime.rounded(date))
    #expect(TransferTime.rounded(Duration.nanoseconds(1_500)) == .microseconds(2))
  }
}
