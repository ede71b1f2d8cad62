import FoundationEssentials
import TrialControl
import TrialCore

// Webhook endpoints, their attempts and their secrets, as the reader sees them.
extension TrialPresenter {
  /// One row per endpoint; when none is configured, where their files go (`directory`).
  public func present(webhooks endpoints: [WebhookEndpointObject], directory: String) {
    let now = clock.now()
    let rows = endpoints.map { endpoint in
      [
        endpoint.name, endpoint.url, webhookState(endpoint), lastAttempt(endpoint, now: now),
        "\(endpoint.backlog)", endpoint.oldestPendingAt.map { brief(now.duration(since: $0)) } ?? "-",
        nextAttempt(endpoint, now: now) ?? "-",
      ]
    }
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["NAME", "URL", "STATE", "LAST", "BACKLOG", "OLDEST", "NEXT"], rows: rows),
        emptyMessage:
          "No webhook endpoints are configured. An endpoint is a file \(directory)/NAME.conf "
          + "(trialwatch.conf(5)), read at systemctl reload trialwatch."))
  }

  public func present(webhook endpoint: WebhookEndpointObject) {
    output.showDetails(viewModel(for: endpoint))
  }

  public func viewModel(for endpoint: WebhookEndpointObject) -> DetailsViewModel {
    let now = clock.now()
    let waiting = endpoint.backlog == 0 ? "nothing waiting" : "\(count(endpoint.backlog, "event")) waiting"
    let headline: String
    var state: String
    switch endpoint.state {
    case _ where !endpoint.loaded:
      headline = "\(endpoint.name): loading its state from the store"
      state = "loading"
    case .disabled:
      let reason = disabledReason(endpoint)
      headline = "\(endpoint.name): disabled, \(reason)"
      state = "disabled" + (endpoint.disabledAt.map { " on \(date($0))" } ?? "") + ": \(reason)"
    case .failing:
      let failures = count(endpoint.consecutiveFailures, "attempt")
      headline = "\(endpoint.name): failing, \(failures) failed; \(waiting)"
      state = "failing: \(failures) failed" + (endpoint.failingSince.map { " since \(date($0))" } ?? "")
    case .active:
      headline = "\(endpoint.name): active, \(waiting)"
      state = "active"
    }
    var details = [
      LabeledValue(label: "URL", value: endpoint.url),
      LabeledValue(label: "Secret file", value: endpoint.secretFile),
      LabeledValue(label: "State", value: state),
    ]
    if endpoint.state == .disabled {
      details.append(
        LabeledValue(label: "Enable with", value: "trialwatchctl webhooks enable \(endpoint.name)"))
    }
    var last = lastAttempt(endpoint, now: now)
    if let at = endpoint.lastAttemptAt { last += " (\(date(at)))" }
    details += [
      LabeledValue(label: "Last attempt", value: last),
      LabeledValue(label: "Position", value: endpoint.position.description),
      LabeledValue(label: "Lag", value: count(endpoint.lag, "event") + " logged after it"),
      LabeledValue(
        label: "Backlog",
        value: count(endpoint.backlog, "event")
          + (endpoint.inFlight > 0 ? ", \(endpoint.inFlight) out for an attempt" : "")),
    ]
    if let oldest = endpoint.oldestPending {
      let taken = endpoint.oldestPendingAt.map { ", taken \(age($0, now: now)) (\(date($0)))" } ?? ""
      details.append(LabeledValue(label: "Oldest pending", value: oldest.description + taken))
    } else {
      details.append(LabeledValue(label: "Oldest pending", value: "none"))
    }
    var next = "none"
    if let relative = nextAttempt(endpoint, now: now), let at = endpoint.nextAttemptAt {
      next = "\(relative) (\(date(at)))"
    } else if endpoint.state == .disabled, endpoint.backlog > 0 {
      next = "once enabled"
    }
    details.append(LabeledValue(label: "Next attempt", value: next))
    return DetailsViewModel(headline: headline, details: details)
  }

  /// The attempts an endpoint keeps, oldest first.
  public func present(attempts: [WebhookAttemptObject], of name: String, event: String?) {
    let rows = attempts.map { attempt in
      [
        date(attempt.at), attempt.cursor?.description ?? "-", attempt.event ?? "test", "\(attempt.number)",
        outcome(attempt), brief(attempt.duration.duration),
        attempt.retryAfter.map { brief($0.duration) } ?? "-",
      ]
    }
    let of = event.map { " of event \($0)" } ?? ""
    output.showList(
      ListViewModel(
        title: "Attempts\(of) to deliver to \(name), oldest first:",
        table: TableViewModel(
          columns: ["TIME", "CURSOR", "EVENT", "ATTEMPT", "OUTCOME", "DURATION", "RETRY-AFTER"], rows: rows),
        emptyMessage: "No attempts\(of) kept."))
  }

  /// What `webhooks test` says of a test message delivered; `testFailure` says it of one that
  /// was not.
  public func present(test attempt: WebhookAttemptObject, of name: String) {
    output.showMessage(
      "Test message delivered to \(name): \(answer(attempt)) in \(brief(attempt.duration.duration)).")
  }

  public func testFailure(_ attempt: WebhookAttemptObject, of name: String) -> String {
    "test message to \(name) not delivered: \(answer(attempt)) after \(brief(attempt.duration.duration)) "
      + "(webhook-id \(attempt.messageId))"
  }

  /// `delivered (HTTP 204)`, `rejected (HTTP 500)`, `no answer: Connection refused`.
  func outcome(_ attempt: WebhookAttemptObject) -> String {
    guard attempt.status != nil else { return answer(attempt) }
    return (attempt.delivered ? "delivered" : "rejected") + " (\(answer(attempt)))"
  }

  /// `HTTP 204`, `no answer: Connection refused`.
  func answer(_ attempt: WebhookAttemptObject) -> String {
    if let status = attempt.status { return "HTTP \(status)" }
    return "no answer: \(attempt.error ?? "no reason given")"
  }

  /// `active`, `failing (3 failures)`, `disabled (gone)`, `loading`.
  func webhookState(_ endpoint: WebhookEndpointObject) -> String {
    guard endpoint.loaded else { return "loading" }
    switch endpoint.state {
    case .active: return "active"
    case .failing: return "failing (\(count(endpoint.consecutiveFailures, "failure")))"
    case .disabled: return "disabled (\(endpoint.disabledReason ?? "?"))"
    }
  }

  /// Why a disabled endpoint is, in words, with its dates in the reader's zone.
  func disabledReason(_ endpoint: WebhookEndpointObject) -> String {
    switch endpoint.disabledReason {
    case "gone": return "the receiver answered 410 Gone"
    case "failing":
      guard let since = endpoint.failingSince else { break }
      return "nothing delivered since \(date(since)) (DisableAfter=)"
    default: break
    }
    return endpoint.disabledDetail ?? "no reason given"
  }

  /// `HTTP 500, 5min ago`, `Connection refused, 2h ago`, `never`.
  func lastAttempt(_ endpoint: WebhookEndpointObject, now: Date) -> String {
    guard let at = endpoint.lastAttemptAt else { return "never" }
    let outcome = endpoint.lastStatus.map { "HTTP \($0)" } ?? endpoint.lastError ?? "?"
    return "\(outcome), \(age(at, now: now))"
  }

  /// When the next attempt comes, relative to now; nil when none waits, or the endpoint is
  /// disabled (no attempt is made until it is enabled).
  func nextAttempt(_ endpoint: WebhookEndpointObject, now: Date) -> String? {
    guard endpoint.state != .disabled, let next = endpoint.nextAttemptAt else { return nil }
    return relative(next, now: now)
  }

  /// How long ago `date` was: `5min ago`; `just now` within a second (either way).
  func age(_ date: Date, now: Date) -> String {
    let span = now.duration(since: date)
    return span < .seconds(1) ? "just now" : "\(brief(span)) ago"
  }

  /// `1 event`, `3 events`.
  private func count(_ number: Int, _ noun: String) -> String {
    number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
  }
}

// `webhooks secret`: the secret on standard output alone, what was done on standard error.
extension TrialPresenter {
  public func present(newSecret secret: String) {
    output.showMessage(secret)
  }

  public func presentSecretNotice(_ text: String) {
    output.showNotice(text)
  }
}
