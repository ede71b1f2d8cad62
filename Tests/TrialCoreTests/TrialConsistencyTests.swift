import Foundation
import Testing
import TrialCore

@Suite struct TrialConsistencyTests {
  private let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
  private let day: TimeInterval = 86_400

  /// A trial of 5 days with reminders 3 days and 1 day before its end.
  private func trial(state: TrialState = .active, endedAt: Date? = nil) -> Trial {
    Trial(
      id: TrialID(42), subject: "acme-42",
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(5 * day)), state: state,
      endedAt: endedAt)
  }

  private func entry(_ event: TrialEvent, _ outcome: LedgerEntry.Outcome = .fired) -> LedgerEntry {
    LedgerEntry(event: event, outcome: outcome, takenAt: event.due, isLate: false, deliveredAt: event.due)
  }

  @Test func problems_OfConsistentTrials_AreNone() {
    let active = trial()
    #expect(TrialConsistency.problems(of: active, ledger: []).isEmpty)
    #expect(TrialConsistency.problems(of: active, ledger: [entry(active.events[0])]).isEmpty)
    let ended = start.addingTimeInterval(5 * day)
    let expired = trial(state: .expired, endedAt: ended)
    #expect(TrialConsistency.problems(of: expired, ledger: expired.events.map { entry($0) }).isEmpty)
    let cancelled = trial(state: .cancelled, endedAt: start.addingTimeInterval(day))
    #expect(TrialConsistency.problems(of: cancelled, ledger: []).isEmpty)
    // An older revision's events stay in the ledger after an extension.
    var extended = trial()
    let old = extended.events[0]
    extended.reschedule(endDate: start.addingTimeInterval(9 * day))
    #expect(TrialConsistency.problems(of: extended, ledger: [entry(old)]).isEmpty)
  }

  @Test func problems_OfAnActiveTrialWithItsExpiryTaken_NameTheExpiry() {
    let active = trial()
    let problems = TrialConsistency.problems(of: active, ledger: active.events.map { entry($0) })
    #expect(problems.map(\.event) == [active.events[2].id])
    #expect(problems.first?.message.contains("would never expire") == true)
  }

  @Test func problems_OfALedgerWithAGap_NameTheLaterEvent() {
    let active = trial()
    let problems = TrialConsistency.problems(of: active, ledger: [entry(active.events[1])])
    #expect(problems.map(\.event) == [active.events[1].id])
    #expect(problems.first?.message.contains("the earlier \(active.events[0].id) is not") == true)
  }

  @Test func problems_OfEndedTrials_SayWhatTheLedgerLacksOrHolds() {
    let ended = start.addingTimeInterval(5 * day)
    let expired = trial(state: .expired, endedAt: ended)
    #expect(
      TrialConsistency.problems(of: expired, ledger: []).map(\.message) == [
        "the trial is expired, but its expiry \(expired.events[2].id) is not in the ledger"
      ])
    let skipped = entry(expired.events[2], .skipped(.supersededByExpiry))
    #expect(
      TrialConsistency.problems(of: expired, ledger: [skipped]).first?.message.contains("was skipped") == true
    )
    let converted = trial(state: .converted, endedAt: ended)
    #expect(
      TrialConsistency.problems(of: converted, ledger: [entry(converted.events[2])]).map(\.event) == [
        converted.events[2].id
      ])
  }

  /// A trial cancelled at its end has its expiry fired, as an expired one; cancelled early, none.
  @Test func problems_OfACancelAtTheEnd_AreThoseOfAnExpiry() {
    var marked = trial()
    marked.cancelMark = TrialCancelMark(askedAt: start.addingTimeInterval(day))
    let cancelled = marked.expired(byExpiryTakenAt: start.addingTimeInterval(5 * day + 3))
    #expect(cancelled.state == .cancelled && cancelled.endedAt == start.addingTimeInterval(5 * day))
    #expect(TrialConsistency.problems(of: cancelled, ledger: marked.events.map { entry($0) }).isEmpty)
    #expect(
      TrialConsistency.problems(of: cancelled, ledger: []).map(\.message) == [
        "the trial is cancelled, but its expiry \(marked.events[2].id) is not in the ledger"
      ])
    let early = trial(state: .cancelled, endedAt: start.addingTimeInterval(day))
    #expect(
      TrialConsistency.problems(of: early, ledger: [entry(early.events[2])]).map(\.event) == [
        early.events[2].id
      ])
  }

  @Test func problems_OfEntriesNotOfTheTrial_NameEach() {
    let active = trial()
    let future = TrialEvent(trialID: active.id, revision: 2, kind: .expiry, endDate: start)
    let stranger = TrialEvent(
      trialID: active.id, revision: 1, kind: .reminder(before: .seconds(7_200)), endDate: start)
    var moved = entry(active.events[0])
    moved.event.due = start
    let problems = TrialConsistency.problems(of: active, ledger: [moved, entry(future), entry(stranger)])
    #expect(problems.map(\.event) == [active.events[0].id, future.id, stranger.id])
    #expect(problems[0].message.contains("but the trial's event is due at"))
    #expect(problems[1].message.contains("after the trial's current revision 1"))
    #expect(problems[2].message.contains("not an event of the trial's current revision"))
  }

  @Test func problems_OfTheTrialItself_AreNamedWithoutAnEvent() {
    let backwards = Trial(
      id: TrialID(1), subject: "", period: TrialPeriod(startDate: start, endDate: start), state: .active,
      endedAt: start)
    let messages = TrialConsistency.problems(of: backwards, ledger: []).map(\.message)
    #expect(messages.count == 3)
    #expect(messages.contains { $0.contains("subject must not be empty") })
    #expect(messages.contains { $0.contains("before it starts") })
    #expect(messages.contains { $0.contains("active but has an end time") })
    #expect(
      TrialConsistency.problems(of: trial(state: .cancelled), ledger: []).map(\.message) == [
        "it is cancelled but has no end time"
      ])
  }

  @Test func problemsOfLogged_AnEventAsInTheLedger_AreNone() {
    let event = trial().events[0]
    var logged = LoggedEvent(cursor: EventCursor(1), entry: entry(event), subject: "acme-42")
    logged.entry.deliveredAt = nil
    #expect(TrialConsistency.problems(ofLogged: logged, ledger: entry(event)).isEmpty)
  }

  @Test func problemsOfLogged_MissingOrTakenOtherwise_NameTheEvent() {
    let event = trial().events[0]
    let logged = LoggedEvent(cursor: EventCursor(7), entry: entry(event), subject: "acme-42")
    let missing = TrialConsistency.problems(ofLogged: logged, ledger: nil)
    #expect(missing.map(\.event) == [event.id])
    #expect(missing.first?.message.contains("not in the ledger") == true)
    var other = entry(event, .skipped(.supersededByExpiry))
    other.takenAt = event.due.addingTimeInterval(60)
    other.isLate = true
    let messages = TrialConsistency.problems(ofLogged: logged, ledger: other).map(\.message)
    #expect(messages.count == 2)
    #expect(messages.first?.contains("is fired, but its ledger entry is skipped (") == true)
    #expect(messages.last?.hasSuffix("differs from its ledger entry in: taken at, late") == true)
  }
}
