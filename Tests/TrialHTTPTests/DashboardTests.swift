import Foundation
import TestSupport
import Testing
import TrialWebhooks

/// The dashboard's pages through curl: the login and its cookie, the redirects without one, the
/// changes a page posts (a change token, the form's csrf field, the request's origin), the
/// cohorts' CSV against GetStats, and text from trials written as text, never as markup.
@Suite(.serialized) struct DashboardTests {
  @Test func login_SetsAStrictCookie_RefusesAWrongToken() throws {
    let fixture = try GatewayFixture()
    try fixture.start()

    let bare = try fixture.page("/cohorts?by=month")
    #expect(bare.status == 303 && bare.header("location") == "/login?next=%2Fcohorts%3Fby%3Dmonth", "\(bare)")
    let form = try fixture.page("/login?next=/plans")
    #expect(form.status == 200 && form.body.contains(#"<form id="login""#), "\(form)")
    #expect(form.body.contains(#"name="next" value="/plans""#), "\(form.body)")

    let wrong = try fixture.page("/login", form: "token=twh_not-a-token&next=%2Fplans")
    #expect(wrong.status == 401 && wrong.body.contains(#"id="login-error""#), "\(wrong)")
    #expect(wrong.header("set-cookie") == nil)

    let right = try fixture.page("/login", form: "token=\(fixture.readSecret)&next=%2Fplans")
    #expect(right.status == 303 && right.header("location") == "/plans", "\(right)")
    let cookie = try #require(right.header("set-cookie"))
    #expect(cookie.hasPrefix("trialwatch_token=\(fixture.readSecret);"), "\(cookie)")
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
      #expect(cookie.contains(attribute), "\(cookie)")
    }

    // The login sends nowhere but this gateway's own paths.
    let away = try fixture.page("/login", form: "token=\(fixture.readSecret)&next=%2F%2Fevil.example%2F")
    #expect(away.status == 303 && away.header("location") == "/", "\(away)")

    let plans = try fixture.page("/plans", cookie: fixture.readSecret)
    #expect(plans.status == 200 && plans.body.contains(#"<table id="plans">"#), "\(plans)")
    #expect(plans.header("content-security-policy")?.contains("default-src 'none'") == true)
    #expect(plans.header("content-type") == "text/html; charset=utf-8")

