import Foundation
import Testing

/// One naming style for every test function, checked over the test sources:
/// `unitOfWork_StateUnderTest_ExpectedBehavior`, the first part lowerCamel and the others
/// UpperCamel, joined by underscores, as in `creation_WithClock_AddsDaysToCurrentTime`; two
/// parts where there is no condition (`binary_IsBuilt`). No `test` prefix: Swift Testing
/// finds tests by their attribute.
@Suite struct NamingTests {
  static func style() -> Regex<AnyRegexOutput> {
    try! Regex(#"(?!test[A-Z])[a-z][a-zA-Z0-9]*(_[A-Z0-9][a-zA-Z0-9]*){1,2}"#)
  }

  /// The folder of the test targets, found from this source file.
  static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

  struct TestFunction: CustomStringConvertible {
    var file: String
    var line: Int
    var name: String

    var description: String { "\(file):\(line): \(name)" }
  }

  /// Every function marked as a test (the attribute first on its line, its arguments on as
  /// many lines as they take) in the Swift files under `Tests/`.
  static func testFunctions() throws -> [TestFunction] {
    let attribute = try Regex(#"(?m)^[ \t]*@Test\b"#)
    let function = try Regex(#"\bfunc[ \t]+([A-Za-z_][A-Za-z0-9_]*)"#)
    var found: [TestFunction] = []
    let files = FileManager.default.enumerator(atPath: tests.path)?.compactMap { $0 as? String } ?? []
    for file in files.sorted() where file.hasSuffix(".swift") {
      let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
      for mark in text.matches(of: attribute) {
        guard let declaration = text[mark.range.upperBound...].firstMatch(of: function),
          let name = declaration.output[1].substring
        else { continue }
        let line = text[..<declaration.range.lowerBound].count(where: { $0 == "\n" }) + 1
        found.append(TestFunction(file: file, line: line, name: String(name)))
      }
    }
    return found
  }

  @Test func everyTestFunction_InTheTestTargets_FollowsTheNamingStyle() throws {
    let functions = try Self.testFunctions()
    // The scan sees every test target that has Swift sources.
    let targets = Set(
      (FileManager.default.enumerator(atPath: Self.tests.path)?.compactMap { $0 as? String } ?? [])
        .filter { $0.hasSuffix(".swift") }.compactMap { $0.split(separator: "/").first.map(String.init) })
    #expect(Set(functions.compactMap { $0.file.split(separator: "/").first.map(String.init) }) == targets)
    #expect(targets.contains("TestSupportTests"))
    let offending = functions.filter { $0.name.wholeMatch(of: Self.style()) == nil }
    let list = offending.map(\.description).joined(separator: "\n")
    #expect(offending.isEmpty, "not in the form unitOfWork_StateUnderTest_ExpectedBehavior:\n\(list)")
  }

  @Test(arguments: [
    "creation_WithClock_AddsDaysToCurrentTime", "idleConnection_IsClosed_AfterTheTimeout", "binary_IsBuilt",
    "usage_WithInvalidArguments_ExitsWith2", "idsOfOneRevision_SortInDueOrder", "boundSocket_Of0660_Is2",
  ])
  func style_OfAWellFormedName_Matches(name: String) {
    #expect(name.wholeMatch(of: Self.style()) != nil)
  }

  @Test(arguments: [
    "testCreation_WithClock_AddsDaysToCurrentTime", "startShowsTheNewTrial", "Creation_WithClock_Adds",
    "creation_withClock_Adds", "a_B_C_D", "creation__Adds", "creation_WithClock_", "_Creation_Adds",
    "creation_With-Clock",
  ])
  func style_OfAnIllFormedName_DoesNotMatch(name: String) {
    #expect(name.wholeMatch(of: Self.style()) == nil)
  }
}
