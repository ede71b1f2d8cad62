import Foundation
import TestSupport
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialEngine

/// A webhook sender as a test plays it, attached to a fixture's engine: every attempt it is
/// handed is answered at once, on the engine's queue, with the outcome the test chose for its
/// endpoint (by default 204), made at the engine's time and taking 120 ms.
final class SpyWebhookSender: @unchecked Sendable {
  // @unchecked: `answers` and `handed` are touched on the engine's queue only.
  private let parts: EngineParts
  private var answers: [String: WebhookAttempt] = [:]
  private var handed: [WebhookDispatch] = []

  init(attachedTo parts: EngineParts) {
    self.parts = parts
    parts.queue.sync { parts.engine.webhooks.attach { [self] in answer($0) } }
  }

  private func answer(_ dispatches: [WebhookDispatch]) {
    handed += dispatches
    let now = parts.scheduler.manualClock.now()
    let reports = dispatches.map {
      WebhookReport(
        token: $0.token, attempt: answers[$0.endpoint.name] ?? .answered(status: 204, retryAfter: nil),
        at: now,
        duration: .milliseconds(120))
    }
    let parts = parts
    parts.queue.async { parts.engine.webhooks.report(reports) }
  }

  /// From now on, `endpoint`'s attempts come to `attempt`.
  func answer(_ endpoint: String, with attempt: WebhookAttempt) {
    parts.queue.sync { answers[endpoint] = attempt }
  }

  /// The endpoints of the attempts handed so far, in order.
  var endpoints: [String] { parts.queue.sync { handed.map(\.endpoint.name) } }

  /// Lets the reports sent so far be taken, and their writes be done.
  func settle() {
    for _ in 0..<3 { parts.queue.sync { parts.engine.commits.drain() } }
  }

  func detach() {
    parts.queue.sync { parts.engine.webhooks.detach() }
  }
}

extension ControlFixture {
  /// The fixture's engine with `endpoints` configured, as a reload applies them, their state
  /// read from the store.
  func configure(webhooks endpoints: [WebhookEndpoint]) {
    var settings = EngineSettings()
    settings.webhooks = Dictionary(uniqueKeysWithValues: endpoints.map { ($0.name, $0) })
    let parts = engine
    parts.queue.sync { parts.engine.reload(settings) }
    for _ in 0..<3 { parts.queue.sync { parts.engine.commits.drain() } }
  }
}

/// An endpoint of the tests, posting to https://app.example/NAME.
func webhookEndpoint(_ name: String, secretFile: String = "/etc/trialwatch/webhooks/test.secret")
  -> WebhookEndpoint
{
  WebhookEndpoint(name: name, url: "https://app.example/\(name)", secretFile: secretFile)
}

extension Run {
  /// The cells of each line of a table (split at two spaces or more), headings first.
  var cells: [[String]] {
    lines.map { line in line.split(separator: try! Regex("  +")).map(String.init) }
  }

  /// The row of a table whose first cell is `name`.
  func row(_ name: String) -> [String]? {
    cells.first { $0.first == name }
  }
}
