import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialTesting

/// The hand-written fast path must agree with the Codable definition: what it reads, the
/// Codable path reads the same; what it writes, `JSONEncoder` writes byte for byte.
@Suite struct FastPathTests {
  static let decoder: JSONDecoder = {
    let decoder = WireCoding.makeDecoder()
    decoder.userInfo[.varlinkParameterTypes] = ParameterTypes([
      Trials.getTrial.qualifiedName: GetTrialParameters.self,
      Trials.startTrial.qualifiedName: StartTrialParameters.self,
      Trials.getPlan.qualifiedName: GetPlanParameters.self,
    ])
    return decoder
  }()

  /// The parameters the Codable path decodes, if it accepts them.
  static func codable(_ text: String) -> (any VarlinkParameters)? {
    try? IncomingCall.decode(Array(text.utf8), with: decoder).parameters?.get()
  }

  static func fast(_ text: String) -> (method: String, parameters: any VarlinkParameters)? {
    FastPath.call(Array(text.utf8)[...])
  }

  @Test(arguments: [
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"00000000000001a2"}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"1A2"}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"subject":"acme-42 é/€"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"duration":"30d","subject":"load-1-2"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"s","reminders":[]}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"s","reminders":["3d","1d 12h"],"endsAt":"2030-01-01T00:00:00.25+02:00"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"labels":{"tier":"pro","customer":"c-991 é"},"subject":"s"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"s","labels":{}}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"s","plan":"pro","labels":{"k":"v"}}}"#,
  ])
  func compactCall_IsReadAsTheCodablePathReadsIt(text: String) throws {
    let fast = try #require(Self.fast(text))
    let codable = try #require(Self.codable(text))
    let method = text.contains("GetTrial") ? Trials.getTrial.qualifiedName : Trials.startTrial.qualifiedName
    #expect(fast.method == method)
    let encoder = WireCoding.makeEncoder()
    #expect(try encoder.encode(fast.parameters) == encoder.encode(codable))
  }

  @Test(arguments: [
    // Another form: whitespace, envelope fields, escapes, other methods.
    #"{"method": "io.trialwatch.Trials.GetTrial","parameters":{"id":"1"}}"#,
    #"{"parameters":{"id":"1"},"method":"io.trialwatch.Trials.GetTrial"}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"1"},"oneway":true}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"subject":"a\"b"}}"#,
    #"{"method":"io.trialwatch.Trials.GetPlan","parameters":{"id":"1"}}"#,
    // Invalid: left for the Codable path to name.
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"xyz"}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"1","subject":"a"}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"id":"1","id":"2"}}"#,
    #"{"method":"io.trialwatch.Trials.GetTrial","parameters":{"bogus":"1"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","duration":"5 parsecs"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","reminders":"1d"}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","endsAt":["x"]}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a"}}trailing"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a"#,
    // Labels the fast path leaves: repeated, not text, or not an object.
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","labels":{"k":"1","k":"2"}}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","labels":{"k":1}}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","plan":["pro"]}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","labels":["k"]}}"#,
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","labels":{"k":"1",}}}"#,
  ])
  func otherMessage_IsLeftToTheCodablePath(text: String) {
    #expect(Self.fast(text) == nil)
  }

  /// Values are checked once, by the command made of the parameters, whichever path read them.
  @Test(arguments: [
    (#"{"subject":""}"#, "subject"),
    (#"{"subject":"a","duration":"0"}"#, "duration"),
    (#"{"subject":"a","labels":{"Tier":"x"}}"#, "labels"),
    (#"{"subject":"a","reminders":["0"]}"#, "reminders"),
  ])
  func invalidValue_ReadByEitherPath_IsRefusedByTheCommandNamingIt(parameters: String, name: String) throws {
    let text = #"{"method":"io.trialwatch.Trials.StartTrial","parameters":\#(parameters)}"#
    let fast = try #require(Self.fast(text)?.parameters as? StartTrialParameters)
    let decoded = try WireCoding.makeDecoder().decode(StartTrialParameters.self, from: Data(parameters.utf8))
    #expect(fast == decoded)
    let error = #expect(throws: TrialError.self) { try fast.command() }
    #expect(error.map { ControlError($0).parameters.parameter } == name)
  }

  @Test func trialReply_IsWrittenAsJSONEncoderWritesIt() throws {
    var generator = SeededGenerator(seed: 9)
    let encoder = WireCoding.makeEncoder()
    let alphabet = Array("ab-_ /\"\\\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é€😀")
    for _ in 0..<2000 {
      let start = Date(
        timeIntervalSince1970: Double.random(in: -1e9...4e9, using: &generator).rounded() / 1000)
      let subject = String(
        (0..<Int.random(in: 1...12, using: &generator)).map { _ in
          alphabet.randomElement(using: &generator)!
        })
      let reminders = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
        Duration.milliseconds(Int64.random(in: 1...10_000_000_000, using: &generator))
      }
      // Keys that sort differently by bytes and by number or case-folded text.
      let keys = ["a", "a1", "a_", "a_b", "ab", "k10", "k9", "k_9", "z"]
      let labels = Dictionary(
        uniqueKeysWithValues: keys.shuffled(using: &generator).prefix(
          Int.random(in: 0...5, using: &generator)
        )
        .map { key in
          (
            key,
            String(
              (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
              })
          )
        })
      var trial = TrialObject(
        id: TrialID(generator.next()), subject: subject, labels: labels,
        state: TrialState.allCases.randomElement(using: &generator)!,
        startedAt: start, endsAt: start.addingTimeInterval(Double.random(in: 0...1e8, using: &generator)),
        endedAt: Bool.random(using: &generator) ? start.addingTimeInterval(12.5) : nil, reminders: reminders,
        revision: UInt32.random(in: 1...1000, using: &generator),
        daysLeft: Double.random(in: -3000...3000, using: &generator))
      if Bool.random(using: &generator) {
        trial.pausedAt = start.addingTimeInterval(7.25)
        trial.timeLeft = Span(.milliseconds(Int64.random(in: 1...10_000_000_000, using: &generator)))
        if Bool.random(using: &generator) { trial.resumesAt = start.addingTimeInterval(86_400) }
      }
      if Bool.random(using: &generator) {
        trial.cancelsAt = trial.endsAt
        trial.cancelAskedAt = start.addingTimeInterval(3.5)
        if Bool.random(using: &generator) { trial.named["outcome"] = "cancelled" }
      }
      let reply = TrialReply(trial: trial)
      let expected = encoder.message(OutgoingReply(parameters: reply))
      let written = FastPath.message(reply)
      #expect(written == expected, "\(String(decoding: written, as: UTF8.self))")
      if written != expected { return }
    }
  }
}
