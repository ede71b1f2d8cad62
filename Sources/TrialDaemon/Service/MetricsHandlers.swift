import Dispatch
import FoundationEssentials
import TrialControl
import TrialControlServer
import TrialCore
import TrialEngine

/// Where the metrics come from: what the daemon keeps as it works (the engine's snapshot, the
/// servers' counters, the commit lane's durations), and the few records read at each call
/// (consumers, the log's head, the store file's free pages). Nothing here scans trials.
public struct MetricSources: Sendable {
  public var version: String
  public var startedAt: Date
  public var snapshot: @Sendable () -> EngineSnapshot
  /// The consumers and the newest cursor of the log, in one read.
  public var consumers: @Sendable () throws -> ([ConsumerRecord], EventCursor)
  public var held: SharedCount
  public var commits: CommitDurations
  public var counters: ControlCounters
  public var space: @Sendable () -> StoreSpace?
  /// This node's part of a fleet; nil on a single host.
  public var fleet: (any FleetServices)?
  /// Where the webhook endpoints stand, asked of the engine.
  public var webhooks: @Sendable () -> WebhookFigures

  public init(
    version: String, startedAt: Date, snapshot: @escaping @Sendable () -> EngineSnapshot,
    consumers: @escaping @Sendable () throws -> ([ConsumerRecord], EventCursor), held: SharedCount,
    commits: CommitDurations, counters: ControlCounters, space: @escaping @Sendable () -> StoreSpace?,
    fleet: (any FleetServices)?, webhooks: @escaping @Sendable () -> WebhookFigures = { WebhookFigures() }
  ) {
    self.version = version
    self.startedAt = startedAt
    self.snapshot = snapshot
    self.consumers = consumers
    self.held = held
    self.commits = commits
    self.counters = counters
    self.space = space
    self.fleet = fleet
    self.webhooks = webhooks
  }
}

/// The handlers of `io.systemd.Metrics`, on the control socket and the report socket.
public struct MetricsHandlers: Sendable {
  let sources: MetricSources

  public init(sources: MetricSources) {
    self.sources = sources
  }

  /// The metrics of the daemon whose trials `handlers` serve: `engine` runs on `queue`.
  public init(
    handlers: TrialsHandlers, engine: Engine, queue: DispatchQueue,
    space: @escaping @Sendable () -> StoreSpace?,
    fleet: (any FleetServices)?
  ) {
    let snapshots = handlers.snapshots
    let queries = handlers.queries
    let bound = EngineOnQueue(engine: engine)
    let (held, commits) = queue.sync { (bound.engine.heldGauge, bound.engine.commits.durations) }
    self.init(
      sources: MetricSources(
        version: handlers.version, startedAt: handlers.startedAt, snapshot: { snapshots.current },
        consumers: { try queries.consumers() }, held: held, commits: commits, counters: handlers.counters,
        space: space, fleet: fleet, webhooks: { queue.sync { bound.engine.webhooks.figures() } }))
  }

  /// The engine, carried to its queue.
  private struct EngineOnQueue: @unchecked Sendable { let engine: Engine }

  public var routes: [Route] {
    [
      Route(replies: SystemdMetrics.list) { p, done in
        done(Result { () throws(ControlError) in try list(Self.families(p.names)) })
      },
      Route(replies: SystemdMetrics.describe) { p, done in
        done(Result { () throws(ControlError) in try Self.families(p.names).map(\.reply) })
      },
    ]
  }

  /// The families named, in the catalogue's order; every one for nil.
  static func families(_ names: [String]?) throws(ControlError) -> [MetricFamily] {
    guard let names else { return MetricFamily.allCases }
    var wanted = Set<MetricFamily>()
    for name in names {
      guard let family = MetricFamily(name: name) else { throw .noSuchMetric(name) }
      wanted.insert(family)
    }
    return MetricFamily.allCases.filter(wanted.contains)
  }

