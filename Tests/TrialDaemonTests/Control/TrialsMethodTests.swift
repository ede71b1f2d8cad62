import Foundation
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// Every io.trialwatch.Trials method and error, through a real socket.
@Suite struct TrialsMethodTests {
  @Test func startTrialWithDurationAndReminders() throws {
    let fixture = try ServerFixture(ids: [0xACE])
    let client = try fixture.client()
    let trial = try client.startTrial(
      StartTrialParameters(
        subject: "acme-42", duration: Days(3), reminders: try ReminderSchedule([Days(1), Days(2)])))
    #expect(trial.id == TrialID(0xACE))
    #expect(trial.subject == "acme-42")
    #expect(trial.state == .active)
    #expect(trial.startedAt == ServerFixture.start)
    #expect(trial.endsAt == ServerFixture.start.addingTimeInterval(3 * 86_400))
    #expect(trial.reminders == [Days(2), Days(1)])
    #expect(trial.revision == 1)
    #expect(trial.daysLeft == Days(3))
    #expect(trial.endedAt == nil)
  }

  @Test func startTrialDefaultsAndEndsAt() throws {
    let fixture = try ServerFixture()
    let client = try fixture.client()
    let defaulted = try client.startTrial(StartTrialParameters(subject: "default"))
    #expect(defaulted.endsAt == ServerFixture.start.addingTimeInterval(Days.defaultTrialLength.timeInterval))
    #expect(defaulted.reminders == ReminderSchedule.default.offsets)

    let end = ServerFixture.start.addingTimeInterval(10 * 86_400)
    let fixed = try client.startTrial(
      StartTrialParameters(subject: "fixed", endsAt: end, reminders: ReminderSchedule.none))
    #expect(fixed.endsAt == end)
    #expect(fixed.reminders.isEmpty)
  }

