import Foundation
import Testing
import TrialControl

@Suite struct JSONTests {
  @Test func parsesEveryKindOfValue() throws {
    let value = try JSONValue.parse(
      #" {"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00\"\\\/"}, "n": -0} "#)
    guard case .object(let object) = value else {
      Issue.record("not an object")
      return
    }
    #expect(object.keys == ["a", "b", "n"])
    #expect(object["a"] == [1, -2.5, 300.0, true, false, nil])
    #expect(object["b"] == .object(["c": .string("d\né😀\"\\/")]))
    #expect(object["n"] == .int(0))
  }

  @Test func integersBeyond64BitsBecomeDoubles() throws {
    #expect(try JSONValue.parse("9223372036854775807") == .int(Int64.max))
    #expect(try JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
  }

  @Test(arguments: [
    ("", "unexpected end of input"),
    ("{", "expected a string key"),
    (#"{"a" 1}"#, "expected ':'"),
    (#"{"a": 1,}"#, "expected a string key"),
    ("[1 2]", "expected ',' or ']'"),
    ("01", "leading zeros"),
    ("1.", "digit after '.'"),
    ("tru", "expected true"),
    (#""abc"#, "not terminated"),
    (#""\x""#, "invalid escape"),
    (#""\ud800""#, "unpaired surrogate"),
    ("\"a\u{1}\"", "control character"),
    ("{} x", "unexpected text after"),
    ("'a'", "unexpected character"),
  ])
  func rejectsMalformedText(text: String, problem: String) {
    #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(text) }
    do {
      _ = try JSONValue.parse(text)
    } catch {
      #expect(error.description.contains(problem), "\(text): \(error)")
      #expect(error.description.hasPrefix("malformed JSON at byte "))
    }
  }

  @Test func rejectsInvalidUTF8() {
    #expect(throws: JSONSyntaxError.self) { try JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) }
  }

  @Test func limitsNesting() throws {
    let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    let error = try #require(throws: JSONSyntaxError.self) { try JSONValue.parse(deep) }
    #expect(error.problem.contains("nested deeper than 64"))
    let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
    #expect(throws: Never.self) { try JSONValue.parse(fine) }
  }

  @Test func writesCompactTextThatParsesBack() throws {
    let value: JSONValue = .object([
      "s": "quote \" backslash \\ newline \n tab \t bell \u{7} é", "i": -42, "d": 0.25, "big": 1e300,
      "b": true, "n": nil, "a": [1, "x", .object([:])],
    ])
    let text = value.jsonText
    #expect(
      text.hasPrefix(
        #"{"s":"quote \" backslash \\ newline \n tab \t bell \u0007 é","#
          + #""i":-42,"d":0.25"#))
    #expect(try JSONValue.parse(text) == value)
  }

  @Test func codableMatchesTheWireForm() throws {
    // One key per object: Codable containers do not keep key order.
    let value: JSONValue = .object(["a": [1, 2.5, "x", nil, true, .object(["c": "d"])]])
    let data = try JSONEncoder().encode(value)
    #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
  }

  @Test func objectsKeepOrderAndTheFirstOfDuplicateKeys() throws {
    var object: JSONObject = ["z": 1, "a": 2]
    object["m"] = 3
    object["z"] = nil
    #expect(object.keys == ["a", "m"])
    guard case .object(let parsed) = try JSONValue.parse(#"{"k": 1, "k": 2}"#) else {
      Issue.record("not parsed as an object")
      return
    }
    #expect(parsed["k"] == 1)
    #expect(parsed.count == 1)
  }
}
