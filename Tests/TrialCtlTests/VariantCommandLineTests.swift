import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialEngine

/// Plan variants through `trialwatchctl`, the real binary over a real socket: start with and
/// without --variant, the variant in status, list and status --json, the variants in plans, and
/// an unknown variant refused naming it.
@Suite struct VariantCommandLineTests {
  @Test func start_WithAndWithoutVariant_ShowsItEverywhere() throws {
    let fixture = try ctlFixture()
    let pro = TrialPlan(
      name: "pro", length: .days(14), reminders: .none,
      variants: [TrialVariant(name: "two-weeks"), TrialVariant(name: "month", weight: 3, length: .days(30))])
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["pro": pro])) }
    let socket = ["--socket", fixture.socketPath]

    let named = try Ctl.run(["start", "acme-1", "--plan", "pro", "--variant", "month"] + socket)
    #expect(named.status == 0, "\(named.errors)")
    #expect(named.lines.contains { $0.hasPrefix("  Variant") && $0.hasSuffix(" month") }, "\(named.output)")
    let json = try Ctl.run(["status", "acme-1", "--json"] + socket)
    #expect(json.output.contains(#""variant":"month""#), "\(json.output)")

    // Without --variant, the one the subject's key gets (TrialPlan.variant(forKey:)).
    let assigned = try Ctl.run(["start", "acme-42", "--plan", "pro", "--json"] + socket)
    #expect(assigned.output.contains(#""variant":"\#(pro.variant(forKey: "acme-42")!.name)""#))

    let list = try Ctl.run(["list"] + socket)
    #expect(list.lines.first?.hasSuffix("VARIANT") == true, "\(list.output)")
    #expect(list.lines.contains { $0.contains("acme-1") && $0.hasSuffix("month") }, "\(list.output)")

    let unknown = try Ctl.run(["start", "acme-3", "--plan", "pro", "--variant", "year"] + socket)
    #expect(unknown.status != 0)
    #expect(unknown.errors.contains("\"year\" is no variant of plan \"pro\""), "\(unknown.errors)")

    let plans = try Ctl.run(["plans"] + socket)
    #expect(plans.lines.first?.contains("VARIANTS") == true)
    #expect(
      plans.lines.contains { $0.hasPrefix("pro ") && $0.contains("two-weeks:1,month:3") }, "\(plans.output)")
  }
}
