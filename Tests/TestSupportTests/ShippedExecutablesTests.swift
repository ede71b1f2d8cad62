import Foundation
import TestSupport
import Testing

/// Test code stays out of what is installed: no symbol of a test module in `trialwatchd` or
/// `trialwatchctl`. Swift symbols carry their module's name with its length before it.
@Suite struct ShippedExecutablesTests {
  static let testModules = [
    "TestSupport", "TrialTesting", "TrialStoreTesting", "TrialDaemonTesting", "TrialFuzzTargets",
  ]

  /// The test modules whose symbols are in the built product `name`.
  static func testModules(in name: String) throws -> [String] {
    let binary = try Data(contentsOf: URL(fileURLWithPath: BuiltProducts.path(name)))
    return testModules.filter { binary.range(of: Data("\($0.utf8.count)\($0)".utf8)) != nil }
  }

  @Test(arguments: ["trialwatchd", "trialwatchctl"])
  func shippedExecutable_AsBuilt_HoldsNoTestModule(name: String) throws {
    #expect(try Self.testModules(in: name) == [])
  }

  @Test func crashTestTool_AsBuilt_HoldsTheWorkload() throws {
    // The check above would see a test module: the crash-test tool has one.
    #expect(try Self.testModules(in: "trialwatch-crashtest") == ["TrialStoreTesting"])
  }
}
