import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

struct Stats: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show conversion figures: the trials of each cohort of start date, and what became of them.",
    discussion: """
      A cohort is the trials started in one day, ISO week (from Monday) or month, UTC. For each: \
      STARTED, ACTIVE and PAUSED now, CONVERTED, CANCELLED, EXPIRED, RATE (converted of ended) and \
      MEDIAN (the median time from start to conversion, in whole hours). The figures are kept as the \
      trials change: trials removed by retention still count. --svg FILE draws them as stacked bars \
      with the conversion rate as a line. Example: trialwatchctl stats --by week --plan pro

      --variants (with --plan) shows each variant of the plan instead: its trials started in those \
      periods (the trials kept now), ENDED, CONVERTED, RATE (converted of ended) and its 95% Wilson \
      score interval; for two variants, the p-value of the pooled two-proportion z-test (two-sided), \
      read in words. --svg FILE then draws the rates side by side, the intervals as whiskers. \
      Example: trialwatchctl stats --plan pro --variants --from 2026-09-01
      """)

  @OptionGroup var global: GlobalOptions
  @Option(help: ArgumentHelp("The first cohort: a day (2026-09-01) or an RFC 3339 time.", valueName: "day"))
  var from: String?
  @Option(help: ArgumentHelp("The last cohort: a day or a time (default: today, UTC).", valueName: "day"))
  var to: String?
  @Option(
    help: ArgumentHelp("day, week (the default) or month.", valueName: "period"),
    completion: .list(StatsPeriod.allCases.map(\.rawValue)))
  var by: String = StatsPeriod.week.rawValue
  @Option(
    help: ArgumentHelp("Only the trials of this plan.", valueName: "name"), completion: PlanOption.completion)
  var plan: String?
  @Option(help: ArgumentHelp("Also write the chart as SVG to FILE.", valueName: "file"), completion: .file())
  var svg: String?
  @Flag(help: "Each variant of --plan: its rate with a 95% interval, and for two, the z-test's p-value.")
  var variants = false

  func validate() throws {
    // Today is not known yet: the day of --from stands in for it.
    _ = try parameters(today: from.flatMap(CalendarDay.init) ?? CalendarDay(0))
  }

  func parameters(today: CalendarDay) throws -> GetStatsParameters {
    guard let period = StatsPeriod(rawValue: by) else {
      throw ValidationError("--by: \"\(by)\" is not one of: day, week, month")
    }
    func day(_ text: String, _ option: String) throws -> CalendarDay {
      guard let day = CalendarDay(text) else {
        throw ValidationError("\(option): \"\(text)\" is neither a day (2026-11-27) nor an RFC 3339 time")
      }
      return day
    }
    if variants && plan == nil {
      throw ValidationError("--variants needs --plan: the figures by variant are of one plan's variants")
    }
    let last = try to.map { try day($0, "--to") } ?? today
    // By default the last 30 days, 12 weeks or 12 months.
    var first = period.start(of: last.day)
    if from == nil {
      for _ in 1..<(period == .day ? 30 : 12) { first = period.start(of: first - 1) }
    }
    let parameters = GetStatsParameters(
      from: try from.map { try day($0, "--from") } ?? CalendarDay(first), to: last, by: period, plan: plan,
      byVariant: variants ? true : nil)
    do {
      try parameters.validate()
    } catch {
      throw ValidationError("--\(error.pathText): \(error.problem)")
    }
    return parameters
  }

  func run(_ session: Session) throws {
    let reply = try session.call(
      Trials.getStats, try parameters(today: CalendarDay(session.environment.clock.now())))
    if let svg {
      let chart = variants ? VariantChart(reply).svg : StatsChart(reply).svg
      do {
        try Data(chart.utf8).write(to: URL(fileURLWithPath: svg))
      } catch {
        throw CtlFailure("cannot write the chart to \(svg): \(error)", exitCode: .failure)
      }
    }
    guard !session.json else { return }
    if variants {
      session.presenter.present(variants: reply)
    } else {
      session.presenter.present(stats: reply)
    }
  }
}

extension TrialPresenter {
  public func present(stats: GetStatsReply) {
    func row(_ label: String, _ cohort: CohortObject) -> [String] {
      [
        label, "\(cohort.started)", "\(cohort.active)", "\(cohort.paused)", "\(cohort.converted)",
        "\(cohort.cancelled)", "\(cohort.expired)",
        cohort.conversionRate.map { decimal($0 * 100, digits: 1) + "%" } ?? "-",
        // Whole hours: 0 is within the first hour.
        cohort.medianTimeToConversion.map { $0.duration < .seconds(3_600) ? "<1h" : brief($0.duration) }
          ?? "-",
      ]
    }
    let rows = stats.periods.map { row($0.start.description, $0) } + [row("total", stats.total)]
    let of = stats.plan.map { ", plan \($0)" } ?? ""
    output.showMessage("Cohorts by \(stats.by.rawValue) of start (UTC)\(of):")
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: [
            stats.by.rawValue.uppercased(), "STARTED", "ACTIVE", "PAUSED", "CONVERTED", "CANCELLED",
            "EXPIRED",
            "RATE", "MEDIAN",
          ], rows: rows),
        emptyMessage: ""))
  }
}
