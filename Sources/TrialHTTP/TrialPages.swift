import TrialControl
import TrialCore

/// One trial (its labels, state, and events past and future from `GetPlan`, with the forms of
/// its changes), and the search for trials by subject, label, plan, state or id.
extension Gateway {
  /// `GET /trials/ID`.
  func trial(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let id = String(context.request.path.dropFirst("/trials/".count))
    guard !id.isEmpty, !id.contains("/") else {
      throw PageFailure(status: 404, title: "Not found", message: "no such page: \(context.request.path)")
    }
    let trial = try fetch(Trials.getTrial.qualifiedName, ["id": .text(id)], as: TrialReply.self).trial
    let events = try fetch(Trials.getPlan.qualifiedName, ["id": .text(id)], as: EventsReply.self).events
    var body = PageMarkup()
    body.raw("<dl id=\"trial\">\n")
    var facts: [(String, String, String)] = [
      ("id", "Id", trial.id.description), ("subject", "Subject", trial.subject),
      ("plan", "Plan", trial.named["plan"] ?? "—"), ("state", "State", trial.state.rawValue),
      ("started", "Started", PageMarkup.time(trial.startedAt)),
      ("ends", "Ends", PageMarkup.time(trial.endsAt)),
    ]
    if let ended = trial.endedAt { facts.append(("ended", "Ended", PageMarkup.time(ended))) }
    if let paused = trial.pausedAt { facts.append(("paused", "Paused", PageMarkup.time(paused))) }
    if let cancels = trial.cancelsAt, trial.state == .active || trial.state == .paused {
      facts.append(("cancels", "Cancels at", PageMarkup.time(cancels)))
    }
    if let graceEnd = trial.graceEndsAt { facts.append(("grace", "Grace until", PageMarkup.time(graceEnd))) }
    if let left = trial.timeLeft { facts.append(("left", "Time left", left.description)) }
    if trial.state == .active { facts.append(("days", "Days left", decimal(trial.daysLeft, digits: 1))) }
    facts.append(("revision", "Revision", String(trial.revision)))
    if trial.extensions > 0 { facts.append(("extensions", "Extensions", String(trial.extensions))) }
    for (name, term, value) in facts {
      body.raw("<dt>\(term)</dt>")
      body.element("dd", [("class", name)], value)
      body.raw("\n")
    }
    body.raw("<dt>Labels</dt><dd class=\"labels\">")
    let labels = (trial.labels ?? [:]).sorted { $0.key < $1.key }
    if labels.isEmpty { body.raw("none") }
    for (key, value) in labels {
      body.raw("<a class=\"label\" href=\"")
      body.text(PageMarkup.link("/search", [("by", "label"), ("q", "\(key)=\(value)")]))
      body.raw("\">")
      body.text("\(key)=\(value)")
      body.raw("</a> ")
    }
    body.raw("</dd>\n</dl>\n")
    body.raw(changeForms(trial, context))
    body.raw("<h2>Events</h2>\n<div class=\"scroll\"><table id=\"events\">\n")
    body.head(["Event", "Due", "State", "Taken", "Why"])
    for event in events {
      let kind =
        switch event.kind {
        case .reminder: "reminder" + (event.offset.map { " \($0) before" } ?? "")
        case .expiry: "expiry"
        case .graceStarted: "grace-started"
        case .paused: "paused"
        case .resumed: "resumed"
        case .followUp: "follow-up" + (event.after.map { " \($0) after" } ?? "")
        case .milestone: "milestone" + (event.after.map { " \($0) after the start" } ?? "")
        }
      body.row(
        [("data-event", event.id.description)],
        [
          ("kind", kind), ("due", PageMarkup.time(event.due)), ("state", event.state.rawValue),
          ("taken", event.takenAt.map { PageMarkup.time($0) } ?? ""),
          (
            "why",
            [event.reason, event.lateness.map { "\($0) late" }].compactMap { $0 }.joined(separator: "; ")
          ),
        ])
    }
    body.raw("</table></div>\n")
    return PageMarkup.response(200, title: "Trial of \(trial.subject)", body: body.html)
  }

