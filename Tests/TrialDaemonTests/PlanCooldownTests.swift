import Foundation
import Testing
import TrialCore

@testable import TrialConfiguration

/// `OnceFor=` in plan files: a span for plans granted once, a warning without Once=, and one
/// value for every plan with Once=all.
@Suite struct PlanCooldownTests {
  @Test func onceFor_WithOncePlan_IsTheCooldown() throws {
    let fixture = ConfigurationFixture()
    fixture.write("plans/ddg.conf", "[Plan]\nOnce=plan\nOnceFor=270d\n")
    fixture.write("plans/pro.conf", "[Plan]\nOnce=plan\nOnceFor=270d\nOnceFor=\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(loaded.configuration.plans["ddg"]?.onceFor == .days(270))
    // An empty assignment resets it: for ever.
    #expect(loaded.configuration.plans["pro"]?.onceFor == nil)
  }

  @Test func invalidOrLoneOnceFor_IsNamedWithFileAndLine() {
    let fixture = ConfigurationFixture()
    let zero = fixture.write("plans/zero.conf", "[Plan]\nOnce=plan\nOnceFor=0\n")
    let word = fixture.write("plans/word.conf", "[Plan]\nOnce=all\nOnceFor=soon\n")
    let alone = fixture.write("plans/alone.conf", "[Plan]\nOnceFor=30d\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description).sorted()
        == [
          "\(alone):2: warning: OnceFor=30d has no effect without Once=plan or Once=all: the plan grants its "
            + "trial as often as a subject has none active",
          "\(word):3: error: invalid value \"soon\" for OnceFor= in [Plan]: not a time span (like 5d, 36h, 90s "
            + "or 1d 12h): expected a number at \"soon\"",
          "\(zero):3: error: invalid value \"0\" for OnceFor= in [Plan]: must be longer than 0",
        ].sorted())
    #expect(Set(loaded.configuration.plans.keys) == ["alone"])
  }

  @Test func plansWithOnceAll_DisagreeingOnOnceFor_IsAnErrorNamingBoth() {
    let fixture = ConfigurationFixture()
    fixture.write("plans/edu.conf", "[Plan]\nOnce=all\nOnceFor=180d\n")
    let team = fixture.write("plans/team.conf", "[Plan]\nOnce=all\n")
    fixture.write("plans/solo.conf", "[Plan]\nOnce=plan\nOnceFor=30d\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description)
        == [
          "\(team): error: OnceFor=(none: for ever) differs from OnceFor=180d of plan edu: plans with Once=all "
            + "share one record of each subject, so they must agree on when it may start again"
        ])
    #expect(loaded.checkReport.exitCode == 1)
  }
}
