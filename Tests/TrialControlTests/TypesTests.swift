import Foundation
import Testing
import TrialControl
import TrialCore

@Suite struct TypesTests {
  static let now = Date(timeIntervalSince1970: 1_750_000_000)

  static func trial() throws -> Trial {
    Trial(
      id: TrialID(0xABC), subject: "acme-42",
      period: TrialPeriod(startDate: now, endDate: now.addingTimeInterval(5 * 86_400)),
      reminders: try ReminderSchedule([.days(3), .seconds(90)]))
  }

  @Test func trialObjectsCarryTheWireFields() throws {
    let object = TrialObject(try Self.trial(), now: Self.now.addingTimeInterval(86_400 / 2))
    #expect(
      object.json.jsonText
        == #"{"id":"0000000000000abc","subject":"acme-42","state":"active","#
        + #""startedAt":"2025-06-15T15:06:40Z","#
        + #""endsAt":"2025-06-20T15:06:40Z","reminders":["3d","1min 30s"],"revision":1,"daysLeft":4.5}"#)
    #expect(try TrialObject(json: object.json) == object)
  }

  @Test func codableGivesTheSameWireForm() throws {
    let object = TrialObject(try Self.trial(), now: Self.now)
    let data = try JSONEncoder().encode(object)
    guard case .object(let parsed) = try JSONValue.parse(Array(data)) else {
      Issue.record("not an object")
      return
    }
    #expect(Set(parsed.keys) == Set(object.json.keys))
    #expect(try TrialObject(json: parsed) == object)
    #expect(try JSONDecoder().decode(TrialObject.self, from: data) == object)
    let parameters = StartTrialParameters(
      subject: "x", duration: Days(2), reminders: try ReminderSchedule([.days(1)]))
    #expect(
      try JSONDecoder().decode(StartTrialParameters.self, from: JSONEncoder().encode(parameters))
        == parameters)
  }

  @Test func repliesIgnoreFieldsTheyDoNotKnow() throws {
    var json = TrialObject(try Self.trial(), now: Self.now).json
    json["addedLater"] = "whatever"
    #expect(try TrialObject(json: json).subject == "acme-42")
  }

  @Test func replyErrorsNameTheFullPath() throws {
    var trial = TrialObject(try Self.trial(), now: Self.now).json
    trial["endsAt"] = "soon"
    let error = try #require(throws: JSONShapeError.self) {
      try ListTrialsReply(json: ["trials": [.object(trial)]])
    }
    #expect(error.pathText == "trials[0].endsAt")
    #expect(error.field == "trials")
  }

  @Test func everyParameterStructRoundTrips() throws {
    let id = TrialID(0x1234)
    let values: [any JSONRepresentable] = [
      StartTrialParameters(subject: "s", endsAt: Self.now, reminders: ReminderSchedule.none),
      GetTrialParameters(id: id), GetTrialParameters(subject: "s"),
      ListTrialsParameters(state: .expired, expiringWithin: Days(2), limit: 5, after: id),
      ExtendTrialParameters(id: id, change: .by(Days(1))),
      ExtendTrialParameters(id: id, change: .to(Self.now)),
      EndTrialParameters(id: id, outcome: .converted), GetPlanParameters(id: id),
      SimulateParameters(at: .fromNow(Days(3))), SimulateParameters(at: .date(Self.now)), NoParameters(),
    ]
    for value in values {
      let again = try type(of: value).init(json: value.json)
      #expect(again.json == value.json, "\(value)")
    }
  }

  @Test func startTrialWithNoRemindersSendsAnEmptyList() throws {
    let parameters = StartTrialParameters(subject: "s", reminders: ReminderSchedule.none)
    #expect(parameters.json["reminders"] == [])
    #expect(try StartTrialParameters(json: parameters.json).reminders == ReminderSchedule.none)
    #expect(try StartTrialParameters(json: ["subject": "s"]).reminders == nil)
  }

  @Test func reminderProblemsAreParameterErrors() {
    let error = #expect(throws: JSONShapeError.self) {
      try StartTrialParameters(json: [
        "subject": "s", "reminders": .array((1...40).map { .string("\($0)h") }),
      ])
    }
    #expect(error?.field == "reminders")
    #expect(error?.problem.contains("at most 32 reminders") == true)
  }

  @Test func simulateTargets() throws {
    #expect(try SimulateParameters.Target(parsing: "+1d 12h") == .fromNow(Days(1.5)))
    #expect(try SimulateParameters.Target(parsing: "2025-06-15T15:06:40Z") == .date(Self.now))
    #expect(
      SimulateParameters.Target.fromNow(Days(1)).resolve(now: Self.now) == Self.now.addingTimeInterval(86_400)
    )
    let error = #expect(throws: JSONShapeError.self) { try SimulateParameters(json: ["at": "later"]) }
    #expect(error?.field == "at")
    #expect(error?.problem.contains("or +span") == true)
  }

  @Test func listFiltersMatchAsDocumented() throws {
    let trial = try Self.trial()
    #expect(ListTrialsParameters().matches(trial, now: Self.now))
    #expect(ListTrialsParameters(state: .active).matches(trial, now: Self.now))
    #expect(!ListTrialsParameters(state: .expired).matches(trial, now: Self.now))
    #expect(ListTrialsParameters(expiringWithin: Days(5)).matches(trial, now: Self.now))
    #expect(!ListTrialsParameters(expiringWithin: Days(4.9)).matches(trial, now: Self.now))
    #expect(ListTrialsParameters().pageSize == 100)
  }

  @Test func thePlanMergesTheLedgerWithWhatIsPending() throws {
    var trial = try Self.trial()
    let events = trial.events
    let fired = LedgerEntry(
      event: events[0], outcome: .fired, takenAt: events[0].due.addingTimeInterval(120), isLate: true,
      deliveredAt: events[0].due.addingTimeInterval(121))
    var plan = EventObject.plan(of: trial, ledger: [fired])
    #expect(plan.map(\.state) == [.delivered, .pending, .pending])
    #expect(plan[0].lateness == .seconds(120))
    #expect(plan.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(plan.allSatisfy { $0.subject == "acme-42" })

    trial.state = .cancelled
    trial.endedAt = Self.now.addingTimeInterval(4 * 86_400)
    plan = EventObject.plan(of: trial, ledger: [fired])
    #expect(plan.map(\.state) == [.delivered, .skipped, .skipped])
    #expect(plan[2].reason == "trial-cancelled")
    #expect(plan[2].takenAt == trial.endedAt)

    let skipped = LedgerEntry(
      event: events[1], outcome: .skipped(.supersededByExpiry), takenAt: Self.now, isLate: true)
    let object = EventObject(skipped, subject: nil)
    #expect(object.state == .skipped)
    #expect(object.reason == "superseded-by-expiry")
    #expect(object.detail == "superseded by the trial's expiry")
    #expect(try EventObject(json: object.json) == object)
  }

  @Test func domainErrorsBecomeTheirVarlinkErrors() {
    let id = TrialID(0x5)
    #expect(ControlError(TrialError.notFound(id: id)) == .trialNotFound(id: id))
    #expect(ControlError(TrialError.notFound(subject: "acme-42")) == .trialNotFound(subject: "acme-42"))
    #expect(
      ControlError(TrialError(.subjectAlreadyActive(subject: "s", existing: id)))
        == .subjectAlreadyActive(subject: "s", existing: id))
    #expect(ControlError(TrialError(.notActive(id, .expired))).name == "io.trialwatch.TrialNotActive")
    let invalid = ControlError(TrialError.invalid("endsAt", "the end must lie in the future"))
    #expect(invalid.name == "org.varlink.service.InvalidParameter")
    #expect(invalid.parameters["parameter"] == "endsAt")
    #expect(invalid.description == "invalid parameter endsAt: the end must lie in the future")
    #expect(ControlError(TrialError(.idSpaceExhausted(attempts: 64))).name == "io.trialwatch.InternalError")
  }

  @Test func errorDescriptionsNameWhatWasWrong() {
    #expect(ControlError.trialNotFound(id: TrialID(1)).description == "no trial with id 0000000000000001")
    #expect(ControlError.trialNotFound(subject: "x").description == "no active trial for subject \"x\"")
    #expect(
      ControlError.permissionDenied(method: "io.trialwatch.Trials.EndTrial", uid: 7).description.contains(
        "uid 7"))
    #expect(ControlError.methodNotFound("a.B").description == "the service has no method \"a.B\"")
    #expect(
      ControlError(name: "com.example.Odd", parameters: ["x": 1]).description == #"com.example.Odd {"x":1}"#)
  }

  @Test func aClientThatCannotConnectNamesThePath() {
    let path = "/nonexistent-\(UInt64.random(in: 0...UInt64.max))/io.trialwatch"
    let error = #expect(throws: VarlinkClientError.self) { _ = try VarlinkClient(path: path) }
    #expect(error?.isUnreachable == true)
    #expect(error?.errno == ENOENT)
    #expect(error?.description == "cannot connect to \(path): No such file or directory")
  }
}
