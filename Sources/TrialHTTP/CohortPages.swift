import TrialControl
import TrialCore

/// The cohorts of `GetStats`: the trials started in each day, week or month, of one plan or of
/// all, and what became of them (converted, pending, abandoned, which together are the trials
/// started), with the conversion rate and the median time to conversion; as a chart and a table,
/// and as CSV.
extension Gateway {
  /// What the cohort pages were asked for.
  struct CohortQuery {
    var plan: String?
    var by: StatsPeriod
    var from: CalendarDay
    var to: CalendarDay

    /// The link of the same figures at `path`.
    func link(_ path: String) -> String {
      PageMarkup.link(
        path,
        [("plan", plan ?? ""), ("by", by.rawValue), ("from", from.description), ("to", to.description)])
    }
  }

  /// The query's arguments, checked; by default the last 12 weeks by week (30 days by day, 12
  /// months by month) up to today, UTC.
  static func cohortQuery(_ query: [String: String]) throws(PageFailure) -> CohortQuery {
    func bad(_ field: String, _ why: String) -> PageFailure {
      PageFailure(status: 400, title: "Bad query", message: "\(field): \(why)")
    }
    let byText = query["by"].flatMap { $0.isEmpty ? nil : $0 } ?? "week"
    guard let by = StatsPeriod(rawValue: byText) else {
      throw bad("by", "\(byText) is not day, week or month")
    }
    let today = CalendarDay(SystemWallClock().now())
    var to = today
    if let text = query["to"], !text.isEmpty {
      guard let day = CalendarDay(text) else { throw bad("to", "\(text) is not a day (2026-11-27)") }
      to = day
    }
    let back: Int32 =
      switch by {
      case .day: 29
      case .week: 7 * 11
      case .month: 334
      }
    var from = CalendarDay(to.day - back)
    if let text = query["from"], !text.isEmpty {
      guard let day = CalendarDay(text) else { throw bad("from", "\(text) is not a day (2026-11-27)") }
      from = day
    }
    guard from <= to else { throw bad("from", "\(from) is after to, \(to)") }
    let plan = query["plan"].flatMap { $0.isEmpty ? nil : $0 }
    return CohortQuery(plan: plan, by: by, from: from, to: to)
  }

  private func stats(_ query: CohortQuery, byVariant: Bool = false) throws(PageFailure) -> GetStatsReply {
    var parameters: [String: PageParameter] = [
      "from": .text(query.from.description), "to": .text(query.to.description),
      "by": .text(query.by.rawValue),
    ]
    if let plan = query.plan { parameters["plan"] = .text(plan) }
    if byVariant { parameters["byVariant"] = .flag(true) }
    return try fetch(Trials.getStats.qualifiedName, parameters, as: GetStatsReply.self)
  }

  /// `GET /cohorts`.
  func cohorts(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let query = try Self.cohortQuery(context.query)
    let listed = try fetch(
      Trials.listPlans.qualifiedName, ["activeTrials": .flag(false)], as: ListPlansReply.self
    )
    .plans
    let plans = listed.map(\.name)
    // A plan with variants: its figures by variant too (GetStats with byVariant).
    let byVariant = listed.contains { $0.name == query.plan && $0.variants != nil }
    let stats = try stats(query, byVariant: byVariant)
    var body = PageMarkup()
    body.raw("<form id=\"cohort-form\" method=\"get\" action=\"/cohorts\" class=\"filters\">\n")
    body.raw("<label>Plan <select name=\"plan\"><option value=\"\">all trials</option>")
    for plan in plans {
      body.raw("<option value=\"\(MarkupText.escaped(plan))\"\(plan == query.plan ? " selected" : "")>")
      body.text(plan)
      body.raw("</option>")
    }
    body.raw("</select></label>\n<label>By <select name=\"by\">")
    for period in StatsPeriod.allCases {
      body.raw("<option\(period == query.by ? " selected" : "")>\(period.rawValue)</option>")
    }
    body.raw("</select></label>\n")
    body.raw("<label>From <input type=\"date\" name=\"from\" value=\"\(query.from)\"></label>\n")
    body.raw("<label>To <input type=\"date\" name=\"to\" value=\"\(query.to)\"></label>\n")
    body.raw("<button type=\"submit\">Show</button>\n</form>\n")

    let total = stats.total
    body.raw("<p class=\"summary\">")
    body.text(
      "\(total.started) trials started from \(stats.periods.first?.start ?? query.from) to "
        + "\(stats.periods.last?.end ?? query.to)"
        + (query.plan.map { " with plan \($0)" } ?? "") + ": \(total.converted) converted ("
        + PageMarkup.percent(total.conversionRate) + " of those ended), median time to conversion "
        + (total.medianTimeToConversion?.description ?? "—") + ".")
    body.raw("</p>\n<figure>")
    body.raw(Charts.cohorts(stats))
    body.raw(
      "<figcaption>Trials started in each \(query.by.rawValue) (UTC) and what became of them.</figcaption>")
    body.raw("</figure>\n<div class=\"scroll\"><table id=\"cohort-table\">\n")
    body.head(["From", "To", "Started", "Converted", "Pending", "Abandoned", "Conversion", "Median time"])
    for period in stats.periods {
      body.row([("data-start", period.start.description)], Self.cells(period))
    }
    body.row([("class", "total")], Self.cells(total, label: "total"))
    body.raw("</table></div>\n")
    if let variants = stats.variants { Self.variantTable(variants, stats.comparison, into: &body) }
    body.raw("<p><a id=\"csv\" href=\"\(MarkupText.escaped(query.link("/cohorts.csv")))\">")
    body.raw("Download as CSV</a></p>\n")
    body.raw(
      "<p class=\"note\">Pending: active or paused. Abandoned: cancelled or expired. Conversion: converted of those "
        + "ended.</p>\n")
    return PageMarkup.response(200, title: "Cohorts", body: body.html)
  }

