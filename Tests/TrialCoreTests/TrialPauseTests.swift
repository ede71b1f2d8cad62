import Foundation
import Testing
import TrialCore
import TrialTesting

/// Pausing and resuming trials in virtual time, on the in-memory store with the planner, as the
/// engine drives them: nothing fires while paused, a resume moves the end by the time the pause
/// froze, no reminder fires twice, and a pause that runs out resumes the trial once.
@Suite struct TrialPauseTests {
  static let start = Date(timeIntervalSince1970: 1_795_788_000)
  static let day: TimeInterval = 86_400
  static let reminders = try! ReminderSchedule([.days(3), .days(1)])
  static let defaults = TrialDefaults(
    length: .days(10), reminders: reminders,
    plans: ["pro": TrialPlan(name: "pro", length: .days(10), reminders: reminders, maxPause: .days(7))])

  /// A store, a planner and a clock, moved on as the engine moves them.
  final class Book {
    let repository = InMemoryTrialRepository()
    var planner = Planner()
    var now = TrialPauseTests.start
    var nextID: UInt64 = 1

    func apply(_ command: TrialCommand) throws -> Trial {
      let now = self.now
      let ids = SequenceTrialIDGenerator([nextID])
      let done = try repository.write { txn in
        try TrialBook.apply(
          command, in: txn, now: now, defaults: TrialPauseTests.defaults, ids: ids,
          folding: SubjectFolding { $0.lowercased() })
      }
      nextID += 1
      let reason: SkipReason =
        switch command.kind {
        case .resume: .alreadyDueAtResume
        case .extend: .alreadyDueAtExtension
        default: .alreadyDueAtStart
        }
      planner.add(done.trial, now: now, reason: reason)
      return done.trial
    }

    /// Moves the clock to `date` in one wake (as after downtime): what was taken, in order.
    @discardableResult
    func wake(at date: Date) throws -> [LedgerEntry] {
      now = date
      var taken: [LedgerEntry] = []
      // A resume plans the trial again: events already overdue then go in the next pass.
      while planner.nextDeadline.map({ $0 <= date }) == true {
        let due = planner.takeDue(at: date)
        let recorded = try repository.write { try TrialBook.take(in: $0, due, now: date) }
        for event in recorded where event.logged.entry.event.kind.isPauseOrResume {
          planner.add(event.trial, now: event.logged.entry.event.due, reason: .alreadyDueAtResume)
        }
        taken += recorded.map(\.logged.entry)
      }
      return taken
    }

    /// Runs the clock to `date`, waking at every deadline on the way.
    @discardableResult
    func run(to date: Date) throws -> [LedgerEntry] {
      var taken: [LedgerEntry] = []
      while let next = planner.nextDeadline, next <= date { taken += try wake(at: next) }
      now = date
      return taken
    }

    func ledger(_ id: TrialID) throws -> [LedgerEntry] {
      try repository.read { try $0.ledgerEntries(trial: id) }
    }

    func trial(_ id: TrialID) throws -> Trial { try repository.trial(id)! }
  }

  static func at(days: Double) -> Date { start.addingTimeInterval(days * day) }

