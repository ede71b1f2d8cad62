import Foundation
import Testing
import TrialControl

@Suite struct FrameDecoderTests {
  @Test func splitsMessagesFedInAnyChunks() throws {
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

  @Test func enforcesTheLimitWithOrWithoutTheNUL() throws {
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

  @Test func theDefaultLimitIsOneMebibyte() {
    #expect(VarlinkFrameDecoder().maximumMessageSize == 1_048_576)
  }

  @Test func manySmallMessagesDoNotAccumulate() throws {
    var decoder = VarlinkFrameDecoder()
    for index in 0..<10_000 {
      decoder.append(Array("{\"i\":\(index)}".utf8) + [0])
      #expect(try decoder.nextMessage() != nil)
    }
    #expect(decoder.bufferedByteCount == 0)
  }
}

@Suite struct MessageTests {
  @Test func callsRoundTrip() throws {
    let call = VarlinkCall(
      method: "io.trialwatch.Trials.Watch", parameters: ["x": 1], oneway: false, more: true)
    let bytes = call.encoded()
    #expect(bytes.last == 0)
    #expect(
      String(decoding: bytes.dropLast(), as: UTF8.self)
        == #"{"method":"io.trialwatch.Trials.Watch","parameters":{"x":1},"more":true}"#)
    #expect(try VarlinkCall.decode(bytes.dropLast()) == call)
    #expect(call.interface == "io.trialwatch.Trials")
    #expect(call.memberName == "Watch")
  }

  @Test func nullParametersCountAsNone() throws {
    let call = try VarlinkCall.decode(Array(#"{"method":"a.B","parameters":null,"oneway":null}"#.utf8))
    #expect(call.parameters.isEmpty)
    #expect(!call.oneway)
  }

  @Test func repliesRoundTrip() throws {
    let reply = VarlinkReply(parameters: ["k": "v"], continues: true)
    #expect(
      String(decoding: reply.encoded().dropLast(), as: UTF8.self)
        == #"{"parameters":{"k":"v"},"continues":true}"#)
    #expect(try VarlinkReply.decode(reply.encoded().dropLast()) == reply)
    let error = VarlinkReply(error: .trialNotFound(subject: "x"))
    #expect(
      String(decoding: error.encoded().dropLast(), as: UTF8.self)
        == #"{"error":"io.trialwatch.TrialNotFound","parameters":{"subject":"x"}}"#)
    #expect(try VarlinkReply.decode(Array(#"{"error":"a.B"}"#.utf8)) == VarlinkReply(error: "a.B"))
  }

  @Test func invalidCallsSayWhy() {
    for (text, problem) in [
      ("{}", "method: is required"), (#"{"method":"x"}"#, "interface.Method"),
      (#"{"method":".X"}"#, "interface.Method"),
      (#"{"method":"a.B","oneway":1}"#, "oneway: expected a boolean"), ("5", "must be a JSON object"),
    ] {
      do {
        _ = try VarlinkCall.decode(Array(text.utf8))
        Issue.record("\(text) was accepted")
      } catch {
        #expect(error.problem.contains(problem), "\(text): \(error)")
      }
    }
  }
}
