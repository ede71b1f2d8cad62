import Foundation
import Testing
import TrialControl
import TrialCore

@Suite struct FrameDecoderTests {
  @Test func frameDecoder_FedInAnyChunks_SplitsTheMessages() throws {
    let stream = Array("{\"a\":1}\0{\"b\":2}\0{\"c\"".utf8)
    for chunkSize in [1, 2, 3, 7, 100] {
      var decoder = VarlinkFrameDecoder()
      var messages: [String] = []
      var index = 0
      while index < stream.count {
        let end = min(index + chunkSize, stream.count)
        decoder.append(stream[index..<end])
        index = end
        while let message = try decoder.nextMessage() {
          messages.append(String(decoding: message, as: UTF8.self))
        }
      }
      #expect(messages == [#"{"a":1}"#, #"{"b":2}"#], "chunk size \(chunkSize)")
      #expect(decoder.hasPartialMessage)
      #expect(decoder.bufferedByteCount == 4)
    }
  }

  @Test func frameDecoder_OverTheLimit_RefusesWithOrWithoutTheNUL() throws {
    var decoder = VarlinkFrameDecoder(maximumMessageSize: 8)
    decoder.append(Array("12345678".utf8) + [0])
    #expect(try decoder.nextMessage().map { Array($0) } == Array("12345678".utf8))
    decoder.append(Array("123456789".utf8) + [0])
    let error = #expect(throws: VarlinkFrameDecoder.MessageTooLarge.self) { try decoder.nextMessage() }
    #expect(error?.limit == 8)

    var open = VarlinkFrameDecoder(maximumMessageSize: 8)
    open.append(Array("12345678".utf8))
    #expect(try open.nextMessage() == nil)
    open.append([0x39])
    #expect(throws: VarlinkFrameDecoder.MessageTooLarge.self) { try open.nextMessage() }
  }

  @Test func frameDecoder_ByDefault_LimitsToOneMebibyte() {
    #expect(VarlinkFrameDecoder().maximumMessageSize == 1_048_576)
  }

  @Test func frameDecoder_ManySmallMessages_DoNotAccumulate() throws {
    var decoder = VarlinkFrameDecoder()
    for index in 0..<10_000 {
      decoder.append(Array("{\"i\":\(index)}".utf8) + [0])
      #expect(try decoder.nextMessage() != nil)
    }
    #expect(decoder.bufferedByteCount == 0)
  }
}

/// Calls as the server reads them: one pass decodes the envelope and the method's parameters.
@Suite struct IncomingCallTests {
  static let decoder: JSONDecoder = {
    let decoder = WireCoding.makeDecoder()
    decoder.userInfo[.varlinkParameterTypes] = ParameterTypes(
      [
        Trials.startTrial.qualifiedName: StartTrialParameters.self,
        Trials.extendTrial.qualifiedName: ExtendTrialParameters.self,
        Trials.endTrial.qualifiedName: EndTrialParameters.self,
        Trials.listTrials.qualifiedName: ListTrialsParameters.self,
        VarlinkService.getInfo.qualifiedName: NoParameters.self,
      ])
    return decoder
  }()

  static func decode(_ text: String) throws(WireProblem) -> IncomingCall {
    try IncomingCall.decode(Array(text.utf8), with: decoder)
  }

