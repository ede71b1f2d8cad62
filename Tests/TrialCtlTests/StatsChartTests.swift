import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialTesting

@testable import TrialCtl

/// trialwatchctl stats: the table, and the chart of --svg, rendered by a real SVG renderer
/// (librsvg's rsvg-convert) and read back pixel by pixel.
@Suite struct StatsChartTests {
  static let monday: Int32 = 20_416  // 2025-11-24
  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent().path

  static func reply() -> GetStatsReply {
    let counts = [
      CohortCounts(
        started: 40, converted: 12, cancelled: 5, expired: 8, paused: 3, conversionHours: [30: 12]),
      CohortCounts(),
      CohortCounts(started: 25, converted: 4, cancelled: 2, paused: 1, conversionHours: [5: 1, 70: 3]),
      CohortCounts(started: 10),
    ]
    var total = CohortCounts()
    for count in counts { total.add(count) }
    let periods = counts.enumerated().map { index, counts in
      CohortObject(first: monday + Int32(index * 7), last: monday + Int32(index * 7 + 6), counts)
    }
    return GetStatsReply(
      by: .week, plan: "pro", periods: periods,
      total: CohortObject(first: monday, last: monday + 27, total))
  }

  @Test func table_OfTheFigures_HasAPeriodARowAndTheTotal() {
    let spy = SpyOutput()
    TrialPresenter(
      output: spy, clock: StaticWallClock(PresenterTests.now), timeZone: PresenterTests.utc, locale: .posix
    )
    .present(stats: Self.reply())
    #expect(spy.messages == ["Cohorts by week of start (UTC), plan pro:"])
    let table = spy.lists.first?.table
    #expect(
      table?.columns == [
        "WEEK", "STARTED", "ACTIVE", "PAUSED", "CONVERTED", "CANCELLED", "EXPIRED", "RATE", "MEDIAN",
      ])
    #expect(
      table?.rows == [
        ["2025-11-24", "40", "12", "3", "12", "5", "8", "48.0%", "1d 6h"],
        ["2025-12-01", "0", "0", "0", "0", "0", "0", "-", "-"],
        ["2025-12-08", "25", "18", "1", "4", "2", "0", "66.7%", "2d 22h"],
        ["2025-12-15", "10", "10", "0", "0", "0", "0", "-", "-"],
        ["total", "75", "40", "4", "16", "7", "8", "51.6%", "1d 6h"],
      ])
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rsvg-convert")))
  func chart_RenderedByRsvg_ShowsEveryPartAndTheRate() throws {
    let directory = try TemporaryDirectory("chart")
    let svg = directory.appending("stats.svg")
    let png = directory.appending("stats.png")
    let chart = StatsChart(Self.reply()).svg
    try chart.write(toFile: svg, atomically: true, encoding: .utf8)
    #expect(
      chart.contains("trials started") && chart.contains("conversion rate") && chart.contains("2025-12-08"))
    let render = try ChildProcess(.path("/usr/bin/rsvg-convert"), ["--format", "png", "--output", png, svg])
    #expect(render.wait()?.code == 0, "\(render.readRest())")
    let read = try ChildProcess(
      .path("/usr/bin/python3"),
      [Self.repository + "/Tests/svg/png_pixels.py", png] + StatsChart.series.map(\.color) + [
        StatsChart.rateColor
      ])
    let lines = read.readRest(.output, timeout: 60).split(separator: "\n")
    #expect(read.wait()?.code == 0)
    // Not blank: a good part of the picture is drawn, and every colour of the legend is in it.
    let drawn = try #require(Double(lines.first ?? ""))
    #expect(drawn > 0.05, "\(lines)")
    for line in lines.dropFirst() {
      let count = Int(line.split(separator: " ").last ?? "") ?? 0
      #expect(count > 100, "\(line)")
    }
    #expect(lines.count == 7)
  }
}
