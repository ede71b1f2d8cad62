import Foundation
import Testing
import TrialCore

@testable import TrialConfiguration

/// `MaxExtensions=` and `MaxLength=` in plan files: read into the plan, and each bad value an
/// error naming the file, the line and the key.
@Suite struct ExtensionPlanFileTests {
  @Test func planFile_WithExtensionLimits_IsThePlan() throws {
    let fixture = ConfigurationFixture(main: "[Trials]\nComplianceWarnings=no\n")
    fixture.write("plans/unraid.conf", "[Plan]\nLength=15d\nMaxExtensions=2\nMaxLength=60d\n")
    fixture.write("plans/none.conf", "[Plan]\nLength=15d\nMaxExtensions=0\nMaxLength=15d\n")
    fixture.write("plans/reset.conf", "[Plan]\nMaxExtensions=3\nMaxExtensions=\nMaxLength=9d\nMaxLength=\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    let unraid = try #require(loaded.configuration.plans["unraid"])
    #expect(unraid.extensionLimits == ExtensionLimits(maxExtensions: 2, maxLength: .days(60)))
    let none = try #require(loaded.configuration.plans["none"])
    #expect(none.maxExtensions == 0 && none.maxLength == .days(15))
    #expect(loaded.configuration.plans["reset"]?.extensionLimits.isNone == true)
  }

  @Test func planFile_WithBadLimits_IsLeftOutNamingFileLineAndKey() {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=20d\nComplianceWarnings=no\n")
    let count = fixture.write("plans/count.conf", "[Plan]\nMaxExtensions=-1\n")
    let huge = fixture.write("plans/huge.conf", "[Plan]\nMaxExtensions=two\n")
    let span = fixture.write("plans/span.conf", "[Plan]\nMaxLength=0\n")
    let short = fixture.write("plans/short.conf", "[Plan]\nMaxLength=14d\nLength=21d\n")
    let inherited = fixture.write("plans/inherited.conf", "[Plan]\nMaxLength=10d\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description).sorted()
        == [
          "\(count):2: error: invalid value \"-1\" for MaxExtensions= in [Plan]: not a count from 0 to 1000000",
          "\(huge):2: error: invalid value \"two\" for MaxExtensions= in [Plan]: not a count from 0 to 1000000",
          "\(span):2: error: invalid value \"0\" for MaxLength= in [Plan]: must be longer than 0",
          "\(short):2: error: MaxLength=2w in [Plan] is shorter than the plan's length 3w: its trials would start "
            + "beyond it",
          "\(inherited):2: error: MaxLength=1w 3d in [Plan] is shorter than the plan's length 2w 6d (DefaultLength= "
            + "of [Trials]): its trials would start beyond it",
        ].sorted())
    #expect(loaded.configuration.plans.isEmpty)
    #expect(loaded.checkReport.exitCode == 1)
  }
}
