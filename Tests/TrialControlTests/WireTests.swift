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

@Suite struct RFC3339Tests {
  @Test func formatsInUTCWithMillisecondsWhenThereAreAny() {
    #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: 1_750_000_000)) == "2025-06-15T15:06:40Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: 1_750_000_000.25)) == "2025-06-15T15:06:40.250Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
    #expect(RFC3339.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
  }

  @Test func parsesOffsetsAndFractions() throws {
    #expect(try RFC3339.parse("2025-06-15T15:06:40Z") == Date(timeIntervalSince1970: 1_750_000_000))
    #expect(try RFC3339.parse("2025-06-15T17:06:40+02:00") == Date(timeIntervalSince1970: 1_750_000_000))
    #expect(try RFC3339.parse("2025-06-15t10:06:40.5-05:00") == Date(timeIntervalSince1970: 1_750_000_000.5))
    #expect(try RFC3339.parse("2025-06-15 15:06:40z") == Date(timeIntervalSince1970: 1_750_000_000))
  }

  @Test func roundTripsEveryDayOfFourHundredYears() throws {
    var seconds = -2_208_988_800.0  // 1900-01-01
    while seconds < 10_413_792_000 {  // 2300-01-01
      let date = Date(timeIntervalSince1970: seconds + 3723.125)
      #expect(try RFC3339.parse(RFC3339.format(date)) == date)
      seconds += 86_400 * 7.5
    }
  }

  @Test(arguments: [
    ("2025-06-15", "'T'"), ("2025-06-15T15:06:40", "offset"), ("2025-02-29T00:00:00Z", "day 29 out of range"),
    ("2024-13-01T00:00:00Z", "month 13"), ("2025-06-15T24:00:00Z", "hour 24"),
    ("2025-06-15T15:06:60Z", "second 60"),
    ("2025-06-15T15:06:40+2:00", "offset hours"), ("2025-06-15T15:06:40Zjunk", "after the offset"),
    ("tomorrow", "year"), ("2025-06-15T15:06:40.Z", "digits after '.'"),
  ])
  func rejectsWhatIsNotRFC3339(text: String, problem: String) {
    do {
      _ = try RFC3339.parse(text)
      Issue.record("\(text) was accepted")
    } catch {
      #expect(error.description.contains(problem), "\(error)")
      #expect(error.description.contains("\"\(text)\" is not an RFC 3339 time"))
    }
  }
}
