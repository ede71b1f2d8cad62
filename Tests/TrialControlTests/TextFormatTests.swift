import Foundation
import TestSupport
import Testing

@testable import TrialControl

/// The JSON syntax checker that names where a refused message stops being JSON, and the decimal
/// formatter, checked against Foundation's.
struct TextFormatTests {
  @Test(
    arguments: [
      ("", "unexpected end of input, expected a value"),
      ("x", "unexpected 'x' at byte 0, expected a value"),
      (#"{"a":1} x"#, "unexpected 'x' at byte 8, after the value"),
      (#"{"a" 1}"#, "unexpected '1' at byte 5, expected ':' after a member name"),
      (#"{"a":tru}"#, "unexpected '}' at byte 8, in 'true', which starts at byte 5"),
      ("{\"a\":\"x\n\"}", "unexpected byte 0xa at byte 7, control characters must be escaped in a string"),
      (#"{"a":01}"#, "unexpected '1' at byte 6, a number may not start with 0"),
      (#"{"a":"\q"}"#, "unexpected 'q' at byte 7, not an escape in a string"),
      (#"{"a":1,}"#, "unexpected '}' at byte 7, expected a member name in quotes"),
      (#"[1"#, "unexpected end of input, expected ',' or ']' in an array"),
      (#"{"a":"abc"#, "unexpected end of input in the string that starts at byte 5"),
      (#"{"a":-}"#, "unexpected '}' at byte 6, expected a digit"),
      (#"{"a":1.e5}"#, "unexpected 'e' at byte 7, expected a digit after the decimal point"),
    ])
  func problem_OfTextThatIsNotJSON_NamesWhatAndWhere(text: String, expected: String) {
    #expect(JSONSyntax.problem(in: Array(text.utf8)) == expected)
  }

  @Test(
    arguments: [
      #"{"method":"a.B","parameters":{"x":[1,-2.5e3,true,false,null,"\u00e9\n"]}}"#, " 1 ", "[]", "{}",
      #""x""#, "-0.0E+1",
    ])
  func problem_OfJSON_IsNone(text: String) {
    #expect(JSONSyntax.problem(in: Array(text.utf8)) == nil)
    #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil)
  }

  /// The check of encoding agrees with the standard library's UTF-8 validation on random
  /// bytes, most of them UTF-8 with a byte changed (overlong forms, surrogates, truncated and
  /// out-of-range sequences), and names the first bad byte.
  @Test func encodingProblem_AgreesWithTheStandardLibrary() {
    var generator = SeededGenerator(seed: 0x7574_6638_6368_6b31)
    let samples = ["é", "€", "😀", "\u{10FFFF}", "\u{D7FF}", "\u{E000}", "a", "\u{80}", "\u{7FF}", "\u{FFFF}"]
    for _ in 0..<20_000 {
      var bytes: [UInt8] = []
      for _ in 0..<Int.random(in: 1...6, using: &generator) {
        bytes += Array(samples.randomElement(using: &generator)!.utf8)
      }
      if Bool.random(using: &generator) {
        bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
          in: 0x20...0xFF, using: &generator)
      }
      if Int.random(in: 0..<4, using: &generator) == 0 { bytes.removeLast() }
      let problem = JSONSyntax.encodingProblem(in: bytes)
      let valid = String(validating: bytes, as: UTF8.self) != nil
      #expect((problem == nil) == valid, "\(bytes): \(String(describing: problem))")
      if let problem, let offset = Int(problem.split(separator: " ").last!) {
        #expect(String(validating: bytes[..<offset], as: UTF8.self) != nil, "\(bytes): \(problem)")
      }
    }
    #expect(JSONSyntax.encodingProblem(in: Array("a\u{1}".utf8)) == "control character 0x1 at byte 1")
    #expect(JSONSyntax.encodingProblem(in: Array("\t\r\n".utf8)) == nil)
    #expect(
      JSONSyntax.problem(in: Array(#"{"a":"x"#.utf8) + [0xFF] + Array(#"y"}"#.utf8))
        == "invalid UTF-8 at byte 7")
    #expect(JSONSyntax.problem(in: Array(#"{"a":"\#u{E9}"}"#.utf8)) == nil)
  }

  @Test func problem_OfDeepNesting_IsRefusedWithTheDepth() {
    let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
    #expect(JSONSyntax.problem(in: Array(deep.utf8)) == "nested deeper than 512 levels at byte 512")
  }

  @Test(arguments: [0, 0.05, 0.15, 0.25, 0.35, 1.45, 2.5, 999.95, 1_234_567.891, 1e20, -3.75, 0.049_999])
  func decimal_WithOneAndTwoDigits_IsPrintfs(value: Double) {
    #expect(decimal(value, digits: 1) == String(format: "%.1f", value))
    #expect(decimal(value, digits: 2) == String(format: "%.2f", value))
  }

  @Test func decimal_OfAHugeValue_IsWhole() {
    #expect(decimal(1e300, digits: 1) == String(format: "%.1f", 1e300))
  }
}
