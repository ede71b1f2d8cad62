import Foundation
import Testing
import TrialControl
import TrialCore
import TrialTesting

@Suite struct TypesTests {
  static let now = Date(timeIntervalSince1970: 1_750_000_000)

  static func trial() throws -> Trial { try Trial.sample(start: now) }

  static func encode(_ value: some Encodable) throws -> String {
    String(decoding: try WireCoding.makeEncoder().encode(value), as: UTF8.self)
  }

  static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    try WireCoding.makeDecoder().decode(T.self, from: Data(text.utf8))
  }

  @Test func trialObject_Encoded_CarriesTheWireFields() throws {
    let object = TrialObject(try Self.trial(), now: Self.now.addingTimeInterval(86_400 / 2))
    let text = try Self.encode(object)
    #expect(
      text
        == #"{"daysLeft":4.5,"endsAt":"2025-06-20T15:06:40Z","extensions":0,"id":"0000000000000abc","labels":{},"#
        + #""reminders":["3d","1min 30s"],"revision":1,"startedAt":"2025-06-15T15:06:40Z","#
        + #""state":"active","subject":"acme-42"}"#)
    #expect(try Self.decode(TrialObject.self, text) == object)
  }

  @Test func replies_WithFieldsTheyDoNotKnow_IgnoreThem() throws {
    var text = try Self.encode(TrialObject(try Self.trial(), now: Self.now))
    text.removeLast()
    text += #","addedLater":"whatever"}"#
    #expect(try Self.decode(TrialObject.self, text).subject == "acme-42")
  }

  /// A daemon from before labels sends none: the trial reads with no labels.
  @Test func trialReply_OfADaemonBeforeLabels_ReadsWithNone() throws {
    let text = try Self.encode(TrialObject(try Self.trial(), now: Self.now))
    let older = text.replacingOccurrences(of: #""labels":{},"#, with: "")
    #expect(older != text)
    #expect(try Self.decode(TrialObject.self, older).labels == nil)
  }

  @Test func replyErrors_InANestedValue_NameTheFullPath() throws {
    let trial = try Self.encode(TrialObject(try Self.trial(), now: Self.now))
      .replacingOccurrences(of: #""endsAt":"2025-06-20T15:06:40Z""#, with: #""endsAt":"soon""#)
    let reply = try VarlinkReply(Array(#"{"parameters":{"trials":[\#(trial)]}}"#.utf8))
    let error = #expect(throws: WireProblem.self) { try reply.parameters(as: ListTrialsReply.self) }
    #expect(error?.pathText == "trials[0].endsAt")
    #expect(error?.problem.contains("\"soon\" is not an RFC 3339 time") == true)
  }

  @Test func everyParameterStruct_EncodedAndDecoded_IsUnchanged() throws {
    let id = TrialID(0x1234)
    try roundTrip(StartTrialParameters(subject: "s", endsAt: Self.now, reminders: ReminderSchedule.none))
    try roundTrip(StartTrialParameters(subject: "s", duration: .days(2), reminders: .default))
    try roundTrip(GetTrialParameters(id: id))
    try roundTrip(GetTrialParameters(subject: "s"))
    try roundTrip(ListTrialsParameters(state: .expired, expiringWithin: .days(2), limit: 5, after: id))
    try roundTrip(ExtendTrialParameters(id: id, change: .by(.days(1))))
    try roundTrip(ExtendTrialParameters(id: id, change: .to(Self.now)))
    try roundTrip(EndTrialParameters(id: id, outcome: .converted))
    try roundTrip(GetPlanParameters(id: id))
    try roundTrip(SimulateParameters(at: .fromNow(.days(3))))
    try roundTrip(SimulateParameters(at: .date(Self.now)))
    try roundTrip(NoParameters())
  }

  private func roundTrip<T: Codable & Equatable>(
    _ value: T, sourceLocation: SourceLocation = #_sourceLocation
  )
    throws
  {
    #expect(try Self.decode(T.self, Self.encode(value)) == value, sourceLocation: sourceLocation)
  }

  @Test func startTrial_WithNoReminders_SendsAnEmptyList() throws {
    let parameters = StartTrialParameters(subject: "s", reminders: ReminderSchedule.none)
    #expect(try Self.encode(parameters) == #"{"reminders":[],"subject":"s"}"#)
    let empty = try Self.decode(StartTrialParameters.self, #"{"subject":"s","reminders":[]}"#).command()
    #expect(empty == (try .start(subject: "s", reminders: [])))
    let unset = try Self.decode(StartTrialParameters.self, #"{"subject":"s"}"#).command()
    #expect(unset == (try .start(subject: "s")))
  }

  @Test func startTrial_WithTooManyReminders_NamesTheParameter() throws {
    let spans = (1...40).map { "\"\($0)h\"" }.joined(separator: ",")
    let parameters = try Self.decode(StartTrialParameters.self, #"{"subject":"s","reminders":[\#(spans)]}"#)
    let error = #expect(throws: TrialError.self) { try parameters.command() }
    #expect(error.map { ControlError($0).parameters.parameter } == "reminders")
    #expect(error?.description.contains("at most 32 reminders") == true)
  }

  @Test func simulateTarget_Parsed_IsASpanFromNowOrATime() throws {
    #expect(try SimulateParameters.Target(parsing: "+1d 12h") == .fromNow(.hours(36)))
    // Written as read, to the microsecond.
    #expect(try SimulateParameters.Target(parsing: "+7.0001").text == "+7s 100us")
    #expect(try SimulateParameters.Target(parsing: "2025-06-15T15:06:40Z") == .date(Self.now))
    #expect(
      SimulateParameters.Target.fromNow(.days(1)).resolve(now: Self.now)
        == Self.now.addingTimeInterval(86_400)
    )
    let error = #expect(throws: DecodingError.self) {
      try Self.decode(SimulateParameters.self, #"{"at":"later"}"#)
    }
    let problem = error.map { WireProblem($0) }
    #expect(problem?.path == ["at"])
    #expect(problem?.problem.contains("or +span") == true)
  }

  @Test func domainErrors_Converted_AreTheirVarlinkErrors() {
    let id = TrialID(0x5)
    #expect(ControlError(TrialError.notFound(id: id)) == .trialNotFound(id: id))
    #expect(ControlError(TrialError.notFound(subject: "acme-42")) == .trialNotFound(subject: "acme-42"))
    let active = ControlError(TrialError(.subjectAlreadyActive(subject: "s", existing: id)))
    #expect(active.name == "io.trialwatch.SubjectAlreadyActive")
    #expect(active.parameters == .init(id: "0000000000000005", subject: "s"))
    #expect(ControlError(TrialError(.notActive(id, .expired))).name == "io.trialwatch.TrialNotActive")
    let invalid = ControlError(TrialError.invalid(.end, "the end must lie in the future"))
    #expect(invalid.name == "org.varlink.service.InvalidParameter")
    #expect(invalid.parameters.parameter == "endsAt")
    #expect(invalid.description == "invalid parameter endsAt: the end must lie in the future")
    #expect(
      ControlError(TrialError.invalid(.length, "must be a positive span")).parameters.parameter == "duration")
    #expect(
      ControlError(TrialError.invalid(.extension, "must be a positive span")).parameters.parameter == "by")
    #expect(ControlError(TrialError(.idSpaceExhausted(attempts: 64))).name == "io.trialwatch.InternalError")
  }

  @Test func errorDescriptions_NameWhatWasWrong() {
    #expect(ControlError.trialNotFound(id: TrialID(1)).description == "no trial with id 0000000000000001")
    #expect(ControlError.trialNotFound(subject: "x").description == "no active trial for subject \"x\"")
    #expect(
      ControlError.permissionDenied(method: "io.trialwatch.Trials.EndTrial", uid: 7).description.contains(
        "uid 7"))
    #expect(ControlError.methodNotFound("a.B").description == "the service has no method \"a.B\"")
    #expect(
      ControlError(name: "com.example.Odd", parameters: .init(limit: 1)).description
        == #"com.example.Odd {"limit":1}"#)
  }

  @Test func client_ThatCannotConnect_NamesThePath() {
    let path = "/nonexistent-\(UInt64.random(in: 0...UInt64.max))/io.trialwatch"
    let error = #expect(throws: VarlinkClientError.self) { _ = try VarlinkClient(path: path) }
    #expect(error?.isUnreachable == true)
    #expect(error?.errno == ENOENT)
    #expect(error?.description == "cannot connect to \(path): No such file or directory")
  }
}
