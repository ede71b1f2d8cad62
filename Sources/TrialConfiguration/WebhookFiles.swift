import TrialCore

/// The webhook endpoints' files: one per endpoint, `webhooks/NAME.conf` beside the main file
/// (`/etc/trialwatch/webhooks/billing.conf`), in systemd's syntax with one section, `[Webhook]`:
///
///     [Webhook]
///     URL=https://app.example.com/hooks/trialwatch
///     SecretFile=/etc/trialwatch/webhooks/billing.secret
///     Events=reminder expiry
///     Plans=pro team
///
/// Problems are reported as the plan files' are: unknown keys and sections are warnings, invalid
/// values errors naming the file and line; a file linked to /dev/null is masked.
enum WebhookFiles {
  static let section = "Webhook"
  static let keys = [
    "URL", "SecretFile", "Events", "Plans", "Labels", "Timeout", "RetrySchedule", "DisableAfter", "Ordering",
    "AllowInsecure",
  ]

  /// The endpoints of `directory`, by name.
  static func load(
    directory: String, diagnostics: inout [ConfigurationDiagnostic], files: inout [String]
  ) -> [String: WebhookEndpoint] {
    var endpoints: [String: WebhookEndpoint] = [:]
    SectionFiles.each(
      in: directory, what: "webhooks", thing: "a webhook endpoint", validateName: TrialPlan.validateName,
      diagnostics: &diagnostics, files: &files
    ) { name, file, text, diagnostics in
      guard let text else { return }
      if let endpoint = read(text, file: file, name: name, diagnostics: &diagnostics) {
        endpoints[name] = endpoint
      }
    }
    return endpoints
  }

  /// The endpoint one file describes; nil when a value in it is invalid or a key it needs is
  /// missing (reported).
  static func read(
    _ text: String, file: String, name: String, diagnostics: inout [ConfigurationDiagnostic]
  ) -> WebhookEndpoint? {
    var endpoint = WebhookEndpoint(name: name, url: "", secretFile: "")
    var labels: [String: String] = [:]
    var (valid, assigned) = SectionFiles.read(
      text, file: file, section: section, keys: keys, kind: "a webhook file", diagnostics: &diagnostics
    ) { key, value, _ throws(InvalidValue) in
      switch key {
      case "URL": endpoint.url = value
      case "SecretFile":
        endpoint.secretFile = value.isEmpty ? "" : try ConfigurationSchema.absolutePath(value)
      case "Events":
        endpoint.events =
          value.isEmpty
          ? nil
          : try ConfigurationSchema.names(value) {
            WebhookEndpoint.kinds.contains($0)
              ? nil : "is not a kind of event (\(WebhookEndpoint.kinds.joined(separator: ", ")))"
          }
      case "Plans":
        endpoint.plans =
          value.isEmpty ? nil : try ConfigurationSchema.names(value, validate: TrialPlan.validateName)
      case "Labels":
        if value.isEmpty { labels = [:] }
        for (key, text) in try PlanFiles.labelPairs(value) { labels[key] = text }
      case "Timeout":
        endpoint.timeout = value.isEmpty ? .seconds(15) : try ConfigurationSchema.positiveSpan(value)
      case "RetrySchedule":
        endpoint.retrySchedule = value.isEmpty ? .standard : try schedule(value)
      case "DisableAfter":
        endpoint.disableAfter = value.isEmpty ? .days(5) : try ConfigurationSchema.positiveSpan(value)
      case "Ordering":
        endpoint.ordering =
          value.isEmpty ? .none : try ConfigurationSchema.choice(value, of: WebhookEndpoint.Ordering.self)
      default: endpoint.allowInsecure = value.isEmpty ? false : try ConfigurationSchema.boolean(value)
      }
    }
    endpoint.labels = labels
    for key in ["URL", "SecretFile"] where assigned[key] == nil {
      valid = false
      diagnostics.append(
        .init(.error, file: file, line: nil, "[\(section)] has no \(key)=, which an endpoint needs"))
    }
    if let line = assigned["URL"],
      let problem = WebhookEndpoint.problem(url: endpoint.url, allowInsecure: endpoint.allowInsecure)
    {
      valid = false
      diagnostics.append(.init(.error, file: file, line: line, "URL=\(endpoint.url) \(problem)"))
    }
    return valid ? endpoint : nil
  }

  private static func schedule(_ value: String) throws(InvalidValue) -> WebhookRetrySchedule {
    let steps = try ConfigurationSchema.spans(value, item: "step")
    do {
      return try WebhookRetrySchedule(steps)
    } catch {
      throw InvalidValue(reason: error.description)
    }
  }
}