  /// What is wrong with the parameters of the call `text`; nil, and an issue, where its
  /// method's type took them.
  static func parameterProblem(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws
    -> WireProblem?
  {
    guard case .failure(let error)? = try decode(text).parameters else {
      Issue.record("\(text) was accepted", sourceLocation: sourceLocation)
      return nil
    }
    return error
  }

  @Test func call_WithParameters_IsDecodedAsItsMethodsType() throws {
    let call = try Self.decode(
      #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","duration":"2d"},"oneway":true}"#
    )
    #expect(call.method == "io.trialwatch.Trials.StartTrial")
    #expect(call.interface == "io.trialwatch.Trials")
    #expect(call.oneway && !call.more && !call.upgrade)
    let parameters = try #require(try call.parameters?.get() as? StartTrialParameters)
    #expect(parameters == StartTrialParameters(subject: "a", duration: .days(2)))
  }

  @Test func call_WithNullOrNoParameters_HasNone() throws {
    let null = try Self.decode(#"{"method":"org.varlink.service.GetInfo","parameters":null,"oneway":null}"#)
    #expect(try null.parameters?.get() is NoParameters)
    #expect(!null.oneway)
    #expect(try Self.decode(#"{"method":"org.varlink.service.GetInfo"}"#).parameters?.get() is NoParameters)
  }

  @Test func call_OfAMethodNotServed_HasNoParameters() throws {
    let call = try Self.decode(#"{"method":"com.example.Other","parameters":{"anything":[1,2]}}"#)
    #expect(call.parameters == nil)
  }

  @Test(arguments: [
    (#"{"subject":5}"#, ["subject"], "expected a string, got a number"),
    (#"{}"#, ["subject"], "is required"),
    (#"{"subject":"a","reminders":["1d",7]}"#, ["reminders", "1"], "expected a string, got a number"),
    (#"{"subject":"a","reminders":"1d"}"#, ["reminders"], "expected an array, got a string"),
    (#"{"subject":"a","labels":"x"}"#, ["labels"], "expected an object, got a string"),
    (#"{"subject":"a","labels":{"k":null}}"#, ["labels", "k"], "expected a string, got null"),
    (#"{"subject":"a","endsAt":"2025-13-01T00:00:00Z"}"#, ["endsAt"], "month 13 out of range"),
    (#"{"subject":"a","duration":"5 parsecs"}"#, ["duration"], "unknown unit"),
    (
      #"{"subject":"a","endAt":"x"}"#, ["endAt"],
      "is not a parameter of this method (it takes duration, endsAt, labels, plan, reminders, subject, variant)"
    ),
  ])
  func parameterProblem_IsNamedWithItsPath(parameters: String, path: [String], problem: String) throws {
    let text = #"{"method":"io.trialwatch.Trials.StartTrial","parameters":\#(parameters)}"#
    guard let error = try Self.parameterProblem(text) else { return }
    #expect(error.path == path)
    #expect(error.problem.contains(problem), "\(error)")
  }

  /// Found by the control fuzz target (FuzzTesting/Regressions/control/
  /// unknown-parameter-named-at-random): of several unknown parameters, the one named depended
  /// on the decoder's order of keys, which changes from one decoding to the next.
  @Test func parameterProblem_OfSeveralUnknownParameters_NamesTheFirstInByteOrder() throws {
    let call =
      #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","zeta":1,"reBooders":[],"Labels":{},"omega":2}}"#
    for _ in 0..<20 {
      #expect(try Self.parameterProblem(call)?.path == ["Labels"])
    }
  }

  /// Found by the control fuzz target (FuzzTesting/Regressions/control/
  /// wrong-label-named-at-random): of several labels of the wrong type, the one named depended
  /// on the decoder's order of an object's names, which changes from one decoding to the next.
  @Test(arguments: [
    #"{"method":"io.trialwatch.Trials.StartTrial","parameters":{"subject":"a","labels":{"t":[],"e":{},"b":1,"d":true,"c":"x"}}}"#,
    #"{"method":"io.trialwatch.Trials.ExtendTrial","parameters":{"id":"2a","by":"1d","labels":{"t":[],"e":{},"b":1,"d":true,"c":null}}}"#,
    #"{"method":"io.trialwatch.Trials.EndTrial","parameters":{"id":"2a","outcome":"converted","labels":{"t":[],"e":{},"b":1,"d":true}}}"#,
  ])
  func parameterProblem_OfSeveralWrongLabels_NamesTheFirstInByteOrder(call: String) throws {
    for _ in 0..<20 {
      let error = try Self.parameterProblem(call)
      #expect(error?.path == ["labels", "b"], "\(String(describing: error))")
      #expect(error?.problem == "expected a string, got a number", "\(String(describing: error))")
    }
  }

  /// A message is UTF-8, as JSON is: other bytes are refused at once, naming the first, rather
  /// than found by the decoder once it reads the string that holds them (in no fixed order
  /// among the labels, and reported without a place).
  @Test func call_WithBytesThatAreNotUTF8_IsRefusedNamingTheFirst() throws {
    let prefix =
      #"{"method":"io.trialwatch.Trials.ExtendTrial","parameters":{"id":"2a","by":"1d","labels":{"tier":"ent"#
    for bad: [UInt8] in [
      [0x80], [0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF],
    ] {
      let message = Array(prefix.utf8) + bad + Array(#"","x":{}}}}"#.utf8)
      let error = #expect(throws: WireProblem.self) {
        try IncomingCall.decode(message, with: Self.decoder)
      }
      #expect(error?.problem == "malformed JSON: invalid UTF-8 at byte \(prefix.utf8.count)", "\(bad)")
    }
    let accented = Array(prefix.utf8) + Array("\u{E9}\u{1F600}\"}}}".utf8)
    let call = try IncomingCall.decode(accented, with: Self.decoder)
    let parameters = try #require(try call.parameters?.get() as? ExtendTrialParameters)
    #expect(parameters.labels == ["tier": "ent\u{E9}\u{1F600}"])
  }

  @Test func extendTrial_WithALabelOfNull_RemovesItAndKeepsTheOthers() throws {
    let call = try Self.decode(
      #"{"method":"io.trialwatch.Trials.ExtendTrial","parameters":{"id":"2a","by":"1d","labels":{"gone":null,"tier":"pro"}}}"#
    )
    let parameters = try #require(try call.parameters?.get() as? ExtendTrialParameters)
    #expect(parameters.labels == ["gone": String?.none, "tier": "pro"])
    #expect(parameters.labels?.keys.contains("gone") == true)
  }

  /// The other side of FuzzTesting/Regressions/control/extension-by-a-span-finer-than-a-millisecond:
  /// the parameters read are written as they were read.
  @Test func extendTrial_ByASpanFinerThanAMillisecond_IsWrittenAsRead() throws {
    let call = try Self.decode(
      #"{"method":"io.trialwatch.Trials.ExtendTrial","parameters":{"id":"2a","by":"7.000001d"}}"#)
    let parameters = try #require(try call.parameters?.get() as? ExtendTrialParameters)
    #expect(parameters.by?.duration == .microseconds(604_800_086_400))
    let written = try WireCoding.makeEncoder().encode(parameters)
    #expect(String(decoding: written, as: UTF8.self) == #"{"by":"1w 86ms 400us","id":"000000000000002a"}"#)
    #expect(try WireCoding.makeDecoder().decode(ExtendTrialParameters.self, from: written) == parameters)
  }

  @Test func limit_WithAFraction_IsAnIntegerProblemOfLimit() throws {
    let text = #"{"method":"io.trialwatch.Trials.ListTrials","parameters":{"limit":2.5}}"#
    guard let error = try Self.parameterProblem(text) else { return }
    #expect(error.description == "limit: expected an integer, got 2.5")
  }

  @Test func parameters_OfAMethodThatTakesNone_AreRefused() throws {
    let text = #"{"method":"org.varlink.service.GetInfo","parameters":{"verbose":true}}"#
    guard let error = try Self.parameterProblem(text) else { return }
    #expect(error.description == "verbose: is not a parameter: the method takes none")
  }

  @Test(arguments: [
    ("{}", "method: is required"), (#"{"method":"x"}"#, "interface.Method"),
    (#"{"method":".X"}"#, "interface.Method"),
    (#"{"method":"a.B","oneway":1}"#, "oneway: expected a boolean"),
    ("5", "must be a JSON object"), ("[1,2]", "a call must be a JSON object, got an array"),
    (#"{"method":"a.B""#, "malformed JSON"),
    ("{\"method\":\"a.\u{1}B\"}", "control character 0x1 at byte 13"),
    (#"{"method":"org.varlink.service.GetInfo","parameters":[]}"#, "parameters: expected an object"),
  ])
  func invalidCall_IsRefused_SayingWhy(text: String, problem: String) {
    let error = #expect(throws: WireProblem.self, "\(text) was accepted") { try Self.decode(text) }
    #expect(error?.problem.contains(problem) == true, "\(text): \(String(describing: error))")
  }

  @Test func reply_OfAnError_CarriesItsNameAndParameters() throws {
    let reply = try VarlinkReply(
      Array(#"{"error":"io.trialwatch.TrialNotFound","parameters":{"subject":"x"}}"#.utf8))
    #expect(reply.controlError == .trialNotFound(subject: "x"))
    #expect(!reply.continues)
    let bare = try VarlinkReply(Array(#"{"error":"a.B"}"#.utf8))
    #expect(bare.controlError == ControlError(name: "a.B"))
    let more = try VarlinkReply(Array(#"{"parameters":{},"continues":true}"#.utf8))
    #expect(more.continues && more.error == nil)
    #expect(try more.parameters(as: WatchReply.self).event == nil)
  }

  @Test func outgoingMessages_AreJSONTextAndANUL() {
    let encoder = WireCoding.makeEncoder()
    let call = encoder.message(
      OutgoingCall(method: Trials.watch.qualifiedName, parameters: NoParameters(), more: true))
    #expect(call.last == 0)
    #expect(
      String(decoding: call.dropLast(), as: UTF8.self)
        == #"{"method":"io.trialwatch.Trials.Watch","more":true,"parameters":{}}"#)
    let error = encoder.message(OutgoingReply(error: .trialNotFound(subject: "x")))
    #expect(
      String(decoding: error.dropLast(), as: UTF8.self)
        == #"{"error":"io.trialwatch.TrialNotFound","parameters":{"subject":"x"}}"#)
  }
}
