import Foundation
import Testing
import TrialCore

@testable import TrialConfiguration

/// Webhook endpoint files, `webhooks/NAME.conf` beside the main file, read as the plan files are.
@Suite struct WebhookFileTests {
  func load(_ fixture: ConfigurationFixture) -> ([String: WebhookEndpoint], [String]) {
    var diagnostics: [ConfigurationDiagnostic] = []
    var files: [String] = []
    let endpoints = WebhookFiles.load(
      directory: fixture.directory + "/webhooks", diagnostics: &diagnostics, files: &files)
    return (endpoints, diagnostics.map(\.description))
  }

  @Test func endpointFile_WithEveryKeyOrOnlyTheNeededOnes_IsTheEndpointWithItsDefaults() throws {
    let fixture = ConfigurationFixture()
    fixture.write(
      "webhooks/billing.conf",
      """
      [Webhook]
      URL=https://app.example.com/hooks/trialwatch?source=trials
      SecretFile=/etc/trialwatch/webhooks/billing.secret
      Events=reminder, expiry
      Plans=pro team
      Labels=tier=pro
      Labels=region=eu
      Timeout=5s
      RetrySchedule=0, 10s, 1min
      DisableAfter=2d
      Ordering=subject
      AllowInsecure=no
      """)
    fixture.write("webhooks/local.conf", "[Webhook]\nURL=http://127.0.0.1:8080/\nSecretFile=/run/s\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(diagnostics.isEmpty, "\(diagnostics)")
    let billing = try #require(endpoints["billing"])
    #expect(billing.url == "https://app.example.com/hooks/trialwatch?source=trials")
    #expect(billing.secretFile == "/etc/trialwatch/webhooks/billing.secret")
    #expect(billing.events == ["reminder", "expiry"])
    #expect(billing.plans == ["pro", "team"])
    #expect(billing.labels == ["tier": "pro", "region": "eu"])
    #expect(billing.timeout == .seconds(5))
    #expect(billing.retrySchedule.steps == [.zero, .seconds(10), .minutes(1)])
    #expect(billing.disableAfter == .days(2))
    #expect(billing.ordering == .subject)
    let local = try #require(endpoints["local"])
    #expect(local.events == nil && local.plans == nil && local.labels.isEmpty)
    #expect(local.timeout == .seconds(15) && local.disableAfter == .days(5))
    #expect(local.retrySchedule == .standard && local.ordering == WebhookEndpoint.Ordering.none)
  }

  @Test func endpointFile_WithProblems_IsLeftOutNamingFileAndLine() {
    let fixture = ConfigurationFixture()
    let bad = fixture.write(
      "webhooks/bad.conf",
      """
      [Webhook]
      URL=http://app.example.com/hooks
      SecretFile=relative/secret
      Events=reminder trial.expiry
      RetrySchedule=0,,1min
      Timeout=0
      Ordering=random
      Colour=blue
      """)
    let empty = fixture.write("webhooks/empty.conf", "[Webhook]\nEvents=expiry\n")
    let misnamed = fixture.write("webhooks/Billing Hooks.conf", "[Webhook]\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(endpoints.isEmpty)
    let expected = [
      "\(bad):2: error: URL=http://app.example.com/hooks is http:// to another host: messages would cross the "
        + "network in the clear (use https://, or AllowInsecure=yes)",
      "\(bad):3: error: invalid value \"relative/secret\" for SecretFile= in [Webhook]: must be an absolute path",
      "\(bad):4: error: invalid value \"reminder trial.expiry\" for Events= in [Webhook]: \"trial.expiry\" is "
        + "not a kind of event (reminder, expiry, paused, resumed)",
      "\(bad):5: error: invalid value \"0,,1min\" for RetrySchedule= in [Webhook]: empty step; expected time "
        + "spans separated by commas",
      "\(bad):6: error: invalid value \"0\" for Timeout= in [Webhook]: must be longer than 0",
      "\(bad):7: error: invalid value \"random\" for Ordering= in [Webhook]: not one of none, subject",
      "\(bad):8: warning: unknown key \"Colour\" in [Webhook], ignored",
      "\(misnamed): error: \"Billing Hooks\" cannot name a webhook endpoint: it must start with a lower-case "
        + "letter or a digit",
      "\(empty): error: [Webhook] has no URL=, which an endpoint needs",
      "\(empty): error: [Webhook] has no SecretFile=, which an endpoint needs",
    ]
    #expect(diagnostics.sorted() == expected.sorted())
  }
}

@Suite struct WebhookEndpointTests {
  @Test func url_OtherThanHTTPSOrHTTPToThisHost_IsRefusedSayingWhy() {
    for url in [
      "https://app.example.com/hooks", "http://127.0.0.1:8080/", "http://localhost/h", "http://[::1]:9/",
    ] {
      #expect(WebhookEndpoint.problem(url: url, allowInsecure: false) == nil, "\(url)")
    }
    #expect(WebhookEndpoint.problem(url: "http://10.0.0.5/hooks", allowInsecure: true) == nil)
    let refused: [(String, String)] = [
      ("http://10.0.0.5/hooks", "in the clear"), ("ftp://example.com/", "not an http:// or https:// URL"),
      ("https://user:pw@example.com/", "user or a password"), ("https://example.com/#part", "fragment"),
      ("not a url", "not"), ("https:///path", "no host"),
    ]
    for (url, reason) in refused {
      let problem = WebhookEndpoint.problem(url: url, allowInsecure: false)
      #expect(problem?.contains(reason) == true, "\(url): \(problem ?? "taken")")
    }
  }

  @Test func wants_TakesTheKindsPlansAndLabelsAsked() {
    var endpoint = WebhookEndpoint(name: "billing", url: "https://example.com/", secretFile: "/s")
    #expect(endpoint.wants(kind: "paused", plan: nil, labels: [:]))
    endpoint.events = ["expiry"]
    endpoint.plans = ["pro"]
    endpoint.labels = ["tier": "gold"]
    #expect(endpoint.wants(kind: "expiry", plan: "pro", labels: ["tier": "gold", "region": "eu"]))
    #expect(!endpoint.wants(kind: "reminder", plan: "pro", labels: ["tier": "gold"]))
    #expect(!endpoint.wants(kind: "expiry", plan: nil, labels: ["tier": "gold"]))
    #expect(!endpoint.wants(kind: "expiry", plan: "pro", labels: ["tier": "silver"]))
  }
}
