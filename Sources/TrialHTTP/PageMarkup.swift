import FoundationEssentials
import TrialControl
import TrialCore

/// A page of the dashboard as it is written: HTML 5 rendered on the gateway, no script, its
/// style from `/style.css`, charts as inline SVG. Every text that comes from a trial, a plan or
/// a request is escaped as it is added (`text`, `attribute`).
struct PageMarkup {
  private(set) var html = ""

  /// Adds markup as it is (written by the gateway, never from a request or a reply).
  mutating func raw(_ markup: String) { html += markup }

  /// Adds `text`, escaped.
  mutating func text(_ text: String) { html += MarkupText.escaped(text) }

  /// `<TAG attributes>text</TAG>`, the text escaped.
  mutating func element(_ tag: String, _ attributes: [(String, String)] = [], _ text: String) {
    html += "<\(tag)\(Self.attributes(attributes))>\(MarkupText.escaped(text))</\(tag)>"
  }

  /// A table row of cells, each `(class, text)`; the row's own attributes first.
  mutating func row(_ attributes: [(String, String)] = [], _ cells: [(String, String)]) {
    html += "<tr\(Self.attributes(attributes))>"
    for (name, value) in cells { element("td", name.isEmpty ? [] : [("class", name)], value) }
    html += "</tr>\n"
  }

  /// A table's head row.
  mutating func head(_ names: [String]) {
    html += "<thead><tr>" + names.map { "<th>\(MarkupText.escaped($0))</th>" }.joined() + "</tr></thead>\n"
  }

  /// ` name="value"` for each pair, the values escaped.
  static func attributes(_ pairs: [(String, String)]) -> String {
    pairs.map { " \($0.0)=\"\(MarkupText.escaped($0.1))\"" }.joined()
  }

  /// A link to `path` with the query `arguments` (percent-encoded).
  static func link(_ path: String, _ arguments: [(String, String)]) -> String {
    guard !arguments.isEmpty else { return path }
    return path + "?" + arguments.map { "\($0.0)=\(FormData.encode($0.1))" }.joined(separator: "&")
  }

  // MARK: - The whole page

  /// The links at the top of every page.
  static let sections = [
    ("/", "Overview"), ("/plans", "Plans"), ("/cohorts", "Cohorts"), ("/search", "Search"),
  ]

  /// The document around `body`, with its title and the navigation (none on the login page).
  static func document(title: String, body: String, navigation: Bool = true) -> String {
    var page = """
      <!DOCTYPE html>
      <html lang="en">
      <head>
      <meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(MarkupText.escaped(title)) · trialwatch</title>
      <link rel="stylesheet" href="/style.css">
      <link rel="icon" href="data:,">
      </head>
      <body>

      """
    if navigation {
      page += "<header><nav>"
      page += sections.map { "<a href=\"\($0.0)\">\($0.1)</a>" }.joined(separator: " ")
      page +=
        "<form method=\"post\" action=\"/logout\" class=\"logout\"><button type=\"submit\">Log out</button>"
      page += "</form></nav></header>\n"
    }
    page += "<main>\n<h1>\(MarkupText.escaped(title))</h1>\n\(body)</main>\n</body>\n</html>\n"
    return page
  }

  /// A page as a response: its headers keep it from being framed, cached, or running a script.
  static func response(_ status: Int, title: String, body: String, navigation: Bool = true) -> HTTPResponse {
    var response = HTTPResponse.text(
      status, document(title: title, body: body, navigation: navigation), type: "text/html; charset=utf-8")
    response.headers += pageHeaders
    return response
  }

  /// `Referrer-Policy: same-origin`, not `no-referrer`: under the latter a browser sends a form's
  /// post with `Origin: null`, which the changes' check refuses.
  static let pageHeaders: [(name: String, value: String)] = [
    (
      "Content-Security-Policy",
      "default-src 'none'; style-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; "
        + "base-uri 'none'"
    ),
    ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"),
  ]

  // MARK: - Figures

  /// A time as people read it: `2026-11-27 12:00:00 UTC`.
  @Sendable static func time(_ date: Date) -> String { CivilTime(date).readable }

  /// A rate of 0 to 1 as a percentage to a tenth, or a dash.
  static func percent(_ rate: Double?) -> String {
    rate.map { decimal($0 * 100, digits: 1) + "%" } ?? "—"
  }
}