  /// Every metric of `families`; `NoSuchMetric` when there is none (as systemd answers a List
  /// that found nothing).
  func list(_ families: [MetricFamily]) throws(ControlError) -> [MetricReply] {
    let snapshot = sources.snapshot()
    var out: [MetricReply] = []
    out.reserveCapacity(64)
    var consumers: ([ConsumerRecord], EventCursor)?
    func readConsumers() throws(ControlError) -> ([ConsumerRecord], EventCursor) {
      if let consumers { return consumers }
      do {
        let read = try sources.consumers()
        consumers = read
        return read
      } catch {
        throw ControlError(answering: error)
      }
    }
    var webhooks: WebhookFigures?
    func figures() -> WebhookFigures {
      if let webhooks { return webhooks }
      let read = sources.webhooks()
      webhooks = read
      return read
    }
    for family in families {
      func add(_ value: MetricValue, _ fields: [String: String]? = nil) {
        out.append(MetricReply(name: family.name, value: value, fields: fields))
      }
      func add(_ value: Int, _ fields: [String: String]? = nil) { add(.integer(Int64(value)), fields) }
      switch family {
      case .buildInfo: add(.text(sources.version))
      case .startTime: add(.number(Self.seconds(sources.startedAt)))
      case .trials:
        for state in TrialState.allCases {
          add(snapshot.counts[state, default: 0], ["state": state.rawValue])
        }
      case .trialsByPlan:
        for (plan, counts) in snapshot.openByPlan.plans.sorted(by: { $0.key < $1.key }) {
          add(.integer(counts.active), ["plan": plan])
        }
      case .pendingEvents: add(snapshot.pendingEvents)
      case .nextEvent:
        if let next = snapshot.nextEvent { add(.number(Self.seconds(next.due))) }
      case .eventsFired:
        for kind in EventTally.kinds { add(.integer(snapshot.tally.fired[kind, default: 0]), ["kind": kind]) }
      case .eventsSkipped:
        for (reason, count) in snapshot.tally.skipped.sorted(by: { $0.key < $1.key }) {
          add(.integer(count), ["reason": reason])
        }
      case .eventsFiredLate: add(.integer(snapshot.tally.late))
      case .latenessBucket: Self.buckets(snapshot.tally.lateness, add)
      case .latenessSum: add(.number(snapshot.tally.lateness.sum))
      case .latenessCount: add(.integer(snapshot.tally.lateness.count))
      case .eventsLogged: add(.integer(Int64(clamping: try readConsumers().1.sequence)))
      case .journalHeld: add(sources.held.current)
      case .consumerPosition, .consumerLag:
        let (records, last) = try readConsumers()
        for record in records {
          let value =
            family == .consumerLag
            ? ConsumerObject(record, last: last).lag : Int(clamping: record.acknowledged.sequence)
          add(value, ["consumer": record.name])
        }
      case .commitBucket: Self.buckets(sources.commits.current, add)
      case .commitSum: add(.number(sources.commits.current.sum))
      case .commitCount: add(.integer(sources.commits.current.count))
      case .storeFile: if let space = sources.space() { add(space.fileBytes) }
      case .storeFree: if let space = sources.space() { add(space.freeBytes) }
      case .storeRefusedWrites:
        for reason in StoreFaultReason.allCases {
          add(snapshot.refusedWrites[reason, default: 0], ["reason": reason.rawValue])
        }
      case .controlCalls:
        for tally in sources.counters.calls { add(tally.calls, ["method": tally.method]) }
      case .controlErrors:
        // Only the methods that failed: an error count is what alerts read, and absent is none.
        for tally in sources.counters.calls where tally.errors > 0 {
          add(tally.errors, ["method": tally.method])
        }
      case .connections: add(sources.counters.connections)
      case .refusedConnections: add(sources.counters.refused)
      case .fleetShards: if let fleet = sources.fleet { add(fleet.ownedShards.count) }
      case .fleetNodesAlive: if let fleet = sources.fleet { add(fleet.members.count(where: \.alive)) }
      case .fleetRenewals: if let fleet = sources.fleet { add(fleet.renewals) }
      case .fleetLosses: if let fleet = sources.fleet { add(fleet.leaseLosses) }
      case .webhookDeliveries:
        let figures = figures()
        for status in figures.statuses {
          let name = status.endpoint.name
          for outcome in WebhookAttempt.outcomeClasses {
            add(figures.outcomes[name]?[outcome] ?? 0, ["endpoint": name, "outcome": outcome])
          }
        }
      case .webhookBacklog:
        for status in figures().statuses { add(status.backlog, ["endpoint": status.endpoint.name]) }
      case .webhookOldestPending:
        let figures = figures()
        for status in figures.statuses {
          guard let taken = status.oldestTakenAt else { continue }
          let age = max(0, figures.now.timeIntervalSince(taken))
          add(.number((age * 1000).rounded() / 1000), ["endpoint": status.endpoint.name])
        }
      case .webhookDisabled:
        for status in figures().statuses {
          add(status.state?.health.disabled == nil ? 0 : 1, ["endpoint": status.endpoint.name])
        }
      case .webhookSender:
        let figures = figures()
        if !figures.statuses.isEmpty { add(figures.attached ? 1 : 0) }
      case .extensionsRefused:
        let refused = sources.counters.extensionsRefused
        for limit in ExtensionRefusal.Limit.allCases {
          add(refused[limit.rawValue, default: 0], ["limit": limit.rawValue])
        }
      }
    }
    guard !out.isEmpty else { throw .noSuchMetric(nil) }
    return out
  }

  /// A histogram's cumulative buckets, as Prometheus's `le` (the last `+Inf`).
  private static func buckets(_ histogram: Histogram, _ add: (MetricValue, [String: String]?) -> Void) {
    for (bound, count) in histogram.cumulative {
      add(.integer(count), ["le": bound.isFinite ? MetricValue.number(bound).description : "+Inf"])
    }
  }

  private static func seconds(_ date: Date) -> Double {
    (date.timeIntervalSince1970 * 1000).rounded() / 1000
  }
}
