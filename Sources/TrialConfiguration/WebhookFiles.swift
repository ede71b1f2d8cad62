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
/// values errors naming the file and line; a file linked to /dev/null is masked. The secret file
/// is not read here (the daemon may not be allowed to at its start): `--check-config` reads it
/// (`LoadedConfiguration.checkSecretFiles`).
enum WebhookFiles {
  static let section = "Webhook"
  static let keys = documentation.keys.map(\.name)

  /// `[Webhook]` as the manual describes it.
  static let documentation = ConfigurationDocumentation.Section(
    name: section,
    summary:
      "The one section of a webhook endpoint's file, webhooks/NAME.conf beside trialwatch.conf: the endpoint "
      + "NAME (1 to 64 of a-z, 0-9, _, - and ., starting with a letter or digit): the address of an "
      + "application to which trialwatchd posts the events it wants, signed as Standard Webhooks 1.0 signs "
      + "them. Endpoint files are read at start and at systemctl reload trialwatch, checked by trialwatchd "
      + "--check-config (which also reads each SecretFile=); a file linked to /dev/null is masked. The "
      + "messages are posted by the webhook sender, trialwatch-webhooks(8), which trialwatch-webhooks.service "
      + "starts once an endpoint is configured.",
    keys: [
      .init(
        name: "URL", valueName: "url", defaultText: "", defaultDescription: "none; an endpoint needs one",
        meaning:
          "Where the events are posted: an https:// URL, or http:// to this host (127.0.0.0/8, ::1, "
          + "localhost). No user or password in it (the secret signs each message instead) and no #fragment."),
      .init(
        name: "SecretFile", valueName: "path", defaultText: "",
        defaultDescription: "none; an endpoint needs one",
        meaning:
          "The absolute path of the file of the endpoint's signing secrets: one a line, each whsec_ and the "
          + "base64 of 24 to 64 bytes, as the application is given it; two while one is rotated (each signs "
          + "every message). Blank lines and lines starting with # are ignored. Read by the sender alone, "
          + "again whenever it changes: owner root, group trialwatch-webhooks, mode 0640. trialwatchd "
          + "--check-config checks it; the daemon never reads it."),
      .init(
        name: "Events", valueName: "kind ...", defaultText: "", defaultDescription: "every kind",
        meaning:
          "The kinds of events the endpoint wants, separated by spaces or commas: "
          + WebhookEndpoint.kinds.joined(separator: ", ") + "."),
      .init(
        name: "Plans", valueName: "name ...", defaultText: "",
        defaultDescription: "every trial's events, with a plan or without",
        meaning: "The plans whose trials' events the endpoint wants, separated by spaces or commas."),
      .init(
        name: "Labels", valueName: "key=value ...", defaultText: "", defaultDescription: "none",
        meaning:
          "Labels a trial must carry, each with this value, for its events to go to the endpoint; separated "
          + "by spaces (a pair in double quotes may hold spaces). More than one Labels= line adds to them; an "
          + "empty one removes those before it."),
      .init(
        name: "Timeout", valueName: "span", defaultText: TimeSpan.format(WebhookEndpoint.defaultTimeout),
        meaning:
          "How long one attempt may take, from the connection to the end of the answer; an attempt that "
          + "takes longer has failed."),
      .init(
        name: "RetrySchedule", valueName: "span[, span...]",
        // As Standard Webhooks writes it (24h, not 1d); the tests read it back as `.standard`.
        defaultText: "0, 5s, 5min, 30min, 2h, 5h, 10h, 14h, 20h, 24h",
        meaning:
          "The waits before each attempt, comma-separated: the first before the first attempt, then each "
          + "after a failure; the last is repeated until the endpoint is disabled. The default is Standard "
          + "Webhooks' schedule."),
      .init(
        name: "DisableAfter", valueName: "span",
        defaultText: TimeSpan.format(WebhookEndpoint.defaultDisableAfter),
        meaning: "How long the endpoint may fail, with no attempt delivered, before it is disabled."),
      .init(
        name: "Ordering", valueName: "none|subject", defaultText: "none",
        meaning:
          "Whether the events go out in order: none, each on its own schedule, one failing holds back no "
          + "other; subject, a subject's events in the order they were logged, one failing holds back its "
          + "subject's later events, and only those."),
      .init(
        name: "AllowInsecure", valueName: "boolean", defaultText: "no",
        meaning:
          "Allows URL= to be http:// to another host: the messages, signed but not encrypted, then cross the "
          + "network in the clear."),
    ])

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
    var labelsLine: Int?
    // The needed keys whose last assignment was empty: unset, as if never assigned.
    var emptied: Set<String> = []
    var (valid, assigned) = SectionFiles.read(
      text, file: file, section: section, keys: keys, kind: "a webhook file", diagnostics: &diagnostics
    ) { key, value, line throws(InvalidValue) in
      if key == "URL" || key == "SecretFile" {
        if value.isEmpty { emptied.insert(key) } else { emptied.remove(key) }
      }
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
        labelsLine = line
      case "Timeout":
        endpoint.timeout =
          value.isEmpty ? WebhookEndpoint.defaultTimeout : try ConfigurationSchema.positiveSpan(value)
      case "RetrySchedule":
        endpoint.retrySchedule = value.isEmpty ? .standard : try schedule(value)
      case "DisableAfter":
        endpoint.disableAfter =
          value.isEmpty ? WebhookEndpoint.defaultDisableAfter : try ConfigurationSchema.positiveSpan(value)
      case "Ordering":
        endpoint.ordering =
          value.isEmpty ? .none : try ConfigurationSchema.choice(value, of: WebhookEndpoint.Ordering.self)
      default: endpoint.allowInsecure = value.isEmpty ? false : try ConfigurationSchema.boolean(value)
      }
    }
    // A trial's labels are checked as these are: a pair no trial can carry would match none.
    do {
      _ = try TrialLabels(labels)
      endpoint.labels = labels
    } catch {
      valid = false
      diagnostics.append(
        .init(.error, file: file, line: labelsLine, "invalid Labels= in [\(section)]: \(error)"))
    }
    // An empty assignment leaves a needed key unset, as no assignment does; an invalid one was
    // reported where it is.
    for key in ["URL", "SecretFile"] where assigned[key] == nil || emptied.contains(key) {
      valid = false
      diagnostics.append(
        .init(.error, file: file, line: assigned[key], "[\(section)] has no \(key)=, which an endpoint needs")
      )
      assigned[key] = nil
    }
    if let line = assigned["URL"],
      let problem = WebhookEndpoint.problem(url: endpoint.url, allowInsecure: endpoint.allowInsecure)
    {
      valid = false
      // A password is not repeated: the message reaches the journal.
      let shown = WebhookEndpoint.holdsCredentials(endpoint.url) ? "URL=" : "URL=\(endpoint.url)"
      diagnostics.append(.init(.error, file: file, line: line, "\(shown) \(problem)"))
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