  /// The figures by variant: each variant's rate and its 95 % Wilson interval, and the z-test.
  private static func variantTable(
    _ variants: [VariantCohortObject], _ comparison: VariantComparisonObject?, into body: inout PageMarkup
  ) {
    body.raw("<div class=\"scroll\"><table id=\"variant-table\">\n")
    body.head(["Variant", "Started", "Ended", "Converted", "Conversion", "95% interval"])
    for variant in variants {
      let interval = variant.conversionLow.flatMap { low in
        variant.conversionHigh.map { PageMarkup.percent(low) + " – " + PageMarkup.percent($0) }
      }
      body.row(
        [("data-variant", variant.variant)],
        [
          ("variant", variant.variant), ("started", String(variant.started)),
          ("ended", String(variant.converted + variant.cancelled + variant.expired)),
          ("converted", String(variant.converted)), ("rate", PageMarkup.percent(variant.conversionRate)),
          ("interval", interval ?? "—"),
        ])
    }
    body.raw("</table></div>\n")
    if let comparison {
      body.raw("<p id=\"variant-test\">")
      body.text(
        "\(comparison.second) against \(comparison.first): "
          + (comparison.pValue < 0.0001 ? "p < 0.0001" : "p = \(decimal(comparison.pValue, digits: 4))")
          + " "
          + "(two-proportion z-test, two-sided); "
          + (comparison.pValue < 0.05
            ? "below 0.05: the variants convert differently."
            : "0.05 or more: the figures do not tell them apart."))
      body.raw("</p>\n")
    }
  }

  private static func cells(_ cohort: CohortObject, label: String? = nil) -> [(String, String)] {
    [
      ("start", label ?? cohort.start.description), ("end", label == nil ? cohort.end.description : ""),
      ("started", String(cohort.started)), ("converted", String(cohort.converted)),
      ("pending", String(cohort.active + cohort.paused)),
      ("abandoned", String(cohort.cancelled + cohort.expired)),
      ("rate", PageMarkup.percent(cohort.conversionRate)),
      ("median", cohort.medianTimeToConversion?.description ?? "—"),
    ]
  }

  /// `GET /cohorts.csv`: one line per period (RFC 4180), the rate from 0 to 1 and the median in
  /// whole hours, empty where there is none.
  func cohortsCSV(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let query = try Self.cohortQuery(context.query)
    let stats = try stats(query)
    var csv = "start,end,started,converted,pending,abandoned,conversion_rate,median_hours\r\n"
    for period in stats.periods {
      let rate = period.conversionRate.map { decimal($0, digits: 4) } ?? ""
      let median = period.medianTimeToConversion.map { String(Int64($0.timeInterval / 3600)) } ?? ""
      csv +=
        "\(period.start),\(period.end),\(period.started),\(period.converted),\(period.active + period.paused),"
        + "\(period.cancelled + period.expired),\(rate),\(median)\r\n"
    }
    let name =
      "trialwatch-cohorts-\(Self.fileSafe(query.plan ?? "all"))-by-\(query.by.rawValue)-\(query.from)-\(query.to).csv"
    var response = HTTPResponse.text(200, csv, type: "text/csv; charset=utf-8; header=present")
    response.headers += [
      ("Content-Disposition", "attachment; filename=\"\(name)\""), ("Cache-Control", "no-store"),
    ]
    return response
  }

  /// `name` with anything but letters, digits, `-` and `_` as `_`, for a file's name.
  static func fileSafe(_ name: String) -> String {
    String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
  }
}
