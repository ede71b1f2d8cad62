import Foundation
import Testing

@testable import TrialCtl

/// Text handling that replaced Foundation's, against Foundation.
@Suite struct TextComparisonTests {
  /// Every scalar around a value, and runs of them: trimmed as
  /// `trimmingCharacters(in: .whitespaces)` trimmed them.
  @Test func reminders_AreTrimmedAsFoundationTrimmedThem() {
    let scalars = (0..<0x11_0000).compactMap(Unicode.Scalar.init)
    for scalar in scalars {
      for text in ["\(scalar)3d,1d\(scalar)", "\(scalar)\(scalar)", "3d \(scalar) 1d"] {
        let expected = text.trimmingCharacters(in: .whitespaces)
        if Arguments.trimmingWhitespace(text) != expected {
          Issue.record("U+\(String(scalar.value, radix: 16)): \(expected.debugDescription)")
          return
        }
      }
    }
    #expect(Arguments.trimmingWhitespace(" \t\u{00A0}\u{3000}none\u{202F} ") == "none")
    #expect(Arguments.trimmingWhitespace(" \t ") == "")
    #expect(Arguments.trimmingWhitespace("") == "")
  }
}