  @Test func pause_FreezesTheTimeLeft_AndAResumeMovesTheEndByIt() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-42"))
    #expect(
      try book.run(to: Self.at(days: 8)).map(\.id.description) == ["0000000000000001-r1-reminder-259200000ms"]
    )

    let paused = try book.apply(try .pause(.subject("acme-42")))
    #expect(paused.state == .paused && paused.pause == TrialPause(since: Self.at(days: 8)))
    #expect(paused.timeLeft == .days(2) && paused.revision == 1 && paused.period.endDate == Self.at(days: 10))
    #expect(book.planner.pendingEventCount == 0 && book.planner.nextDeadline == nil)
    // A month passes: nothing fires, and the trial stays as it was.
    #expect(try book.run(to: Self.at(days: 38)).isEmpty)
    #expect(try book.trial(trial.id) == paused)

    let resumed = try book.apply(try .resume(.id(trial.id)))
    #expect(resumed.state == .active && resumed.pause == nil && resumed.revision == 2)
    #expect(resumed.period.endDate == Self.at(days: 40))
    let late = try book.run(to: Self.at(days: 41))
    #expect(
      late.map(\.id.description) == ["0000000000000001-r2-reminder-86400000ms", "0000000000000001-r2-expiry"])
    #expect(late.map(\.event.due) == [Self.at(days: 39), Self.at(days: 40)])

    let ledger = try book.ledger(trial.id)
    #expect(
      ledger.map(\.id.description) == [
        "0000000000000001-r1-paused-172800000ms", "0000000000000001-r1-resumed-172800000ms",
        "0000000000000001-r1-reminder-259200000ms", "0000000000000001-r2-reminder-259200000ms",
        "0000000000000001-r2-reminder-86400000ms", "0000000000000001-r2-expiry",
      ])
    // The reminder that fired before the pause does not fire again: the new revision's is skipped.
    #expect(ledger[3].outcome == .skipped(.alreadyDueAtResume) && ledger[3].isDelivered)
    // The pause and the resume wait in the outbox for the journal, as fired events do.
    #expect(ledger[0].outcome == .fired && !ledger[0].isDelivered && ledger[0].event.due == Self.at(days: 8))
    #expect(ledger[1].event.due == Self.at(days: 38) && ledger[1].event.trialEnd == Self.at(days: 40))
    #expect(TrialConsistency.problems(of: try book.trial(trial.id), ledger: ledger).isEmpty)
  }

  /// The wall clock stepped back past the pause (and the start): the trial resumes as of its
  /// pause, its end where the pause left it, never before its start.
  @Test func resumeWithTheClockBeforeThePause_KeepsTheEnd() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-43", end: .after(.hours(20)), reminders: []))
    book.now = Self.at(days: 0.5)
    _ = try book.apply(try .pause(.id(trial.id)))
    book.now = Self.at(days: -1)
    let resumed = try book.apply(try .resume(.id(trial.id)))
    #expect(resumed.period.endDate == Self.start.addingTimeInterval(20 * 3_600) && resumed.revision == 2)
    let ledger = try book.ledger(trial.id)
    #expect(ledger.last?.event.due == Self.at(days: 0.5) && ledger.last?.takenAt == Self.at(days: -1))
    #expect(TrialConsistency.problems(of: resumed, ledger: ledger).isEmpty)
  }

  @Test func pauseThatRunsOut_ResumesTheTrialByItself_Once() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-42", plan: "pro"))
    book.now = Self.at(days: 1)
    let paused = try book.apply(try .pause(.id(trial.id)))
    #expect(paused.pause == TrialPause(since: Self.at(days: 1), until: Self.at(days: 8)))
    #expect(
      book.planner.pendingEvents(of: trial.id).map(\.id.description) == [
        "0000000000000001-r1-resumed-777600000ms"
      ])

    // The daemon was down when the pause ran out: it resumes as of then, and what fell due
    // since fires, late.
    let taken = try book.wake(at: Self.at(days: 15))
    #expect(
      taken.map(\.id.description) == [
        "0000000000000001-r1-resumed-777600000ms", "0000000000000001-r2-reminder-259200000ms",
      ])
    #expect(taken[1].isLate && taken[1].event.due == Self.at(days: 14))
    #expect(taken[0].isLate && taken[0].event.due == Self.at(days: 8))
    let resumed = try book.trial(trial.id)
    #expect(resumed.state == .active && resumed.revision == 2 && resumed.period.endDate == Self.at(days: 17))

    // The same resume again (a second node, a retry) records nothing; a caller's is refused.
    let again = DueEvent(
      event: paused.pendingResume!, takenAt: Self.at(days: 15), disposition: .fire, isLate: true)
    #expect(try book.repository.write { try TrialBook.take(in: $0, [again], now: Self.at(days: 15)) }.isEmpty)
    #expect(throws: TrialError(.notPaused(trial.id, .active))) { try book.apply(try .resume(.id(trial.id))) }
    #expect(
      try book.run(to: Self.at(days: 20)).map(\.id.description) == [
        "0000000000000001-r2-reminder-86400000ms", "0000000000000001-r2-expiry",
      ])
    #expect(
      TrialConsistency.problems(of: try book.trial(trial.id), ledger: try book.ledger(trial.id)).isEmpty)
  }

  @Test func resumeBeforeThePauseRunsOut_LeavesNoResumeBehind() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-42", plan: "pro"))
    book.now = Self.at(days: 1)
    _ = try book.apply(try .pause(.id(trial.id)))
    book.now = Self.at(days: 2)
    let resumed = try book.apply(try .resume(.subject("acme-42")))
    #expect(resumed.period.endDate == Self.at(days: 11))
    let taken = try book.run(to: Self.at(days: 12))
    #expect(taken.map(\.id.revision) == [2, 2, 2] && taken.allSatisfy { !$0.event.kind.isPauseOrResume })
  }

  @Test func pausedTrial_KeepsItsSubject_AndIsRefusedWhatAPauseForbids() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-42"))
    _ = try book.apply(try .pause(.id(trial.id)))
    #expect(throws: TrialError(.notActive(trial.id, .paused))) { try book.apply(try .pause(.id(trial.id))) }
    #expect(throws: TrialError(.notActive(trial.id, .paused))) {
      try book.apply(try .extend(trial.id, .by(.days(1))))
    }
    #expect(throws: TrialError(.subjectAlreadyActive(subject: "acme-42", existing: trial.id))) {
      try book.apply(try .start(subject: "acme-42"))
    }
    #expect(throws: TrialError.notFound(subject: "nobody")) { try book.apply(try .pause(.subject("nobody"))) }
    // Ended while paused: converted, its pause kept to tell so, nothing left to fire.
    let ended = try book.apply(.end(trial.id, .converted))
    #expect(ended.state == .converted && ended.pause?.since == Self.start && ended.endedAt == Self.start)
    #expect(throws: TrialError(.notPaused(trial.id, .converted))) {
      try book.apply(try .resume(.id(trial.id)))
    }
    #expect(TrialConsistency.problems(of: ended, ledger: try book.ledger(trial.id)).isEmpty)
  }

  @Test func pause_OfATrialWhoseEndHasCome_IsRefused() throws {
    let book = Book()
    let trial = try book.apply(try .start(subject: "acme-42", end: .after(.days(1)), reminders: []))
    book.now = Self.at(days: 1)
    #expect(throws: TrialError.self) { try book.apply(try .pause(.id(trial.id))) }
    #expect(try book.trial(trial.id).state == .active)
  }

  @Test func eventIDs_OfPausesAndResumes_ReadBackAndSortAsTheStoresKeys() {
    let trial = TrialID(0xACE)
    let ids = [
      EventID(trialID: trial, revision: 2, kind: .paused(left: .milliseconds(1))),
      EventID(trialID: trial, revision: 2, kind: .resumed(left: .days(3))),
      EventID(trialID: trial, revision: 2, kind: .reminder(before: .days(3))),
      EventID(trialID: trial, revision: 2, kind: .reminder(before: .milliseconds(1))),
      EventID(trialID: trial, revision: 2, kind: .expiry),
    ]
    for id in ids {
      #expect(EventID(id.description) == id)
      #expect(EventID.kind(order: id.order) == id.kind)
    }
    #expect(ids.sorted() == ids && ids.map(\.order).sorted() == ids.map(\.order))
    #expect(EventID("0000000000000ace-r2-paused-0ms") == nil && EventID("0000000000000ace-r2-paused") == nil)
    #expect(EventID("0000000000000ace-r2-resumed-4611686018427387904ms") == nil)
  }
}
