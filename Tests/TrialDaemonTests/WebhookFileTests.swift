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
    fixture.write(
      "webhooks/lan.conf", "[Webhook]\nURL=http://10.0.0.5/hooks\nSecretFile=/run/s\nAllowInsecure=yes\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(diagnostics.isEmpty, "\(diagnostics)")
    let billing = try #require(endpoints["billing"])
    #expect(billing.name == "billing")
    #expect(billing.url == "https://app.example.com/hooks/trialwatch?source=trials")
    #expect(billing.secretFile == "/etc/trialwatch/webhooks/billing.secret")
    #expect(billing.events == ["reminder", "expiry"])
    #expect(billing.plans == ["pro", "team"])
    #expect(billing.labels == ["tier": "pro", "region": "eu"])
    #expect(billing.timeout == .seconds(5))
    #expect(billing.retrySchedule.steps == [.zero, .seconds(10), .minutes(1)])
    #expect(billing.disableAfter == .days(2))
    #expect(billing.ordering == .subject)
    #expect(!billing.allowInsecure)
    let local = try #require(endpoints["local"])
    #expect(local == WebhookEndpoint(name: "local", url: "http://127.0.0.1:8080/", secretFile: "/run/s"))
    #expect(local.events == nil && local.plans == nil && local.labels.isEmpty)
    #expect(local.timeout == .seconds(15) && local.disableAfter == .days(5))
    #expect(local.retrySchedule == .standard && local.ordering == WebhookEndpoint.Ordering.none)
    #expect(endpoints["lan"]?.allowInsecure == true)
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
      Plans=Pro
      Labels=Tier=gold
      DisableAfter=soon
      AllowInsecure=maybe
      """)
    let empty = fixture.write("webhooks/empty.conf", "[Webhook]\nEvents=expiry\n")
    let emptied = fixture.write(
      "webhooks/emptied.conf", "[Webhook]\nURL=https://example.com/\nSecretFile=/s\nURL=\nSecretFile=\n")
    let misnamed = fixture.write("webhooks/Billing Hooks.conf", "[Webhook]\n")
    let credentials = fixture.write(
      "webhooks/credentials.conf", "[Webhook]\nSecretFile=/s\nURL=https://hooks:hunter2@example.com/\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(endpoints.isEmpty)
    let expected = [
      "\(bad):2: error: URL=http://app.example.com/hooks is http:// to another host: messages would cross the "
        + "network in the clear (use https://, or AllowInsecure=yes)",
      "\(bad):3: error: invalid value \"relative/secret\" for SecretFile= in [Webhook]: must be an absolute path",
      "\(bad):4: error: invalid value \"reminder trial.expiry\" for Events= in [Webhook]: \"trial.expiry\" is "
        + "not a kind of event (reminder, milestone, grace-started, expiry, follow-up, paused, resumed)",
      "\(bad):5: error: invalid value \"0,,1min\" for RetrySchedule= in [Webhook]: empty step; expected time "
        + "spans separated by commas",
      "\(bad):6: error: invalid value \"0\" for Timeout= in [Webhook]: must be longer than 0",
      "\(bad):7: error: invalid value \"random\" for Ordering= in [Webhook]: not one of none, subject",
      "\(bad):8: warning: unknown key \"Colour\" in [Webhook], ignored",
      "\(bad):9: error: invalid value \"Pro\" for Plans= in [Webhook]: \"Pro\" must start with a lower-case "
        + "letter or a digit",
      "\(bad):10: error: invalid Labels= in [Webhook]: label \"Tier\" must start with a lower-case letter a-z",
      "\(bad):11: error: invalid value \"soon\" for DisableAfter= in [Webhook]: not a time span (like 5d, 36h, "
        + "90s or 1d 12h): expected a number at \"soon\"",
      "\(bad):12: error: invalid value \"maybe\" for AllowInsecure= in [Webhook]: not a boolean (yes or no)",
      "\(misnamed): error: \"Billing Hooks\" cannot name a webhook endpoint: it must start with a lower-case "
        + "letter or a digit",
      "\(empty): error: [Webhook] has no URL=, which an endpoint needs",
      "\(empty): error: [Webhook] has no SecretFile=, which an endpoint needs",
      "\(emptied):4: error: [Webhook] has no URL=, which an endpoint needs",
      "\(credentials):3: error: URL= holds a user or a password; the endpoint's secret signs each message "
        + "instead",
      "\(emptied):5: error: [Webhook] has no SecretFile=, which an endpoint needs",
    ]
    #expect(diagnostics.sorted() == expected.sorted())
  }

  @Test func endpointFile_WithOtherSectionsOrOutsideOne_IsWarnedAbout() {
    let fixture = ConfigurationFixture()
    let file = fixture.write(
      "webhooks/hooks.conf",
      "Timeout=5s\n[Webhook]\nURL=https://example.com/\nSecretFile=/s\n[Plan]\nLength=1d\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(endpoints["hooks"]?.timeout == .seconds(15))
    #expect(
      diagnostics == [
        "\(file):1: warning: assignment Timeout= outside of any section, ignored (a webhook file has [Webhook])",
        "\(file):5: warning: unknown section [Plan] in a webhook file, its assignments are ignored (a webhook "
          + "file has [Webhook])",
      ])
  }

  @Test func endpointFile_LinkedToDevNull_IsMaskedAndRead() throws {
    let fixture = ConfigurationFixture()
    try FileManager.default.createDirectory(
      atPath: fixture.directory + "/webhooks", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(
      atPath: fixture.directory + "/webhooks/billing.conf", withDestinationPath: "/dev/null")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty)
    #expect(loaded.configuration.webhooks.isEmpty)
    #expect(loaded.files == [fixture.directory + "/webhooks/billing.conf"])
  }

  @Test func loader_WithPlansAndEndpoints_KeepsBothInTheConfiguration() throws {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=5d\n")
    let plan = fixture.write("plans/pro.conf", "[Plan]\nLength=5d\n")
    let billing = fixture.write(
      "webhooks/billing.conf", "[Webhook]\nURL=https://example.com/\nSecretFile=/s\n")
    let shop = fixture.write("webhooks/shop.conf", "[Webhook]\nURL=https://shop.example/\nSecretFile=/t\n")
    fixture.write("webhooks/billing.secret", "whsec_not read by the loader\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(loaded.files == [fixture.main, plan, billing, shop])
    #expect(loaded.configuration.webhooks.keys.sorted() == ["billing", "shop"])
    #expect(loaded.configuration.webhooks["shop"]?.url == "https://shop.example/")
    #expect(loaded.configuration.plans.keys.sorted() == ["pro"])
    // A reload takes the endpoints read again, as it takes the plans.
    let (applied, pending) = defaults.reloading(loaded.configuration)
    #expect(applied.webhooks == loaded.configuration.webhooks && pending.isEmpty)
  }

  @Test func webhookDirectory_BesideAnyMainFile_IsWebhooksInItsFolder() {
    #expect(
      ConfigurationLoader.webhookDirectory(beside: "/etc/trialwatch/trialwatch.conf")
        == "/etc/trialwatch/webhooks")
    #expect(ConfigurationLoader.webhookDirectory(beside: "trialwatch.conf") == "./webhooks")
    #expect(ConfigurationLoader(mainFile: "/a/b.conf", environment: [:]).webhookDirectory == "/a/webhooks")
  }

  @Test func documentedDefaults_WrittenOut_AreTheEndpointsDefaults() {
    var lines = ["[Webhook]", "URL=https://example.com/", "SecretFile=/s"]
    for key in WebhookFiles.documentation.keys where !key.defaultText.isEmpty {
      lines.append("\(key.name)=\(key.defaultText)")
    }
    var diagnostics: [ConfigurationDiagnostic] = []
    let endpoint = WebhookFiles.read(
      lines.joined(separator: "\n"), file: "defaults.conf", name: "defaults", diagnostics: &diagnostics)
    #expect(diagnostics.isEmpty, "\(diagnostics)")
    #expect(endpoint == WebhookEndpoint(name: "defaults", url: "https://example.com/", secretFile: "/s"))
    #expect(WebhookFiles.keys == WebhookFiles.documentation.keys.map(\.name))
    #expect(WebhookFiles.documentation.keys.allSatisfy { $0.meaning.hasSuffix(".") })
  }

  /// `etc/webhooks/`, the sample endpoint, as the daemon reads it: every key shown.
  @Test func sampleEndpoint_AsShipped_LoadsAndShowsEveryKey() throws {
    let directory = RepositoryFile.path("etc/webhooks")
    var diagnostics: [ConfigurationDiagnostic] = []
    var files: [String] = []
    let endpoints = WebhookFiles.load(directory: directory, diagnostics: &diagnostics, files: &files)
    #expect(diagnostics.isEmpty, "\(diagnostics)")
    #expect(!endpoints.isEmpty)
    for file in files {
      let text = try String(contentsOfFile: file, encoding: .utf8)
      for key in WebhookFiles.documentation.keys {
        // Set, or commented out with its default when it has one.
        let commented = "\n#\(key.name)=" + (key.defaultText.isEmpty ? "" : key.defaultText + "\n")
        let shown = text.contains("\n\(key.name)=") || text.contains(commented)
        #expect(shown, "\(file): \(key.name)=")
      }
    }
  }

  @Test func events_OfTheLifecycle_AreKindsAnEndpointMayAskFor() throws {
    let fixture = ConfigurationFixture()
    fixture.write(
      "webhooks/winback.conf",
      "[Webhook]\nURL=https://example.com/\nSecretFile=/s\nEvents=grace-started, follow-up\n")
    let (endpoints, diagnostics) = load(fixture)
    #expect(diagnostics.isEmpty, "\(diagnostics)")
    let endpoint = try #require(endpoints["winback"])
    #expect(endpoint.wants(kind: "follow-up", plan: "pro", labels: [:]))
    #expect(endpoint.wants(kind: "grace-started", plan: nil, labels: [:]))
    #expect(!endpoint.wants(kind: "expiry", plan: nil, labels: [:]))
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
      ("not a url", "not"), ("https:///path", "no host"), ("http://127.0.0.1.example.com/", "in the clear"),
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
