import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialEngine
import TrialTesting

@testable import TrialCtl

/// `trialwatchctl stats --variants`: the table, the p-value line and its reading (from a reply
/// made here), then the real binary over a real socket: the table, --json, --svg, and the
/// refusals of --variants without --plan and of a plan without variants.
@Suite struct VariantStatsCommandLineTests {
  static func reply(_ first: CohortCounts, _ second: CohortCounts) -> GetStatsReply {
    let figures = [
      VariantFigures(name: "two-weeks", weight: 1, counts: first),
      VariantFigures(name: "month", weight: 1, counts: second),
    ]
    var total = first
    total.add(second)
    return GetStatsReply(
      by: .week, plan: "pro", periods: [], total: CohortObject(first: 20_416, last: 20_422, total),
      variants: figures.map(VariantCohortObject.init),
      comparison: TrialStats.comparison(of: figures).map(VariantComparisonObject.init))
  }

  @Test func table_HasEachVariantItsIntervalAndTheTest() {
    let spy = SpyOutput()
    let presenter = TrialPresenter(
      output: spy, clock: StaticWallClock(PresenterTests.now), timeZone: PresenterTests.utc, locale: .posix)
    presenter.present(
      variants: Self.reply(
        CohortCounts(started: 1033, converted: 57, expired: 976),
        CohortCounts(started: 1000, converted: 100, cancelled: 867)))
    #expect(
      spy.lists.first?.table.columns == [
        "VARIANT", "WEIGHT", "STARTED", "ENDED", "CONVERTED", "RATE", "95% INTERVAL",
      ])
    #expect(
      spy.lists.first?.table.rows == [
        ["two-weeks", "1", "1033", "1033", "57", "5.5%", "4.3%-7.1%"],
        ["month", "1", "1000", "967", "100", "10.3%", "8.6%-12.4%"],
      ])
    #expect(spy.messages.first == "Variants of plan pro, trials started 2025-11-24 to 2025-11-30 (UTC):")
    #expect(spy.messages.last?.hasPrefix("month vs two-weeks: +4.8 points, z = 4.01, p < 0.0001 (") == true)
    #expect(spy.messages.last?.hasSuffix("the variants convert differently.") == true)

    // Alike rates: the reading says the figures do not tell them apart.
    let same = Self.reply(
      CohortCounts(started: 100, converted: 10, expired: 90),
      CohortCounts(started: 90, converted: 10, expired: 80))
    let line = TrialPresenter.comparisonLine(same)
    #expect(line?.hasPrefix("month vs two-weeks: +1.1 points, z = 0.25, p = 0.8032") == true, "\(line ?? "")")
    #expect(line?.hasSuffix("these figures do not tell the variants apart.") == true)
  }

  @Test func stats_WithVariants_OverARealSocket() throws {
    let fixture = try ctlFixture()
    let pro = TrialPlan(
      name: "pro", length: .days(14), reminders: .none,
      variants: [TrialVariant(name: "two-weeks"), TrialVariant(name: "month", length: .days(30))])
    let basic = TrialPlan(name: "basic", length: .days(7), reminders: .none)
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["pro": pro, "basic": basic])) }
    let socket = ["--socket", fixture.socketPath]
    let client = try fixture.client()
    for index in 0..<60 {
      let variant = index < 30 ? "two-weeks" : "month"
      var start = StartTrialParameters(subject: "s-\(index)", plan: "pro")
      start.variant = variant
      let trial = try client.startTrial(start)
      let converts = index % 10 < (variant == "month" ? 5 : 2)
      _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: converts ? .converted : .cancelled))
    }
    let run = try Ctl.run(["stats", "--plan", "pro", "--variants"] + socket)
    #expect(run.status == 0, "\(run.errors)")
    #expect(
      run.lines.contains { $0.hasPrefix("two-weeks") && $0.hasSuffix("20.0%  9.5%-37.3%") }, "\(run.output)")
    #expect(
      run.lines.contains { $0.hasPrefix("month") && $0.hasSuffix("50.0%  33.2%-66.8%") }, "\(run.output)")
    #expect(
      run.lines.last?.hasPrefix("month vs two-weeks: +30.0 points, z = 2.44, p = 0.01") == true,
      "\(run.output)")

    let json = try Ctl.run(["stats", "--plan", "pro", "--variants", "--json"] + socket)
    #expect(json.output.contains(#""variants":[{"#) && json.output.contains(#""pValue":"#), "\(json.output)")

    let directory = try TemporaryDirectory("variants")
    let path = directory.url.appendingPathComponent("variants.svg").path
    let drawn = try Ctl.run(["stats", "--plan", "pro", "--variants", "--svg", path] + socket)
    #expect(drawn.status == 0, "\(drawn.errors)")
    let svg = try String(contentsOfFile: path, encoding: .utf8)
    #expect(svg.contains("<title>month: 95% interval 33.2% to 66.8%</title>"), "\(svg)")
    #expect(svg.contains("z = 2.44"))

    let noPlan = try Ctl.run(["stats", "--variants"] + socket)
    #expect(noPlan.status != 0 && noPlan.errors.contains("--variants needs --plan"), "\(noPlan.errors)")
    let none = try Ctl.run(["stats", "--plan", "basic", "--variants"] + socket)
    #expect(none.status != 0 && none.errors.contains("plan \"basic\" has no variants"), "\(none.errors)")
  }
}