    let out = try fixture.page("/logout", method: "POST", cookie: fixture.readSecret)
    #expect(out.status == 303 && out.header("set-cookie")?.contains("Max-Age=0") == true, "\(out)")
    #expect(
      fixture.standardError.contains("refused a login with an unknown token"), "\(fixture.standardError)")
  }

  @Test func changes_NeedAChangeToken_AndTheirForm() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let started = try fixture.call(
      "io.trialwatch.Trials.StartTrial", #"{"subject":"acme-7","duration":"14d"}"#,
      token: fixture.changeSecret)
    let id = try #require(started.trial?["id"] as? String, "\(started)")

    // A read token sees the trial but no form, and its post is refused.
    let read = try fixture.page("/trials/\(id)", cookie: fixture.readSecret)
    #expect(
      read.status == 200 && read.body.contains(#"id="changes-note""#)
        && !read.body.contains("class=\"change\""))
    // Its csrf field made as the gateway makes it: the scope refuses it all the same.
    let readCSRF = try Crypto.shared().sha256(Array("trialwatch-csrf\0\(fixture.readSecret)".utf8))
      .map { String(format: "%02x", $0) }.joined()
    let refused = try fixture.page(
      "/trials/\(id)/pause", form: "csrf=\(readCSRF)", cookie: fixture.readSecret)
    #expect(refused.status == 403 && refused.body.contains("may only read"), "\(refused)")

    let page = try fixture.page("/trials/\(id)", cookie: fixture.changeSecret)
    let csrf = try #require(page.csrf, "\(page.body)")
    for (form, origin) in [("csrf=0000", nil), ("", nil), ("csrf=\(csrf)", "http://evil.example")] {
      let forged = try fixture.page(
        "/trials/\(id)/pause", form: form, cookie: fixture.changeSecret,
        headers: origin.map { ["Origin: \($0)"] } ?? [])
      #expect(forged.status == 403, "\(form) \(origin ?? ""): \(forged)")
    }
    // A bearer token posts no form: without the cookie there is no csrf to match.
    let bearer = try fixture.request(
      "/trials/\(id)/pause", method: "POST", body: "csrf=\(csrf)", token: fixture.changeSecret)
    #expect(bearer.status == 403, "\(bearer)")
    #expect(
      try fixture.call("io.trialwatch.Trials.GetTrial", #"{"id":"\#(id)"}"#, token: fixture.readSecret)
        .trial?["state"] as? String == "active")

    let extended = try fixture.page(
      "/trials/\(id)/extend", form: "csrf=\(csrf)&by=3d", cookie: fixture.changeSecret,
      headers: ["Origin: \(fixture.base)"])
    #expect(extended.status == 303 && extended.header("location") == "/trials/\(id)", "\(extended)")
    let bad = try fixture.page(
      "/trials/\(id)/extend", form: "csrf=\(csrf)&by=soon", cookie: fixture.changeSecret)
    #expect(bad.status == 400 && bad.body.contains("by"), "\(bad)")
    let paused = try fixture.page("/trials/\(id)/pause", form: "csrf=\(csrf)", cookie: fixture.changeSecret)
    #expect(paused.status == 303, "\(paused)")
    // Cancel at the end, shown on the page, then taken back; POST /call maps the method too.
    let cancelled = try fixture.page(
      "/trials/\(id)/cancel", form: "csrf=\(csrf)", cookie: fixture.changeSecret)
    #expect(cancelled.status == 303, "\(cancelled)")
    let marked = try fixture.page("/trials/\(id)", cookie: fixture.changeSecret)
    #expect(
      marked.body.contains(#"class="cancels""#) && marked.body.contains(#"id="uncancel""#), "\(marked.body)")
    let uncancelled = try fixture.page(
      "/trials/\(id)/uncancel", form: "csrf=\(csrf)", cookie: fixture.changeSecret)
    #expect(uncancelled.status == 303, "\(uncancelled)")
    let called = try fixture.call(
      "io.trialwatch.Trials.CancelTrial", #"{"id":"\#(id)","atEnd":true}"#, token: fixture.changeSecret)
    #expect(called.trial?["cancelsAt"] as? String != nil, "\(called)")
    let notMarked = try fixture.request(
      "/call/io.trialwatch.Trials.UncancelTrial", method: "POST", body: #"{"subject":"nobody"}"#,
      token: fixture.changeSecret)
    #expect(notMarked.status == 404, "\(notMarked)")
    let ended = try fixture.page(
      "/trials/\(id)/end", form: "csrf=\(csrf)&outcome=converted", cookie: fixture.changeSecret)
    #expect(ended.status == 303, "\(ended)")
    let trial = try fixture.call(
      "io.trialwatch.Trials.GetTrial", #"{"id":"\#(id)"}"#, token: fixture.readSecret)
    #expect(
      trial.trial?["state"] as? String == "converted" && trial.trial?["revision"] as? Int == 2, "\(trial)")
    #expect(
      waitUntil {
        fixture.standardError.contains("from=dashboard") && fixture.standardError.contains("EndTrial")
          && fixture.standardError.contains("token=deployer")
      }, "\(fixture.standardError)")
  }

  @Test func cohorts_TableAndCSV_AreGetStats() throws {
    let fixture = try GatewayFixture(config: "[Trials]\nDefaultLength=10d\n")
    try fixture.start()
    var ids: [String] = []
    for index in 0..<9 {
      let started = try fixture.call(
        "io.trialwatch.Trials.StartTrial", #"{"subject":"c-\#(index)"}"#, token: fixture.changeSecret)
      ids.append(try #require(started.trial?["id"] as? String, "\(started)"))
    }
    for (index, id) in ids.prefix(5).enumerated() {
      let outcome = index < 3 ? "converted" : "cancelled"
      _ = try fixture.call(
        "io.trialwatch.Trials.EndTrial", #"{"id":"\#(id)","outcome":"\#(outcome)"}"#,
        token: fixture.changeSecret)
    }
    let stats = try #require(
      try fixture.call(
        "io.trialwatch.Trials.GetStats", #"{"from":"2020-01-01","by":"month"}"#, token: fixture.readSecret
      ).json)
    let periods = try #require(stats["periods"] as? [[String: Any]])
    let filled = try #require(periods.first { ($0["started"] as? Int ?? 0) > 0 })
    let start = try #require(filled["start"] as? String)

    let page = try fixture.page("/cohorts?by=month&from=2020-01-01", cookie: fixture.readSecret)
    #expect(page.status == 200, "\(page)")
    let row = try #require(
      page.body.components(separatedBy: "<tr data-start=\"\(start)\">").dropFirst().first)
    #expect(row.contains(#"<td class="started">9</td><td class="converted">3</td>"#), "\(row.prefix(400))")
    #expect(
      row.contains(#"<td class="pending">4</td><td class="abandoned">2</td><td class="rate">60.0%</td>"#))
    #expect(page.body.contains(#"<rect class="converted" data-count="3""#), "\(page.body)")

    let csv = try fixture.page("/cohorts.csv?by=month&from=2020-01-01", cookie: fixture.readSecret)
    #expect(csv.status == 200 && csv.header("content-type")?.hasPrefix("text/csv") == true, "\(csv)")
    let lines = csv.body.components(separatedBy: "\r\n").filter { !$0.isEmpty }
    #expect(lines.first == "start,end,started,converted,pending,abandoned,conversion_rate,median_hours")
    #expect(lines.count == periods.count + 1)
    #expect(lines.contains { $0.hasPrefix("\(start),") && $0.contains(",9,3,4,2,0.6000,") }, "\(lines)")

    let bad = try fixture.page("/cohorts?by=fortnight", cookie: fixture.readSecret)
    #expect(bad.status == 400 && bad.body.contains("by: fortnight"), "\(bad)")
  }

  @Test func textOfTrials_IsEscaped_SearchFindsByLabel() throws {
    let fixture = try GatewayFixture()
    try fixture.start()
    let started = try fixture.call(
      "io.trialwatch.Trials.StartTrial",
      #"{"subject":"<script>alert(1)</script>","labels":{"note":"\"><img src=x>","customer":"c-42"}}"#,
      token: fixture.changeSecret)
    let id = try #require(started.trial?["id"] as? String, "\(started)")
    let page = try fixture.page("/trials/\(id)", cookie: fixture.readSecret)
    #expect(
      page.status == 200 && !page.body.contains("<script>") && !page.body.contains("<img"), "\(page.body)")
    #expect(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))

    let found = try fixture.page("/search?by=label&q=customer%3Dc-42", cookie: fixture.readSecret)
    #expect(found.body.contains(#"<tr data-trial="\#(id)">"#), "\(found.body)")
    let none = try fixture.page("/search?by=subject&q=nobody", cookie: fixture.readSecret)
    #expect(none.status == 200 && none.body.contains("No trial found."), "\(none)")
    let overview = try fixture.page("/", cookie: fixture.readSecret)
    #expect(overview.status == 200 && overview.body.contains(#"<tr data-state="active">"#), "\(overview)")
    #expect(
      overview.body.contains(#"<tr data-within="24h">"#) && overview.body.contains(#"<svg id="lateness""#))
  }
}

