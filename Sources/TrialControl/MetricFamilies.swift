import TrialCore

/// The families of `io.systemd.Metrics` that trialwatchd serves and trialwatchctl completes, in
/// the order List and Describe give them. Each is `io.trialwatch.<name>`; the metrics of a family differ by their
/// fields. None is per trial or per subject: their number grows with plans, consumers and
/// methods called, never with trials. A distribution is three families, as Prometheus
/// exposes a histogram: `<name>_bucket` (a counter per upper bound `le`, cumulative, the last
/// `+Inf`), `<name>_sum` and `<name>_count`.
public enum MetricFamily: String, CaseIterable, Sendable {
  case buildInfo = "build_info"
  case startTime = "start_time_seconds"
  case trials
  case trialsByPlan = "trials_by_plan"
  case pendingEvents = "pending_events"
  case nextEvent = "next_event_timestamp_seconds"
  case eventsFired = "events_fired"
  case eventsSkipped = "events_skipped"
  case eventsFiredLate = "events_fired_late"
  case latenessBucket = "fire_lateness_seconds_bucket"
  case latenessSum = "fire_lateness_seconds_sum"
  case latenessCount = "fire_lateness_seconds_count"
  case eventsLogged = "events_logged"
  case journalHeld = "journal_held_events"
  case consumerPosition = "consumer_position"
  case consumerLag = "consumer_lag_events"
  case commitBucket = "store_commit_seconds_bucket"
  case commitSum = "store_commit_seconds_sum"
  case commitCount = "store_commit_seconds_count"
  case storeFile = "store_file_bytes"
  case storeFree = "store_free_bytes"
  case storeRefusedWrites = "store_refused_writes"
  case controlCalls = "control_calls"
  case controlErrors = "control_errors"
  case connections = "control_connections"
  case refusedConnections = "control_refused_connections"
  case fleetShards = "fleet_shards_owned"
  case fleetNodesAlive = "fleet_nodes_alive"
  case fleetRenewals = "fleet_lease_renewals"
  case fleetLosses = "fleet_lease_losses"
  case webhookDeliveries = "webhook_deliveries"
  case webhookBacklog = "webhook_backlog_events"
  case webhookOldestPending = "webhook_oldest_pending_age_seconds"
  case webhookDisabled = "webhook_endpoint_disabled"
  case webhookSender = "webhook_sender_attached"
  case extensionsRefused = "extensions_refused"

  /// `io.trialwatch.trials`.
  public var name: String { SystemdMetrics.prefix + rawValue }

  public var type: MetricType {
    switch self {
    case .buildInfo: .string
    case .startTime, .trials, .trialsByPlan, .pendingEvents, .nextEvent, .journalHeld, .consumerPosition,
      .consumerLag, .storeFile, .storeFree, .connections, .fleetShards, .fleetNodesAlive, .webhookBacklog,
      .webhookOldestPending, .webhookDisabled, .webhookSender:
      .gauge
    case .eventsFired, .eventsSkipped, .eventsFiredLate, .latenessBucket, .latenessSum, .latenessCount,
      .eventsLogged, .commitBucket, .commitSum, .commitCount, .storeRefusedWrites, .controlCalls,
      .controlErrors,
      .refusedConnections, .fleetRenewals, .fleetLosses, .webhookDeliveries, .extensionsRefused:
      .counter
    }
  }

  public var description: String {
    switch self {
    case .buildInfo: "The daemon's version"
    case .startTime: "When the daemon started, in seconds since 1970-01-01 UTC"
    case .trials:
      "Trials by state (field state): active, paused and grace are open; expired, converted and cancelled "
        + "have ended and stay until retention removes them"
    case .trialsByPlan:
      "Active trials (those in grace too) of each named plan (field plan), as trialwatchctl plans counts them"
    case .pendingEvents: "Reminders, starts of grace, expiries and resumes planned and not yet due"
    case .nextEvent: "When the next planned event falls due, in seconds since 1970-01-01 UTC"
    case .eventsFired:
      "Events fired since the daemon started, by kind (reminder, milestone, grace-started, expiry, follow-up, paused, resumed)"
    case .eventsSkipped: "Events recorded as skipped since the daemon started, by reason"
    case .eventsFiredLate:
      "Events fired since the daemon started later than the catch-up policy's late threshold "
        + "(after downtime, a suspend or a clock step)"
    case .latenessBucket:
      "Events the timer fired since the daemon started, by how late after they fell due "
        + "(field le: at most this many seconds)"
    case .latenessSum: "The sum of those events' lateness, in seconds"
    case .latenessCount: "Events the timer fired since the daemon started"
    case .eventsLogged:
      "Events in the event log's history: the newest one's sequence number, kept by the store across restarts"
    case .journalHeld:
      "Events held back from the journal (journald's rate limit, or a failing sink), kept in the store's outbox"
    case .consumerPosition:
      "The sequence number of the last event each consumer acknowledged (field consumer)"
    case .consumerLag: "Events logged after each consumer's position (field consumer)"
    case .commitBucket:
      "Write transactions since the daemon started, by how long they took (field le: at most this many seconds)"
    case .commitSum: "The time those transactions took, in seconds"
    case .commitCount: "Write transactions since the daemon started"
    case .storeFile: "The size of the store's file, in bytes"
    case .storeFree: "Bytes in the store's file free for reuse"
    case .storeRefusedWrites:
      "Writes the store refused since the daemon started, by reason (field reason: disk-full, io-error, "
        + "database-unreachable, database-read-only)"
    case .controlCalls: "Calls answered since the daemon started, by method (field method)"
    case .controlErrors:
      "Calls answered with an error since the daemon started, by method (field method; methods that had one)"
    case .connections: "Open connections to the daemon's sockets"
    case .refusedConnections: "Connections refused since the daemon started: too many at once"
    case .fleetShards: "Shards this fleet node owns"
    case .fleetNodesAlive: "Nodes of the fleet whose lease is current, this one included"
    case .fleetRenewals: "Leases this fleet node renewed since it started"
    case .fleetLosses: "Times since it started this fleet node let go of its shards because its lease ran out"
    case .webhookDeliveries:
      "Attempts to deliver events to each webhook endpoint since the daemon started (field endpoint), by "
        + "outcome: delivered (2xx), rejected (any other status) or unanswered (no connection, a timeout)"
    case .webhookBacklog: "Events each webhook endpoint holds that wait to be delivered (field endpoint)"
    case .webhookOldestPending:
      "How long the oldest event waiting for each webhook endpoint has waited since it was taken, in seconds "
        + "(field endpoint; absent when none waits)"
    case .webhookDisabled:
      "1 for each webhook endpoint disabled (a 410 Gone, or failing for DisableAfter=), else 0 (field endpoint)"
    case .webhookSender:
      "1 while a webhook sender (trialwatch-webhooks) is attached, else 0; present when endpoints are configured"
    case .extensionsRefused:
      "Extensions refused since the daemon started by a limit of their trial's plan (field limit: "
        + "max-extensions for MaxExtensions=, max-length for MaxLength=)"
    }
  }

  /// The family of a full name, or nil.
  public init?(name: String) {
    guard name.hasPrefix(SystemdMetrics.prefix) else { return nil }
    self.init(rawValue: String(name.dropFirst(SystemdMetrics.prefix.count)))
  }

  public var reply: MetricFamilyReply { MetricFamilyReply(name: name, description: description, type: type) }
}
