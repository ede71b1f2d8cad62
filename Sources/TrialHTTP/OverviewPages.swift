import TrialControl
import TrialCore

/// The overview (trials by state, what falls due soon, how late events fired, what is held back,
/// consumers and webhooks) and the plans.
extension Gateway {
  /// The spans the overview counts what falls due within.
  static let outlookSpans = ["24h", "7d"]

  /// `GET /`.
  func overview(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let status = try fetch(Trials.getStatus.qualifiedName, as: GetStatusReply.self)
    let outlook = try fetch(
      Trials.getOutlook.qualifiedName, ["within": .texts(Self.outlookSpans)], as: GetOutlookReply.self)
    let consumers = try fetch(Trials.listConsumers.qualifiedName, as: ListConsumersReply.self).consumers
    let webhooks = try fetch(Trials.listWebhooks.qualifiedName, as: ListWebhooksReply.self).endpoints
    let lateness = try latenessBuckets()

    var body = PageMarkup()
    body.raw("<section id=\"summary\"><p>")
    body.text(
      "trialwatchd \(status.version), up \(status.uptime); \(status.pendingEvents) events pending"
        + (status.nextEvent.map { ", the next due \(PageMarkup.time($0.due))" } ?? ""))
    body.raw("</p></section>\n")

    body.raw("<section><h2>Trials by state</h2>\n<table id=\"states\">\n")
    body.head(["State", "Trials"])
    let counts = status.trials
    let states: [(String, Int)] = [
      ("active", counts.active), ("paused", counts.paused ?? 0), ("grace", counts.grace ?? 0),
      ("expired", counts.expired),
      ("converted", counts.converted), ("cancelled", counts.cancelled),
    ]
    for (state, count) in states {
      body.raw("<tr data-state=\"\(state)\"><td><a href=\"")
      body.text(PageMarkup.link("/search", [("by", "state"), ("q", state)]))
      body.raw("\">\(state)</a></td><td class=\"count\">\(count)</td></tr>\n")
    }
    body.raw("</table></section>\n")

    body.raw("<section><h2>Falling due</h2>\n<table id=\"due\">\n")
    body.head(["Within", "Trials with an event due"])
    for window in outlook.windows {
      body.row(
        [("data-within", window.within)], [("within", window.within), ("count", String(window.trials))])
    }
    body.raw("</table></section>\n")

    body.raw("<section><h2>How late events fired</h2>\n")
    body.raw(
      Charts.histogram(id: "lateness", bars: lateness, caption: "events fired since the daemon started"))
    body.raw("</section>\n")

    if let held = status.held {
      body.raw("<section id=\"held\"><h2>Held back</h2><p>")
      body.text("\(held.events) events taken and held back from the journal: \(held.reason)")
      body.raw("</p></section>\n")
    }
    if !consumers.isEmpty {
      body.raw("<section id=\"consumers\"><h2>Consumers</h2>\n<table>\n")
      body.head(["Consumer", "Lag (events)", "Acknowledged", "Lost"])
      for consumer in consumers {
        let acknowledged: String = consumer.acknowledgedAt.map { PageMarkup.time($0) } ?? "never"
        let cells: [(String, String)] = [
          ("name", consumer.name), ("lag", String(consumer.lag)), ("acknowledged", acknowledged),
          ("lost", String(consumer.lost)),
        ]
        body.row([("data-consumer", consumer.name)], cells)
      }
      body.raw("</table></section>\n")
    }
    if !webhooks.isEmpty {
      body.raw("<section id=\"webhooks\"><h2>Webhooks</h2>\n<table>\n")
      body.head(["Endpoint", "State", "Backlog", "Last status", "Failures in a row", "Last attempt"])
      for endpoint in webhooks {
        let status: String = endpoint.lastStatus.map { String($0) } ?? endpoint.lastError ?? "—"
        let attempt: String = endpoint.lastAttemptAt.map { PageMarkup.time($0) } ?? "never"
        let cells: [(String, String)] = [
          ("name", endpoint.name), ("state", endpoint.state.rawValue), ("backlog", String(endpoint.backlog)),
          ("status", status), ("failures", String(endpoint.consecutiveFailures)), ("attempt", attempt),
        ]
        body.row([("data-endpoint", endpoint.name)], cells)
      }
      body.raw("</table></section>\n")
    }
    return PageMarkup.response(200, title: "Overview", body: body.html)
  }

