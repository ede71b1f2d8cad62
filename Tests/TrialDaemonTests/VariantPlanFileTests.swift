import Testing
import TrialCore

@testable import TrialConfiguration

/// `[Variant]` sections of a plan file: read in the file's order with their values over the
/// plan's; a missing or repeated name, a bad weight and a bad value errors naming the file
/// and line, an unknown key a warning.
@Suite struct VariantPlanFileTests {
  static let defaults = TrialDefaults(length: .days(5), reminders: .none)

  static func read(_ text: String) -> (plan: TrialPlan?, diagnostics: [String]) {
    var diagnostics: [ConfigurationDiagnostic] = []
    let plan = PlanFiles.read(
      text, file: "plans/pro.conf", name: "pro", defaults: defaults, complianceWarnings: false,
      diagnostics: &diagnostics)
    // By line, as the loader orders a file's diagnostics (SectionFiles.each).
    return (plan, diagnostics.sorted { ($0.line ?? 0) < ($1.line ?? 0) }.map(\.description))
  }

  @Test func twoVariants_AreReadInOrder_WithTheirValues() throws {
    let read = Self.read(
      """
      [Plan]
      Length=14d
      Labels=tier=pro

      [Variant]
      Name=short

      [Variant]
      Name=long
      Weight=3
      Length=30d
      Reminders=7d, 1d
      Grace=2d
      Labels=offer=long
      """)
    #expect(read.diagnostics == [])
    let plan = try #require(read.plan)
    #expect(plan.length == .days(14))
    #expect(
      plan.variants == [
        TrialVariant(name: "short"),
        TrialVariant(
          name: "long", weight: 3, length: .days(30), reminders: try ReminderSchedule([.days(7), .days(1)]),
          grace: .days(2), labels: try TrialLabels(["offer": "long"])),
      ])
  }

  @Test func badVariants_AreErrorsNamingTheLine() {
    let read = Self.read(
      """
      [Plan]
      Length=14d
      [Variant]
      Weight=2
      [Variant]
      Name=a
      Weight=0
      Colour=red
      [Variant]
      Name=a
      Length=soon
      """)
    #expect(read.plan == nil)
    #expect(
      read.diagnostics == [
        "plans/pro.conf:3: error: [Variant] without Name=: a variant needs one",
        "plans/pro.conf:7: error: invalid value \"0\" for Weight= in [Variant]: not a whole number from 1 to 1000000",
        "plans/pro.conf:8: warning: unknown key \"Colour\" in [Variant], ignored",
        "plans/pro.conf:10: error: variant \"a\" is named twice in the plan (first on line 6)",
        "plans/pro.conf:11: error: invalid value \"soon\" for Length= in [Variant]: "
          + "not a time span (like 5d, 36h, 90s or 1d 12h): expected a number at \"soon\"",
      ])
  }

  @Test func variantLongerThanMaxLength_IsAnError() {
    let read = Self.read("[Plan]\nLength=14d\nMaxLength=20d\n[Variant]\nName=long\nLength=30d\n")
    #expect(read.plan == nil)
    #expect(
      read.diagnostics.count == 1 && read.diagnostics[0].contains("variant \"long\" is longer than MaxLength")
    )
  }
}