  @Test func startTrialRefusesADuplicateSubject() throws {
    let fixture = try ServerFixture(ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(StartTrialParameters(subject: "acme-42"))
    let error = remoteError { _ = try client.startTrial(StartTrialParameters(subject: "acme-42")) }
    #expect(error?.name == "io.trialwatch.SubjectAlreadyActive")
    #expect(error?.parameters["subject"] == "acme-42")
    #expect(error?.parameters["id"] == "0000000000000001")
  }

  @Test(arguments: [
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
  func startTrialNamesTheInvalidParameter(parameters: String, parameter: String, problem: String) throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    guard case .object(let object) = try JSONValue.parse(parameters) else {
      Issue.record("bad fixture"); return
    }
    let error = remoteError { _ = try raw.call("io.trialwatch.Trials.StartTrial", object) }
    #expect(error?.name == "org.varlink.service.InvalidParameter")
    #expect(error?.parameters["parameter"]?.stringValue == parameter)
    let text = error?.parameters["problem"]?.stringValue ?? ""
    #expect(text.contains(problem), "problem was: \(text)")
    // The connection carries on.
    #expect(try raw.call("org.varlink.service.GetInfo")["product"] == "trialwatchd")
  }

  @Test func getTrialByIDAndSubject() throws {
    let fixture = try ServerFixture(ids: [0x42])
    let client = try fixture.client()
    let started = try client.startTrial(StartTrialParameters(subject: "acme-42"))
    fixture.clock.advance(by: 86_400)
    let byID = try client.getTrial(GetTrialParameters(id: started.id))
    #expect(byID.subject == "acme-42")
    #expect(byID.daysLeft == Days(4))
    #expect(try client.getTrial(GetTrialParameters(subject: "acme-42")).id == started.id)
  }

  @Test func getTrialErrors() throws {
    let fixture = try ServerFixture()
    let client = try fixture.client()
    let byID = remoteError { _ = try client.getTrial(GetTrialParameters(id: TrialID(0xBEEF))) }
    #expect(byID?.name == "io.trialwatch.TrialNotFound")
    #expect(byID?.parameters["id"] == "000000000000beef")
    let bySubject = remoteError { _ = try client.getTrial(GetTrialParameters(subject: "nobody-here")) }
    #expect(bySubject?.name == "io.trialwatch.TrialNotFound")
    #expect(bySubject?.parameters["subject"] == "nobody-here")

    let raw = client.connection
    let neither = remoteError { _ = try raw.call("io.trialwatch.Trials.GetTrial") }
    #expect(neither?.parameters["parameter"] == "id")
    let both = remoteError { _ = try raw.call("io.trialwatch.Trials.GetTrial", ["id": "1", "subject": "x"]) }
    #expect(both?.parameters["parameter"] == "subject")
    let badID = remoteError { _ = try raw.call("io.trialwatch.Trials.GetTrial", ["id": "xyz"]) }
    #expect(badID?.name == "org.varlink.service.InvalidParameter")
    #expect(badID?.parameters["parameter"] == "id")
  }

  @Test func listTrialsPagesByCursor() throws {
    let fixture = try ServerFixture(ids: Array(1...7))
    let client = try fixture.client()
    for index in 1...7 {
      _ = try client.startTrial(StartTrialParameters(subject: "s\(index)", duration: Days(Double(index))))
    }
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

  @Test func listTrialsFilters() throws {
    let fixture = try ServerFixture(ids: Array(1...4))
    let client = try fixture.client()
    for index in 1...4 {
      _ = try client.startTrial(StartTrialParameters(subject: "s\(index)", duration: Days(Double(index))))
    }
    _ = try client.endTrial(EndTrialParameters(id: TrialID(4), outcome: .converted))
    let soon = try client.listTrials(ListTrialsParameters(expiringWithin: Days(2)))
    #expect(soon.trials.map(\.id) == [TrialID(1), TrialID(2)])
    let converted = try client.listTrials(ListTrialsParameters(state: .converted))
    #expect(converted.trials.map(\.id) == [TrialID(4)])
    let active = try client.listTrials(ListTrialsParameters(state: .active, limit: 2))
    #expect(active.trials.map(\.id) == [TrialID(1), TrialID(2)])
    #expect(active.next == TrialID(2))
  }

  @Test func listTrialsRejectsBadParameters() throws {
    let fixture = try ServerFixture()
    let raw = try fixture.raw()
    for (parameters, name) in [
      (["limit": JSONValue.int(0)], "limit"), (["limit": 1001], "limit"), (["limit": 2.5], "limit"),
      (["state": "paused"], "state"), (["after": "not-an-id"], "after"),
      (["expiringWithin": "soon"], "expiringWithin"),
    ] as [(JSONObject, String)] {
      let error = remoteError { _ = try raw.call("io.trialwatch.Trials.ListTrials", parameters) }
      #expect(error?.name == "org.varlink.service.InvalidParameter", "\(parameters)")
      #expect(error?.parameters["parameter"]?.stringValue == name, "\(parameters)")
    }
  }

  @Test func extendTrialByAndTo() throws {
    let fixture = try ServerFixture(ids: [9])
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme", duration: Days(5)))
    let later = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(Days(2))))
    #expect(later.endsAt == trial.endsAt.addingTimeInterval(2 * 86_400))
    #expect(later.revision == 2)
    let end = ServerFixture.start.addingTimeInterval(30 * 86_400)
    let moved = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .to(end)))
    #expect(moved.endsAt == end)
    #expect(moved.revision == 3)