  /// The forms of the changes a trial in its state takes: to a read token, a note instead.
  private func changeForms(_ trial: TrialObject, _ context: PageContext) -> String {
    // A trial in grace takes an end (converted at that time); extending it needs a new end.
    guard [.active, .paused, .grace].contains(trial.state) else { return "" }
    guard context.token.scope == .change, !context.csrf.isEmpty else {
      return
        "<p class=\"note\" id=\"changes-note\">Ending, extending or pausing this trial needs a change token.</p>\n"
    }
    let action = "/trials/\(FormData.encode(trial.id.description))"
    let csrf = "<input type=\"hidden\" name=\"csrf\" value=\"\(context.csrf)\">"
    var out = "<section id=\"changes\"><h2>Change</h2>\n"
    out += "<form class=\"change\" id=\"end\" method=\"post\" action=\"\(action)/end\">\(csrf)"
    out +=
      "<label>End as <select name=\"outcome\"><option>converted</option><option>cancelled</option></select>"
    out += "</label> <button type=\"submit\">End</button></form>\n"
    if trial.state == .active {
      out += "<form class=\"change\" id=\"extend\" method=\"post\" action=\"\(action)/extend\">\(csrf)"
      out += "<label>Extend by <input name=\"by\" value=\"7d\" size=\"6\" required></label> "
      out += "<button type=\"submit\">Extend</button></form>\n"
      out += "<form class=\"change\" id=\"pause\" method=\"post\" action=\"\(action)/pause\">\(csrf)"
      out += "<button type=\"submit\">Pause</button></form>\n"
    } else if trial.state == .paused {
      out += "<form class=\"change\" id=\"resume\" method=\"post\" action=\"\(action)/resume\">\(csrf)"
      out += "<button type=\"submit\">Resume</button></form>\n"
    }
    // Cancel at the end, or take that back.
    let (change, words) = trial.cancelsAt == nil ? ("cancel", "Cancel at the end") : ("uncancel", "Uncancel")
    out += "<form class=\"change\" id=\"\(change)\" method=\"post\" action=\"\(action)/\(change)\">\(csrf)"
    out += "<button type=\"submit\">\(words)</button></form>\n"
    return out + "</section>\n"
  }

  /// The ways to search.
  static let searchKinds = [
    ("subject", "subject"), ("label", "label (key=value)"), ("plan", "plan"), ("state", "state"),
    ("id", "trial id"),
  ]

  /// `GET /search?by=subject|label|plan|state|id&q=TEXT[&after=ID]`.
  func search(_ context: PageContext) throws(PageFailure) -> HTTPResponse {
    let by = context.query["by"].flatMap { $0.isEmpty ? nil : $0 } ?? "subject"
    let text = (context.query["q"] ?? "").trimmingWhitespace().description
    guard Self.searchKinds.contains(where: { $0.0 == by }) else {
      throw PageFailure(
        status: 400, title: "Bad query", message: "by: \(by) is not subject, label, plan, state or id")
    }
    var body = PageMarkup()
    body.raw(
      "<form id=\"search\" method=\"get\" action=\"/search\" class=\"filters\">\n<label>By <select name=\"by\">"
    )
    for (kind, words) in Self.searchKinds {
      body.raw("<option value=\"\(kind)\"\(kind == by ? " selected" : "")>\(words)</option>")
    }
    body.raw(
      "</select></label>\n<label>Find <input name=\"q\" value=\"\(MarkupText.escaped(text))\" required></label>\n"
    )
    body.raw("<button type=\"submit\">Search</button>\n</form>\n")
    guard !text.isEmpty else { return PageMarkup.response(200, title: "Search", body: body.html) }

    var trials: [TrialObject] = []
    var next: TrialID?
    switch by {
    case "subject", "id":
      do {
        trials = [try fetch(Trials.getTrial.qualifiedName, [by: .text(text)], as: TrialReply.self).trial]
      } catch let failure where failure.status == 404 {
        trials = []
      }
    default:
      var parameters: [String: PageParameter] = [by: .text(text), "limit": .integer(100)]
      if let after = context.query["after"], !after.isEmpty { parameters["after"] = .text(after) }
      let page = try fetch(Trials.listTrials.qualifiedName, parameters, as: ListTrialsReply.self)
      trials = page.trials
      next = page.next
    }
    body.raw("<p class=\"summary\">")
    body.text(
      trials.isEmpty ? "No trial found." : "\(trials.count) trials" + (next == nil ? "." : " on this page."))
    body.raw("</p>\n<div class=\"scroll\"><table id=\"results\">\n")
    body.head(["Subject", "Plan", "State", "Started", "Ends", "Labels"])
    for trial in trials {
      let labels = (trial.labels ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
      body.raw("<tr data-trial=\"\(trial.id)\"><td class=\"subject\"><a href=\"/trials/\(trial.id)\">")
      body.text(trial.subject)
      body.raw("</a></td>")
      body.element("td", [("class", "plan")], trial.named["plan"] ?? "—")
      body.element("td", [("class", "state")], trial.state.rawValue)
      body.element("td", [("class", "started")], PageMarkup.time(trial.startedAt))
      body.element("td", [("class", "ends")], PageMarkup.time(trial.endsAt))
      body.element("td", [("class", "labels")], labels.joined(separator: ", "))
      body.raw("</tr>\n")
    }
    body.raw("</table></div>\n")
    if let next {
      body.raw("<p><a id=\"next\" href=\"")
      body.text(PageMarkup.link("/search", [("by", by), ("q", text), ("after", next.description)]))
      body.raw("\">Next page</a></p>\n")
    }
    return PageMarkup.response(200, title: "Search", body: body.html)
  }
}
