import Foundation
import Testing

/// The figures by variant through the HTTP gateway (a real daemon, a real gateway): GetStats's
/// byVariant over /call, and the dashboard's table of variants on /cohorts for a plan with them.
@Suite struct VariantPageTests {
  @Test func cohortsOfAPlanWithVariants_ShowEachVariant() throws {
    let plan = "[Plan]\nLength=10d\n\n[Variant]\nName=short\n\n[Variant]\nName=long\nLength=20d\n"
    let fixture = try GatewayFixture(plans: ["pro": plan])
    try fixture.start()
    for index in 0..<8 {
      let variant = index < 4 ? "short" : "long"
      let started = try fixture.call(
        "io.trialwatch.Trials.StartTrial", #"{"subject":"v-\#(index)","plan":"pro","variant":"\#(variant)"}"#,
        token: fixture.changeSecret)
      let id = try #require(started.trial?["id"] as? String, "\(started)")
      let outcome = index % 4 < (variant == "short" ? 1 : 3) ? "converted" : "cancelled"
      _ = try fixture.call(
        "io.trialwatch.Trials.EndTrial", #"{"id":"\#(id)","outcome":"\#(outcome)"}"#,
        token: fixture.changeSecret)
    }
    let stats = try #require(
      try fixture.call(
        "io.trialwatch.Trials.GetStats", #"{"from":"2020-01-01","by":"month","plan":"pro","byVariant":true}"#,
        token: fixture.readSecret
      ).json)
    let variants = try #require(stats["variants"] as? [[String: Any]], "\(stats)")
    #expect(variants.map { $0["variant"] as? String } == ["short", "long"])
    #expect(variants.map { $0["converted"] as? Int } == [1, 3])
    #expect(stats["comparison"] is [String: Any])

    let page = try fixture.page("/cohorts?by=month&from=2020-01-01&plan=pro", cookie: fixture.readSecret)
    #expect(page.status == 200, "\(page)")
    let row = try #require(page.body.components(separatedBy: "<tr data-variant=\"long\">").dropFirst().first)
    #expect(row.contains(#"<td class="converted">3</td><td class="rate">75.0%</td>"#), "\(row.prefix(400))")
    #expect(page.body.contains("<p id=\"variant-test\">long against short: p = "), "\(page.body)")
    let all = try fixture.page("/cohorts?by=month&from=2020-01-01", cookie: fixture.readSecret)
    #expect(all.status == 200 && !all.body.contains("variant-table"))
  }
}
