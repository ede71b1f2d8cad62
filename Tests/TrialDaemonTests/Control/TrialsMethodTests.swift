import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// Every io.trialwatch.Trials method and error, through a real socket, against both the
/// in-memory stand-in and the daemon's own backend (the engine over an LMDB store): a client
/// must not be able to tell them apart by error names, error parameters or reply fields.
@Suite struct TrialsMethodTests {
  /// A client of `fixture` that started trials `s1` to `s<count>`, each as many days long as
  /// its number.
  func numbered(_ count: Int, on fixture: ControlFixture) throws -> VarlinkClient {
    let client = try fixture.client()
    for index in 1...count {
      _ = try client.startTrial(StartTrialParameters(subject: "s\(index)", duration: .days(index)))
    }
    return client
  }

  @Test(arguments: StoreKind.allCases)
  func startTrial_WithDurationAndReminders_StartsIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0xACE])
    let client = try fixture.client()
    let trial = try client.startTrial("acme-42", days: 3, reminders: [1, 2])
    #expect(trial.id == TrialID(0xACE))
    #expect(trial.subject == "acme-42")
    #expect(trial.state == .active)
    #expect(trial.startedAt == ControlFixture.start)
    #expect(trial.endsAt == ControlFixture.start.addingTimeInterval(3 * 86_400))
    #expect(trial.reminders.map(\.duration) == [.days(2), .days(1)])
    #expect(trial.revision == 1)
    #expect(trial.daysLeft == 3)
    #expect(trial.endedAt == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func startTrial_WithDefaultsOrEndsAt_StartsIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let client = try fixture.client()
    let defaulted = try client.startTrial(StartTrialParameters(subject: "default"))
    #expect(defaulted.endsAt == ControlFixture.start.addingTimeInterval(Days.defaultTrialLength.timeInterval))
    #expect(defaulted.reminders.map(\.duration) == ReminderSchedule.default.offsets)

    let end = ControlFixture.start.addingTimeInterval(10 * 86_400)
    let fixed = try client.startTrial(
      StartTrialParameters(subject: "fixed", endsAt: end, reminders: ReminderSchedule.none))
    #expect(fixed.endsAt == end)
    #expect(fixed.reminders.isEmpty)
  }

  @Test(arguments: StoreKind.allCases)
  func startTrial_OfAnActiveSubject_IsRefused(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(StartTrialParameters(subject: "acme-42"))
    let error = remoteError { _ = try client.startTrial(StartTrialParameters(subject: "acme-42")) }
    #expect(error?.name == "io.trialwatch.SubjectAlreadyActive")
    #expect(error?.parameters.subject == "acme-42")
    #expect(error?.parameters.id == "0000000000000001")
  }

  @Test(
    arguments: StoreKind.allCases,
    [
      (#"{"duration":"5d"}"#, "subject", "is required"),
      (#"{"subject":5}"#, "subject", "expected a string, got a number"),
      (#"{"subject":""}"#, "subject", "must not be empty"),
      (#"{"subject":"a","duration":"5 parsecs"}"#, "duration", "unknown unit"),
      (#"{"subject":"a","duration":"0"}"#, "duration", "positive"),
      (#"{"subject":"a","duration":"5d","endsAt":"2030-01-01T00:00:00Z"}"#, "endsAt", "not both"),
      (#"{"subject":"a","endsAt":"2025-13-01T00:00:00Z"}"#, "endsAt", "month 13 out of range"),
      (#"{"subject":"a","endsAt":"2020-01-01T00:00:00Z"}"#, "endsAt", "future"),
      (#"{"subject":"a","reminders":["1d",7]}"#, "reminders", "reminders[1]: expected a string"),
      (#"{"subject":"a","reminders":"1d"}"#, "reminders", "expected an array"),
      (#"{"subject":"a","endAt":"2030-01-01T00:00:00Z"}"#, "endAt", "not a parameter"),
    ])
  func startTrial_WithAnInvalidParameter_NamesIt(
    store: StoreKind, example: (parameters: String, parameter: String, problem: String)
  ) throws {
    let (parameters, parameter, problem) = example
    let fixture = try ControlFixture(store: store)
    let raw = try fixture.client()
    let error = remoteError { try raw.call("io.trialwatch.Trials.StartTrial", parameters) }
    #expect(error?.name == "org.varlink.service.InvalidParameter")
    #expect(error?.parameters.parameter == parameter)
    let text = error?.parameters.problem ?? ""
    #expect(text.contains(problem), "problem was: \(text)")
    // The connection carries on.
    #expect(try raw.getInfo().product == "trialwatchd")
  }

  @Test(arguments: StoreKind.allCases)
  func getTrial_ByIDOrSubject_FindsIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x42])
    let client = try fixture.client()
    let started = try client.startTrial(StartTrialParameters(subject: "acme-42"))
    fixture.advance(by: 86_400)
    let byID = try client.getTrial(GetTrialParameters(id: started.id))
    #expect(byID.subject == "acme-42")
    #expect(byID.daysLeft == 4)
    #expect(try client.getTrial(GetTrialParameters(subject: "acme-42")).id == started.id)
  }

  @Test(arguments: StoreKind.allCases)
  func getTrial_OfWhatIsMissingOrInvalid_SaysWhy(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let client = try fixture.client()
    let byID = remoteError { _ = try client.getTrial(GetTrialParameters(id: TrialID(0xBEEF))) }
    #expect(byID?.name == "io.trialwatch.TrialNotFound")
    #expect(byID?.parameters.id == "000000000000beef")
    let bySubject = remoteError { _ = try client.getTrial(GetTrialParameters(subject: "nobody-here")) }
    #expect(bySubject?.name == "io.trialwatch.TrialNotFound")
    #expect(bySubject?.parameters.subject == "nobody-here")

    let raw = client
    let neither = remoteError { try raw.call("io.trialwatch.Trials.GetTrial") }
    #expect(neither?.parameters.parameter == "id")
    let both = remoteError { try raw.call("io.trialwatch.Trials.GetTrial", #"{"id":"1","subject":"x"}"#) }
    #expect(both?.parameters.parameter == "subject")
    let badID = remoteError { try raw.call("io.trialwatch.Trials.GetTrial", #"{"id":"xyz"}"#) }
    #expect(badID?.name == "org.varlink.service.InvalidParameter")
    #expect(badID?.parameters.parameter == "id")
  }

  @Test(arguments: StoreKind.allCases)
  func listTrials_OfMoreThanAPage_PagesByCursor(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: Array(1...7))
    let client = try numbered(7, on: fixture)
    var seen: [TrialID] = []
    var cursor: TrialID?
    var pages = 0
    repeat {
      let page = try client.listTrials(ListTrialsParameters(limit: 3, after: cursor))
      seen += page.trials.map(\.id)
      cursor = page.next
      pages += 1
      #expect(page.trials.count <= 3)
    } while cursor != nil && pages < 10
    #expect(pages == 3)
    #expect(seen == (1...7).map { TrialID(UInt64($0)) })

    let whole = try client.listTrials()
    #expect(whole.trials.count == 7)
    #expect(whole.next == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func listTrials_WithFilters_ListsTheMatches(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: Array(1...4))
    let client = try numbered(4, on: fixture)
    _ = try client.endTrial(EndTrialParameters(id: TrialID(4), outcome: .converted))
    let soon = try client.listTrials(ListTrialsParameters(expiringWithin: .days(2)))
    #expect(soon.trials.map(\.id) == [TrialID(1), TrialID(2)])
    let converted = try client.listTrials(ListTrialsParameters(state: .converted))
    #expect(converted.trials.map(\.id) == [TrialID(4)])
    let active = try client.listTrials(ListTrialsParameters(state: .active, limit: 2))
    #expect(active.trials.map(\.id) == [TrialID(1), TrialID(2)])
    #expect(active.next == TrialID(2))
  }

  @Test(arguments: StoreKind.allCases)
  func listTrials_WithBadParameters_IsRefused(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let raw = try fixture.client()
    for (parameters, name) in [
      (#"{"limit":0}"#, "limit"), (#"{"limit":1001}"#, "limit"), (#"{"limit":2.5}"#, "limit"),
      (#"{"state":"frozen"}"#, "state"), (#"{"after":"not-an-id"}"#, "after"),
      (#"{"expiringWithin":"soon"}"#, "expiringWithin"),
    ] {
      let error = remoteError { try raw.call("io.trialwatch.Trials.ListTrials", parameters) }
      #expect(error?.name == "org.varlink.service.InvalidParameter", "\(parameters)")
      #expect(error?.parameters.parameter == name, "\(parameters)")
    }
  }

  @Test(arguments: StoreKind.allCases)
  func extendTrial_ByOrTo_MovesTheEnd(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [9])
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme", duration: .days(5)))
    let later = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(.days(2))))
    #expect(later.endsAt == trial.endsAt.addingTimeInterval(2 * 86_400))
    #expect(later.revision == 2)
    let end = ControlFixture.start.addingTimeInterval(30 * 86_400)
    let moved = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .to(end)))
    #expect(moved.endsAt == end)
    #expect(moved.revision == 3)

    let past = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .to(ControlFixture.start)))
    }
    #expect(past?.name == "org.varlink.service.InvalidParameter")
    #expect(past?.parameters.parameter == "endsAt")
    let missing = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: TrialID(0x77), change: .by(.days(1))))
    }
    #expect(missing?.name == "io.trialwatch.TrialNotFound")
    #expect(missing?.parameters.id == "0000000000000077")
    let neither = remoteError {
      try client.call("io.trialwatch.Trials.ExtendTrial", #"{"id":"9"}"#)
    }
    #expect(neither?.parameters.parameter == "by")
  }

  @Test(arguments: StoreKind.allCases)
  func endTrial_OfAnActiveTrial_EndsItOnce(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [5, 2])
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme"))
    fixture.advance(by: 3600)
    let ended = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .cancelled))
    #expect(ended.state == .cancelled)
    #expect(ended.endedAt == ControlFixture.start.addingTimeInterval(3600))
    let again = remoteError { _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted)) }
    expectNotActive(again, id: "0000000000000005", state: "cancelled")
    let extend = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(.days(1))))
    }
    expectNotActive(extend, id: "0000000000000005", state: "cancelled")
    let missing = remoteError {
      _ = try client.endTrial(EndTrialParameters(id: TrialID(6), outcome: .converted))
    }
    #expect(missing?.name == "io.trialwatch.TrialNotFound")
    #expect(missing?.parameters.id == "0000000000000006")
    let badOutcome = remoteError {
      try client.call("io.trialwatch.Trials.EndTrial", #"{"id":"5","outcome":"expired"}"#)
    }
    #expect(badOutcome?.parameters.parameter == "outcome")
    // The subject's ended trial is still found by its subject.
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).state == .cancelled)
    // The subject is free again; its newest trial is found by subject, active or ended, even
    // with a lower id than the older one.
    let next = try client.startTrial(StartTrialParameters(subject: "acme"))
    #expect(next.id == TrialID(2))
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).id == next.id)
    _ = try client.endTrial(EndTrialParameters(id: next.id, outcome: .converted))
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).id == next.id)
  }

  @Test(arguments: StoreKind.allCases)
  func getPlan_OfATrial_ShowsPastAndFutureEvents(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [3])
    let client = try fixture.client()
    let trial = try client.startTrial("acme", days: 5, reminders: [3, 1])
    var plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.pending, .pending, .pending])
    #expect(plan.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(plan.map(\.offset?.duration) == [.days(3), .days(1), nil])
    #expect(plan.last?.due == trial.endsAt)

    // Asleep past the first reminder: it is taken a minute late, on waking.
    fixture.jump(by: 2 * 86_400 + 60)
    let fired = fixture.fireDue()
    #expect(fired.map(\.kind) == [.reminder])
    #expect(fired.map(\.lateness?.duration) == [.seconds(60)])
    plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.delivered, .pending, .pending])
    #expect(plan[0].takenAt == fixture.now)
    #expect(plan[0].lateness?.duration == .seconds(60))
    #expect(plan[0].id == fired.first?.id)

    _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted))
    plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.delivered, .skipped, .skipped])
    #expect(plan[1].reason == "trial-converted")

    let missing = remoteError { _ = try client.getPlan(GetPlanParameters(id: TrialID(0xFF))) }
    #expect(missing?.name == "io.trialwatch.TrialNotFound")
    #expect(missing?.parameters.id == "00000000000000ff")
  }

  @Test(arguments: StoreKind.allCases)
  func remindersAlreadyDue_AreSkippedAtStartAndAtExtension(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [4])
    let client = try fixture.client()
    let day: TimeInterval = 86_400
    // Three days before a two-day trial's end is already past.
    let trial = try client.startTrial("short", days: 2, reminders: [3, 1])
    var plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.skipped, .pending, .pending])
    #expect(plan[0].reason == "already-due-at-start")
    #expect(plan[0].takenAt == ControlFixture.start)
    #expect(try client.getStatus().pendingEvents == 2)

    fixture.advance(by: day)
    let reminder = fixture.fireDue()
    #expect(reminder.map(\.offset?.duration) == [.days(1)])
    #expect(reminder.map(\.lateness?.duration) == [nil])

    // Moved to half a day from now: both reminders of the new revision are already due.
    let end = fixture.now.addingTimeInterval(day / 2)
    let extended = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .to(end)))
    #expect(extended.revision == 2)
    plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.skipped, .skipped, .skipped, .delivered, .pending])
    #expect(plan.map(\.revision) == [2, 1, 2, 1, 2])
    #expect(
      plan.map(\.reason) == [
        "already-due-at-extension", "already-due-at-start", "already-due-at-extension", nil, nil,
      ])
    #expect(plan.last?.due == end)
    let status = try client.getStatus()
    #expect(status.pendingEvents == 1)
    #expect(status.nextEvent?.id == plan.last?.id)
    #expect(status.nextEvent?.subject == "short")
    #expect(try client.simulate(SimulateParameters(at: .fromNow(.days(1)))).map(\.id) == [plan[4].id])
  }

  @Test(arguments: StoreKind.allCases)
  func anExpiredTrial_IsReported_AndCannotChange(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [7, 8])
    let client = try fixture.client()
    let trial = try client.startTrial("acme", days: 2, reminders: [1])
    _ = try client.startTrial(
      StartTrialParameters(subject: "other", duration: .days(9), reminders: ReminderSchedule.none))
    fixture.advance(by: 86_400)
    #expect(fixture.fireDue().map(\.kind) == [.reminder])
    fixture.advance(by: 86_400)
    let fired = fixture.fireDue()
    #expect(fired.map(\.kind) == [.expiry])
    #expect(fired.map(\.subject) == ["acme"])
    #expect(fired.map(\.lateness?.duration) == [nil])

    let expired = try client.getTrial(GetTrialParameters(id: trial.id))
    #expect(expired.state == .expired)
    #expect(expired.endedAt == trial.endsAt)
    #expect(try client.getTrial(GetTrialParameters(subject: "acme")).id == trial.id)
    let end = remoteError { _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted)) }
    expectNotActive(end, id: "0000000000000007", state: "expired")
    let extend = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(.days(1))))
    }
    expectNotActive(extend, state: "expired")
    #expect(try client.getPlan(GetPlanParameters(id: trial.id)).map(\.state) == [.delivered, .delivered])

    let status = try client.getStatus()
    #expect(status.trials == TrialCounts(active: 1, expired: 1))
    #expect(status.pendingEvents == 1)
    #expect(status.nextEvent?.trialId == TrialID(8))
    #expect(status.nextEvent?.subject == "other")
    #expect(try client.listTrials(ListTrialsParameters(state: .expired)).trials.map(\.id) == [trial.id])
    #expect(try client.listTrials(ListTrialsParameters(state: .active)).trials.map(\.id) == [TrialID(8)])
    // The subject may start again.
    #expect(try client.startTrial(StartTrialParameters(subject: "acme")).state == .active)
    #expect(try client.getStatus().trials == TrialCounts(active: 2, expired: 1))
  }

  @Test(arguments: StoreKind.allCases)
  func watchReportsLateAndSkippedEvents_AfterASleep(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x5])
    let client = try fixture.client()
    let trial = try client.startTrial("sleepy", days: 3, reminders: [2, 1])
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    #expect(try watcher.receive().continues)

    // Asleep past the end: the expiry fires an hour late; the reminders it supersedes are skipped.
    fixture.jump(by: 3 * 86_400 + 3600)
    let taken = fixture.fireDue()
    var events: [EventObject] = []
    for _ in 0..<3 {
      if let event = try watcher.receive().parameters(as: WatchReply.self).event { events.append(event) }
    }
    // The same events as delivered to the journal, each with its place in the log.
    #expect(events.map(\.cursor) == [1, 2, 3].map { EventCursor($0) })
    #expect(events.map(\.id) == taken.map(\.id) && events.map(\.takenAt) == taken.map(\.takenAt))
    #expect(events.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(events.map(\.state) == [.skipped, .skipped, .fired])
    #expect(events.map(\.reason) == ["superseded-by-expiry", "superseded-by-expiry", nil])
    let late = [2 * 86_400 + 3600, 86_400 + 3600, 3600].map { Duration.seconds($0) }
    #expect(events.map(\.lateness?.duration) == late)
    #expect(events.allSatisfy { $0.takenAt == fixture.now && $0.subject == "sleepy" })
    let plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.skipped, .skipped, .delivered])
    #expect(plan.last?.lateness?.duration == .seconds(3600))
    #expect(try client.getTrial(GetTrialParameters(id: trial.id)).endedAt == fixture.now, "when it was taken")
    #expect(try client.getStatus().trials == TrialCounts(expired: 1))
  }

  @Test(arguments: StoreKind.allCases)
  func simulate_AnyTime_ChangesNothing(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: .days(2), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: .days(6), reminders: ReminderSchedule.none))
    let soon = try client.simulate(SimulateParameters(at: .fromNow(.days(3))))
    #expect(soon.map(\.trialId) == [TrialID(1)])
    #expect(soon.first?.state == .fired)
    #expect(soon.first?.subject == "a")
    let all = try client.simulate(
      SimulateParameters(at: .date(ControlFixture.start.addingTimeInterval(7 * 86_400))))
    #expect(all.map(\.trialId) == [TrialID(1), TrialID(2)])
    // Nothing fired for real.
    #expect(try client.getPlan(GetPlanParameters(id: TrialID(1))).map(\.state) == [.pending])
    let bad = remoteError {
      try client.call("io.trialwatch.Trials.Simulate", #"{"at":"tomorrow"}"#)
    }
    #expect(bad?.name == "org.varlink.service.InvalidParameter")
    #expect(bad?.parameters.parameter == "at")
  }

  @Test(arguments: StoreKind.allCases)
  func getStatus_ReportsCountsAndTheNextEvent(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: .days(2), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: .days(1), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "c", duration: .days(9), reminders: ReminderSchedule.none))
    _ = try client.endTrial(EndTrialParameters(id: TrialID(3), outcome: .cancelled))
    fixture.advance(by: 3600)
    let status = try client.getStatus()
    #expect(status.version == "1.2.3-test")
    #expect(status.trials == TrialCounts(active: 2, cancelled: 1))
    #expect(status.pendingEvents == 2)
    #expect(status.nextEvent?.trialId == TrialID(2))
    #expect(status.uptime.duration == .seconds(3600))
    #expect(status.connections == 1)
    #expect(status.watchers == 0)
    let extra = remoteError {
      try client.call("io.trialwatch.Trials.GetStatus", #"{"verbose":true}"#)
    }
    #expect(extra?.parameters.parameter == "verbose")
    if store == .lmdb {
      #expect((status.storeBytes ?? 0) > 0, "the size of the store file")
    }
  }
}

/// The call was refused as `io.trialwatch.TrialNotActive`, naming the trial's state (and its
/// id, where given).
func expectNotActive(
  _ error: ControlError?, id: String? = nil, state: String, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(error?.name == "io.trialwatch.TrialNotActive", sourceLocation: sourceLocation)
  if let id { #expect(error?.parameters.id == id, sourceLocation: sourceLocation) }
  #expect(error?.parameters.state == state, sourceLocation: sourceLocation)
}
