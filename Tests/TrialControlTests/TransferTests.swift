import Foundation
import Testing
import TrialControl
import TrialCore

@Suite struct TransferTests {
  private let start = Date(timeIntervalSinceReferenceDate: 800_000_000.123_456)

  private func trial(state: TrialState = .active) -> Trial {
    Trial(
      id: TrialID(0xACE), subject: "acme-42",
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(5 * 86_400)), state: state,
      reminders: try! ReminderSchedule([.days(3), .milliseconds(1_500)]), revision: 2,
      endedAt: state.isEnded ? start.addingTimeInterval(86_400) : nil,
      pause: state == .paused
        ? TrialPause(since: start.addingTimeInterval(3_600.000_25), until: start.addingTimeInterval(90_000))
        : nil, grace: state == .grace ? .milliseconds(259_200_001) : .zero)
  }

  /// A ledger entry of the trial's first event, taken the given way.
  private func entry(_ outcome: LedgerEntry.Outcome, delivered: Bool = true) -> LedgerEntry {
    let event = trial().events[0]
    return LedgerEntry(
      event: event, outcome: outcome, takenAt: event.due.addingTimeInterval(0.000_250), isLate: true,
      deliveredAt: delivered ? event.due.addingTimeInterval(1) : nil)
  }

  private func roundTrip(_ record: ExportRecord) throws -> TrialTransfer.Record {
    let line = record.jsonLine
    #expect(!line.contains("\n"))
    return try ExportRecord.read(line: line.utf8)
  }

  @Test func exportRecord_OfATrial_ReadsBackTheSameTrial() throws {
    for state in TrialState.allCases {
      #expect(try roundTrip(ExportRecord(trial(state: state))) == .trial(trial(state: state)))
    }
    let line = ExportRecord(trial()).jsonLine
    #expect(line.hasPrefix(#"{"trial":{"endsAt":"2026-05-14T06:13:20.123456Z","#))
    #expect(line.contains(#""reminders":["3d","1s 500ms"]"#))
    #expect(!line.contains("grace"))
    #expect(ExportRecord(trial(state: .grace)).jsonLine.contains(#""grace":"3d 1ms""#))
  }

  /// A trial cancelled at its end travels with its mark; a line without one (a file from before
  /// cancels at the end) reads as a trial not marked.
  @Test func exportRecord_OfAMarkedTrial_ReadsBackItsMark() throws {
    var marked = trial()
    marked.cancelMark = TrialCancelMark(askedAt: start.addingTimeInterval(60.000_5), remindAfterCancel: true)
    #expect(try roundTrip(ExportRecord(marked)) == .trial(marked))
    var cancelled = marked.expired(byExpiryTakenAt: marked.period.endDate)
    cancelled.cancelMark?.remindAfterCancel = false
    #expect(cancelled.state == .cancelled && cancelled.attributes.outcome == "cancelled")
    let line = ExportRecord(cancelled).jsonLine
    #expect(
      line.contains(#""attributes":{"outcome":"cancelled"}"#) && line.contains(#""remindAfterCancel":false"#))
    #expect(try roundTrip(ExportRecord(cancelled)) == .trial(cancelled))
    let old = ExportRecord(trial()).jsonLine
    #expect(!old.contains("cancel") && !old.contains("remindAfterCancel"))
    #expect(try ExportRecord.read(line: old.utf8) == .trial(trial()))
    let stray = old.replacingOccurrences(
      of: #""revision":2"#, with: #""remindAfterCancel":true,"revision":2"#)
    #expect(throws: (any Error).self) { try ExportRecord.read(line: stray.utf8) }
  }

  /// A trial travels with its follow-ups and their ledger entries, called off ones with their
  /// reason; a line without them (a file from before follow-ups) reads as a trial with none, and a
  /// bad span is refused naming the field.
  @Test func exportRecord_OfFollowUps_ReadsBackTheSame() throws {
    var followed = trial(state: .expired)
    followed.followUps = try FollowUpSchedule([.days(3), .days(30)])
    let line = ExportRecord(followed).jsonLine
    #expect(line.contains(#""followUps":["3d","4w 2d"]"#))
    #expect(try roundTrip(ExportRecord(followed)) == .trial(followed))
    let old = ExportRecord(trial(state: .expired)).jsonLine
    #expect(!old.contains("followUps"))
    #expect(try ExportRecord.read(line: old.utf8) == .trial(trial(state: .expired)))
    let bad = line.replacingOccurrences(of: #""followUps":["3d","4w 2d"]"#, with: #""followUps":["4000d"]"#)
    let error = #expect(throws: WireProblem.self) { try ExportRecord.read(line: bad.utf8) }
    #expect(error?.path == ["trial", "followUps"])
    let followUp = try #require(followed.events.last)
    for reason in [SkipReason.calledOffByConversion, .calledOffByNewTrial] {
      let entry = LedgerEntry(
        event: followUp, outcome: .skipped(reason), takenAt: followUp.due, isLate: false, deliveredAt: nil)
      #expect(try roundTrip(ExportRecord(entry)) == .entry(entry))
      #expect(ExportRecord(entry).jsonLine.contains(#""reason":"\#(reason.code)""#))
    }
  }

  /// A trial travels with its milestones and their ledger entries, skipped ones with their
  /// reason; a bad span is refused naming the field.
  @Test func exportRecord_OfMilestones_ReadsBackTheSame() throws {
    var nudged = trial(state: .active)
    nudged.milestones = try MilestoneSchedule([.days(1), .days(2)])
    let line = ExportRecord(nudged).jsonLine
    #expect(line.contains(#""milestones":["1d","2d"]"#))
    #expect(try roundTrip(ExportRecord(nudged)) == .trial(nudged))
    let bad = line.replacingOccurrences(of: #""milestones":["1d","2d"]"#, with: #""milestones":["0"]"#)
    let error = #expect(throws: WireProblem.self) { try ExportRecord.read(line: bad.utf8) }
    #expect(error?.path == ["trial", "milestones"])
    let milestone = try #require(nudged.milestoneEvents.last)
    for outcome in [LedgerEntry.Outcome.fired, .skipped(.trialEnded), .skipped(.paused)] {
      let entry = LedgerEntry(event: milestone, outcome: outcome, takenAt: milestone.due, isLate: false)
      #expect(try roundTrip(ExportRecord(entry)) == .entry(entry))
    }
  }

  @Test func exportRecord_OfEveryOutcome_ReadsBackTheSameEntry() throws {
    let outcomes: [LedgerEntry.Outcome] = [
      .fired, .skipped(.alreadyDueAtStart), .skipped(.alreadyDueAtExtension), .skipped(.supersededByExpiry),
      .skipped(.supersededByReminder(trial().events[1].id)),
      .skipped(.beyondGrace(lateness: .microseconds(7_200_000_007), grace: .hours(1))),
      .skipped(.cancelAtEnd),
    ]
    for outcome in outcomes {
      for delivered in [true, false] {
        let entry = entry(outcome, delivered: delivered)
        #expect(try roundTrip(ExportRecord(entry)) == .entry(entry), "\(outcome)")
      }
    }
    let line = ExportRecord(
      entry(.skipped(.beyondGrace(lateness: .microseconds(7_200_000_007), grace: .hours(1))))
    )
    .jsonLine
    #expect(line.contains(#""lateness":"2h 7us""#) && line.contains(#""reason":"beyond-grace""#))
  }

  @Test func exportRecord_ThatIsInvalid_IsAProblemWithItsPath() {
    func problem(_ line: String) -> String? {
      do {
        _ = try ExportRecord.read(line: line.utf8)
        return nil
      } catch {
        return error.description
      }
    }
    #expect(problem("{}") == "a record holds one of trial, event and use")
    #expect(
      problem(
        #"{"use":{"scope":"plan:Pro","key":"k","subject":"s","plan":"pro","firstStartedAt":"2026-01-01T00:00:00.000000Z","id":"1"}}"#
      )
        == #"use.scope: "plan:Pro" is neither all nor plan:NAME"#)
    #expect(
      problem(
        #"{"use":{"scope":"all","key":"","subject":"s","plan":"pro","firstStartedAt":"2026-01-01T00:00:00.000000Z","id":"1"}}"#
      )?
      .hasPrefix("use.key: must be 1 to") == true)
    #expect(
      problem("not json") == "malformed JSON: unexpected 'o' at byte 1, in 'null', which starts at byte 0")
    // Of several wrong labels or attributes, the first in byte order, every time.
    let trial = ExportRecord(self.trial()).jsonLine
    for _ in 0..<10 {
      #expect(
        problem(trial.replacing(#""subject":"#, with: #""labels":{"t":1,"b":[],"d":true},"subject":"#))
          == "trial.labels.b: expected a string, got an array")
      #expect(
        problem(trial.replacing(#""subject":"#, with: #""attributes":{"t":"x","B":"x","D":"x"},"subject":"#))?
          .hasPrefix("trial.attributes.B: ") == true)
    }
    let event = ExportRecord(entry(.skipped(.supersededByExpiry))).jsonLine
    #expect(
      problem(event.replacingOccurrences(of: "superseded-by-expiry", with: "superseded-by-reminder"))
        == "event.supersededBy: is required for superseded-by-reminder")
    #expect(
      problem(event.replacingOccurrences(of: "\"late\":true", with: "\"late\":1"))?.hasPrefix("event.late")
        == true)
  }

  @Test func preciseTime_OfAnyOffsetAndFraction_IsReadToTheMicrosecond() throws {
    #expect(PreciseTime(Date(timeIntervalSince1970: 0)).description == "1970-01-01T00:00:00.000000Z")
    #expect(PreciseTime(Date(timeIntervalSince1970: -0.25)).description == "1969-12-31T23:59:59.750000Z")
    let read = try PreciseTime(parsing: "2025-06-15T17:06:40.1234567+02:00")
    #expect(read.description == "2025-06-15T15:06:40.123457Z")
    #expect(try PreciseTime(parsing: "2025-06-15T15:06:40Z").description == "2025-06-15T15:06:40.000000Z")
    #expect(throws: WireProblem.self) { try PreciseTime(parsing: "2025-06-15T15:06:40.Z") }
  }

  @Test func fleetRanges_OfShards_AreCompact() {
    #expect(FleetObject.ranges([0, 1, 2, 3, 9, 12, 13, 14, 15]) == "0-3,9,12-15")
    #expect(FleetObject.ranges([5]) == "5")
    #expect(FleetObject.ranges([]) == "none")
  }

  /// Found by the text fuzz target (FuzzTesting/Regressions/text/
  /// transfer-span-beyond-int64-microseconds): a lateness or grace beyond `Int64` microseconds
  /// (some 292,000 years: `ReminderGrace=1000000y`, or a damaged record) crashed the export of
  /// its entry, and such a span read from a file crashed writing it again.
  @Test func exportEvent_WithASpanBeyondInt64Microseconds_IsHeldAtTheBound() throws {
    let huge = Duration.seconds(Int64.max)
    let bound = Duration.microseconds(Int64.max)
    let exported = ExportRecord(entry(.skipped(.beyondGrace(lateness: huge, grace: huge))))
    #expect(exported.event?.lateness == PreciseSpan(bound) && exported.event?.grace == PreciseSpan(bound))
    guard case .entry(let read) = try roundTrip(exported) else {
      Issue.record("not an entry")
      return
    }
    #expect(read.outcome == .skipped(.beyondGrace(lateness: bound, grace: bound)))
    let parsed = try WireCoding.makeDecoder().decode(
      PreciseSpan.self, from: Data(#""1000000000000000s""#.utf8))
    #expect(parsed.duration == bound)
    #expect(try TimeSpan.parse(parsed.description) == bound)
  }

  /// The import's side of FuzzTesting/Regressions/text/export-label-key-with-a-combining-mark:
  /// such a label is refused, naming it, rather than kept as an attribute no import takes back.
  @Test func exportTrial_WithALabelKeyStartingWithACombiningMark_IsRefused() throws {
    var line = ExportRecord(trial()).jsonLine
    line = line.replacing(#""subject":"#, with: #""labels":{"\u0313tier":"pro"},"subject":"#)
    let error = #expect(throws: WireProblem.self) { try ExportRecord.read(line: line.utf8) }
    #expect(error?.path == ["trial", "labels"], "\(String(describing: error))")
  }

  /// Found by the text fuzz target (FuzzTesting/Regressions/text/precise-time-rounds-into-year-10000):
  /// a transfer's time whose seventh fraction digit (or a `Date`'s resolution, 30 µs there)
  /// rounds the last second of 9999 up was read, but its written form,
  /// `10000-01-01T00:00:00.000000Z`, was not.
  @Test func preciseTime_RoundingIntoTheYear10000_IsRefused() throws {
    let error = #expect(throws: WireProblem.self) { try PreciseTime(parsing: "9999-12-31T23:59:59.9999995Z") }
    #expect(error?.problem.contains("after the year 9999") == true, "\(String(describing: error))")
    #expect(throws: WireProblem.self) { try PreciseTime(parsing: "9999-12-31T23:59:59.999999Z") }
    let last = try PreciseTime(parsing: "9999-12-31T23:59:59Z")
    #expect(last.description == "9999-12-31T23:59:59.000000Z")
    #expect(try PreciseTime(parsing: last.description) == last)
  }
}