extension GatewayFixture {
  /// One answer with its headers.
  struct PageAnswer {
    var status: Int
    var headers: [(String, String)]
    var body: String

    func header(_ name: String) -> String? { headers.last { $0.0 == name }?.1 }

    /// The csrf field of the page's forms.
    var csrf: String? {
      guard let range = body.range(of: #"name="csrf" value=""#) else { return nil }
      return String(body[range.upperBound...].prefix { $0 != "\"" })
    }
  }

  /// A request as a browser makes it: `form` posted as a form, `cookie` the token's cookie.
  func page(
    _ path: String, method: String? = nil, form: String? = nil, cookie: String? = nil, headers: [String] = []
  ) throws -> PageAnswer {
    var arguments = ["-sS", "-i", "-X", method ?? (form == nil ? "GET" : "POST"), base + path]
    if let cookie { arguments += ["-H", "Cookie: trialwatch_token=\(cookie)"] }
    for header in headers { arguments += ["-H", header] }
    if form != nil {
      arguments += ["-H", "Content-Type: application/x-www-form-urlencoded", "--data-binary", "@-"]
    }
    let done = try ChildProcess.run(.path("/usr/bin/curl"), arguments, input: form ?? "", timeout: patience)
    #expect(done.status == .exited(0), "curl: \(done.errors)")
    let parts = done.output.components(separatedBy: "\r\n\r\n")
    let head = parts.first?.components(separatedBy: "\r\n") ?? []
    let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    let fields = head.dropFirst().compactMap { line -> (String, String)? in
      guard let colon = line.firstIndex(of: ":") else { return nil }
      return (
        line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      )
    }
    return PageAnswer(status: status, headers: fields, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
  }
}