  /// The fire lateness histogram of the metrics, one bar per bucket (not cumulative).
  private func latenessBuckets() throws(PageFailure) -> [(label: String, count: Int64)] {
    let metrics: [MetricReply]
    do {
      metrics = try collect(SystemdMetrics.list)
    } catch {
      throw PageFailure(status: 502, title: "Metrics unreadable", message: "the daemon's metrics: \(error)")
    }
    var cumulative: [(bound: Double, count: Int64)] = []
    for metric in metrics where metric.name == MetricFamily.latenessBucket.name {
      guard let le = metric.fields?["le"] else { continue }
      let count: Int64
      switch metric.value {
      case .integer(let value): count = value
      case .number(let value): count = Int64(value)
      case .text: continue
      }
      cumulative.append((le == "+Inf" ? .infinity : Double(le) ?? .infinity, count))
    }
    cumulative.sort { $0.bound < $1.bound }
    var bars: [(label: String, count: Int64)] = []
    var below: Int64 = 0
    var lower: Double?
    for (bound, count) in cumulative {
      let label =
        bound.isInfinite ? "over \(Self.seconds(lower ?? 0))" : "≤ \(Self.seconds(bound))"
      bars.append((label, count - below))
      below = count
      lower = bound
    }
    return bars
  }

  /// A bound of seconds in words: 0.01 → 10 ms, 3600 → 1 h.
  static func seconds(_ value: Double) -> String {
    switch value {
    case ..<1: "\(Int((value * 1000).rounded())) ms"
    case ..<60: "\(MarkupText.count(value)) s"
    case ..<3600: "\(MarkupText.count(value / 60)) min"
    case ..<86400: "\(MarkupText.count(value / 3600)) h"
    default: "\(MarkupText.count(value / 86400)) d"
    }
  }

  /// `GET /plans`.
  func plans(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let plans = try fetch(
      Trials.listPlans.qualifiedName, ["activeTrials": .flag(true)], as: ListPlansReply.self
    )
    .plans
    var body = PageMarkup()
    if plans.isEmpty {
      body.raw("<p>No plan is configured: see <code>trialwatch-plans(5)</code>.</p>\n")
    }
    body.raw("<table id=\"plans\">\n")
    body.head([
      "Plan", "Length", "Reminders", "Once", "Active", "Started", "Converted", "Conversion", "Median",
    ])
    for plan in plans {
      let total = try fetch(
        Trials.getStats.qualifiedName,
        ["from": .text(Self.allTimeFrom()), "by": .text("month"), "plan": .text(plan.name)],
        as: GetStatsReply.self
      ).total
      body.raw("<tr data-plan=\"\(MarkupText.escaped(plan.name))\"><td class=\"name\"><a href=\"")
      body.text(PageMarkup.link("/cohorts", [("plan", plan.name)]))
      body.raw("\">")
      body.text(plan.name)
      body.raw("</a>")
      if let description = plan.description { body.element("span", [("class", "description")], description) }
      body.raw("</td>")
      for (name, value) in [
        ("length", plan.length.description),
        ("reminders", plan.reminders.map(\.description).joined(separator: ", ")),
        (
          "once",
          (plan.once ?? "no") + (plan.onceFor.map { " for " + TrialPlan.cooldownText($0.duration) } ?? "")
        ), ("active", String(total.active)),
        ("started", String(total.started)), ("converted", String(total.converted)),
        ("rate", PageMarkup.percent(total.conversionRate)),
        ("median", total.medianTimeToConversion?.description ?? "—"),
      ] {
        body.element("td", [("class", name)], value)
      }
      body.raw("</tr>\n")
    }
    body.raw("</table>\n")
    return PageMarkup.response(200, title: "Plans", body: body.html)
  }

  /// The first day of all the months `GetStats` gives at once (at most 1000 periods): 80 years
  /// back from today.
  static func allTimeFrom() -> String {
    CalendarDay(CalendarDay(SystemWallClock().now()).day - 80 * 365).description
  }
}
