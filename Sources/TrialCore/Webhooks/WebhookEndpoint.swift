import FoundationEssentials

/// An application's endpoint that trialwatch posts events to, signed (Standard Webhooks 1.0): one
/// file `webhooks/NAME.conf` beside trialwatch.conf. Which events it wants, where it is, how long
/// an attempt may take, how failures are retried and when the endpoint is given up on.
public struct WebhookEndpoint: Hashable, Sendable {
  /// Whether an endpoint's events go out in order.
  public enum Ordering: String, Hashable, Sendable, CaseIterable {
    /// Each event on its own schedule: one failing holds back none other.
    case none
    /// A subject's events in the order they were logged: one failing holds back its subject's
    /// later events, and only those.
    case subject
  }

  /// Its name: the file's, as a plan's (`TrialPlan.validateName`).
  public var name: String
  /// `https://`, or `http://` to this host (127.0.0.0/8, ::1, localhost) unless `allowInsecure`.
  public var url: String
  /// The file of its secrets, one a line (two while one is rotated: each signs).
  public var secretFile: String
  /// The kinds of events it wants (`reminder`, `expiry`, `paused`, `resumed`); nil: every kind.
  public var events: Set<String>?
  /// The plans whose trials' events it wants; nil: every trial's, with a plan or without.
  public var plans: Set<String>?
  /// Labels a trial must carry, each with this value, for its events to go here.
  public var labels: [String: String] = [:]
  /// How long one attempt may take, from the connection to the end of the answer.
  public var timeout: Duration = Self.defaultTimeout
  public var retrySchedule: WebhookRetrySchedule = .standard
  /// How long an endpoint may fail, with no attempt delivered, before it is disabled.
  public var disableAfter: Duration = Self.defaultDisableAfter
  public var ordering: Ordering = .none
  /// Allows `http://` to another host: the messages, signed but not encrypted, cross the network
  /// in the clear.
  public var allowInsecure = false

  public init(name: String, url: String, secretFile: String) {
    self.name = name
    self.url = url
    self.secretFile = secretFile
  }

  /// An attempt's time when `Timeout=` does not say.
  public static let defaultTimeout: Duration = .seconds(15)
  /// Standard Webhooks' advice: an endpoint that has failed for five days is disabled.
  public static let defaultDisableAfter: Duration = .days(5)

  /// The kinds of events an endpoint may ask for, by `Events=`.
  public static let kinds = EventKind.names

  /// Whether an event of `kind` of a trial with `plan` and `labels` goes to this endpoint.
  /// Whether a logged event goes to this endpoint: a fired event (a skipped one is never sent)
  /// of a kind, plan and labels it asks for.
  public func wants(_ event: LoggedEvent) -> Bool {
    guard event.fired else { return false }
    if let events, !events.contains(event.event.kind.name) { return false }
    if let plans, !plans.contains(event.attributes.plan ?? "") { return false }
    return labels.allSatisfy { event.labels[$0.key] == $0.value }
  }

  public func wants(kind: String, plan: String?, labels trialLabels: [String: String]) -> Bool {
    if let events, !events.contains(kind) { return false }
    if let plans, !plans.contains(plan ?? "") { return false }
    return labels.allSatisfy { trialLabels[$0.key] == $0.value }
  }

  /// What is wrong with `url` as an endpoint's address, or nil: an absolute `https://` URL with a
  /// host, or `http://` to this host (or to any, with `allowInsecure`); no user or password in it
  /// (a secret belongs in the secret file) and no fragment.
  public static func problem(url: String, allowInsecure: Bool) -> String? {
    guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased() else {
      return "is not a URL"
    }
    guard scheme == "https" || scheme == "http" else { return "is not an http:// or https:// URL" }
    guard let host = parsed.host(percentEncoded: false), !host.isEmpty else { return "has no host" }
    if holdsCredentials(url) {
      return "holds a user or a password; the endpoint's secret signs each message instead"
    }
    if parsed.fragment != nil { return "has a fragment (#...), which is never sent" }
    if scheme == "http" && !allowInsecure && !isLoopback(host) {
      return "is http:// to another host: messages would cross the network in the clear (use https://, "
        + "or AllowInsecure=yes)"
    }
    return nil
  }

  /// Whether `url` holds a user or a password (`https://user:password@host/`): such a URL is
  /// refused, and never repeated in a message.
  public static func holdsCredentials(_ url: String) -> Bool {
    guard let parsed = URL(string: url) else { return false }
    return parsed.user != nil || parsed.password != nil
  }

  /// 127.0.0.0/8, ::1 and localhost: addresses of this host.
  static func isLoopback(_ host: String) -> Bool {
    let name = host.lowercased().trimmingPrefix("[").split(separator: "]").first.map(String.init) ?? ""
    if name == "localhost" || name == "::1" { return true }
    let octets = name.split(separator: ".", omittingEmptySubsequences: false)
    return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
  }
}