    let past = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .to(ServerFixture.start)))
    }
    #expect(past?.name == "org.varlink.service.InvalidParameter")
    #expect(past?.parameters["parameter"] == "endsAt")
    let missing = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: TrialID(77), change: .by(Days(1))))
    }
    #expect(missing?.name == "io.trialwatch.TrialNotFound")
    let neither = remoteError {
      _ = try client.connection.call("io.trialwatch.Trials.ExtendTrial", ["id": "9"])
    }
    #expect(neither?.parameters["parameter"] == "by")
  }

  @Test func endTrialAndTrialNotActive() throws {
    let fixture = try ServerFixture(ids: [5])
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme"))
    fixture.clock.advance(by: 3600)
    let ended = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .cancelled))
    #expect(ended.state == .cancelled)
    #expect(ended.endedAt == ServerFixture.start.addingTimeInterval(3600))
    let again = remoteError { _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted)) }
    #expect(again?.name == "io.trialwatch.TrialNotActive")
    #expect(again?.parameters["state"] == "cancelled")
    let extend = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(Days(1))))
    }
    #expect(extend?.name == "io.trialwatch.TrialNotActive")
    let badOutcome = remoteError {
      _ = try client.connection.call("io.trialwatch.Trials.EndTrial", ["id": "5", "outcome": "expired"])
    }
    #expect(badOutcome?.parameters["parameter"] == "outcome")
    // The subject is free again.
    #expect(try client.startTrial(StartTrialParameters(subject: "acme")).state == .active)
  }

  @Test func getPlanShowsPastAndFutureEvents() throws {
    let fixture = try ServerFixture(ids: [3])
    let client = try fixture.client()
    let trial = try client.startTrial(
      StartTrialParameters(
        subject: "acme", duration: Days(5), reminders: try ReminderSchedule([Days(3), Days(1)])))
    var plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.pending, .pending, .pending])
    #expect(plan.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(plan.map(\.offset) == [Days(3), Days(1), nil])
    #expect(plan.last?.due == trial.endsAt)

    fixture.clock.advance(by: 2 * 86_400 + 60)
    let fired = try fixture.backend.fireDue()
    #expect(fired.map(\.kind) == [.reminder])
    plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.delivered, .pending, .pending])
    #expect(plan[0].takenAt == fixture.clock.now())
    #expect(plan[0].lateness == Days(timeInterval: 60))

    _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted))
    plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map(\.state) == [.delivered, .skipped, .skipped])
    #expect(plan[1].reason == "trial-converted")

    let missing = remoteError { _ = try client.getPlan(GetPlanParameters(id: TrialID(0xFF))) }
    #expect(missing?.name == "io.trialwatch.TrialNotFound")
  }

  @Test func simulateChangesNothing() throws {
    let fixture = try ServerFixture(ids: [1, 2])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(2), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: Days(6), reminders: ReminderSchedule.none))
    let soon = try client.simulate(SimulateParameters(at: .fromNow(Days(3))))
    #expect(soon.map(\.trialID) == [TrialID(1)])
    #expect(soon.first?.state == .fired)
    #expect(soon.first?.subject == "a")
    let all = try client.simulate(
      SimulateParameters(at: .date(ServerFixture.start.addingTimeInterval(7 * 86_400))))
    #expect(all.map(\.trialID) == [TrialID(1), TrialID(2)])
    // Nothing fired for real.
    #expect(try client.getPlan(GetPlanParameters(id: TrialID(1))).map(\.state) == [.pending])
    let bad = remoteError {
      _ = try client.connection.call("io.trialwatch.Trials.Simulate", ["at": "tomorrow"])
    }
    #expect(bad?.name == "org.varlink.service.InvalidParameter")
    #expect(bad?.parameters["parameter"] == "at")
  }

  @Test func getStatusReportsCountsAndNextEvent() throws {
    let fixture = try ServerFixture(ids: [1, 2, 3])
    let client = try fixture.client()
    _ = try client.startTrial(
      StartTrialParameters(subject: "a", duration: Days(2), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "b", duration: Days(1), reminders: ReminderSchedule.none))
    _ = try client.startTrial(
      StartTrialParameters(subject: "c", duration: Days(9), reminders: ReminderSchedule.none))
    _ = try client.endTrial(EndTrialParameters(id: TrialID(3), outcome: .cancelled))
    fixture.clock.advance(by: 3600)
    let status = try client.getStatus()
    #expect(status.version == "1.2.3-test")
    #expect(status.status.trials == TrialCounts(active: 2, cancelled: 1))
    #expect(status.status.pendingEvents == 2)
    #expect(status.status.nextEvent?.trialID == TrialID(2))
    #expect(status.status.uptime == Days(timeInterval: 3600))
    #expect(status.connections == 1)
    #expect(status.watchers == 0)
    let extra = remoteError {
      _ = try client.connection.call("io.trialwatch.Trials.GetStatus", ["verbose": true])
    }
    #expect(extra?.parameters["parameter"] == "verbose")
  }
}
