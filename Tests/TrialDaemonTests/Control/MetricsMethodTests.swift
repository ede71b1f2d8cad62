import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon
@testable import TrialEngine

/// `io.systemd.Metrics` through a real socket, on every store, in virtual time: what the
/// metrics say equals what the test did (trials started, paused and ended, events fired on
/// time and late, a consumer's position), the families named in a filter, refusals, and a
/// number of metrics that does not grow with trials.
@Suite struct MetricsMethodTests {
  static let day: TimeInterval = 86_400

  /// Every metric List gives (for `names`), by name and fields.
  static func list(_ client: VarlinkClient, _ names: [String]? = nil) throws -> [String: MetricValue] {
    var all: [String: MetricValue] = [:]
    try client.stream(SystemdMetrics.list, MetricsParameters(names: names)) { reply in
      let fields = (reply.fields ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
      let key = fields.isEmpty ? reply.name : "\(reply.name){\(fields.joined(separator: ","))}"
      #expect(all[key] == nil, "one metric per name and fields: \(key)")
      all[key] = reply.value
      return true
    }
    return all
  }

  static func integer(_ value: MetricValue?) -> Int64? {
    if case .integer(let number)? = value { number } else { nil }
  }

  @Test(arguments: StoreKind.allCases)
  func list_OfWhatTheTestDid_CountsItAsItHappened(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let engine = fixture.engine
    let plans = [
      "pro": TrialPlan(name: "pro", length: .days(14), reminders: try ReminderSchedule([.days(7)])),
      "basic": TrialPlan(name: "basic", length: .days(7), reminders: .none),
    ]
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: plans)) }
    let client = try fixture.client()
    _ = try client.call(Trials.createConsumer, CreateConsumerParameters(name: "mail", after: .origin))
    var pro: [TrialID] = []
    var basic: [TrialID] = []
    for index in 0..<20 {
      pro.append(try client.startTrial(StartTrialParameters(subject: "p\(index)", plan: "pro")).id)
    }
    for index in 0..<10 {
      basic.append(try client.startTrial(StartTrialParameters(subject: "b\(index)", plan: "basic")).id)
    }
    for id in pro.prefix(3) { _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(id))) }
    for id in basic.prefix(2) { _ = try client.endTrial(EndTrialParameters(id: id, outcome: .converted)) }
    let refused = remoteError { _ = try client.startTrial(StartTrialParameters(subject: "x", plan: "gold")) }
    #expect(refused?.name == ControlError.Name.planNotFound)

    // Day 7: the basic trials expire and the active pro trials' reminders fire, on time.
    fixture.advance(by: 7 * Self.day)
    var metrics = try Self.list(client)
    #expect(metrics["io.trialwatch.build_info"] == .text("1.2.3-test"))
    #expect(Self.integer(metrics["io.trialwatch.trials{state=active}"]) == 17)
    #expect(Self.integer(metrics["io.trialwatch.trials{state=paused}"]) == 3)
    #expect(Self.integer(metrics["io.trialwatch.trials{state=expired}"]) == 8)
    #expect(Self.integer(metrics["io.trialwatch.trials{state=converted}"]) == 2)
    #expect(Self.integer(metrics["io.trialwatch.trials_by_plan{plan=pro}"]) == 17)
    #expect(Self.integer(metrics["io.trialwatch.trials_by_plan{plan=basic}"]) == 0)
    #expect(Self.integer(metrics["io.trialwatch.events_fired{kind=reminder}"]) == 17)
    #expect(Self.integer(metrics["io.trialwatch.events_fired{kind=expiry}"]) == 8)
    #expect(Self.integer(metrics["io.trialwatch.events_fired{kind=paused}"]) == 3)
    #expect(Self.integer(metrics["io.trialwatch.events_fired_late"]) == 0)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_count"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_bucket{le=0.01}"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_bucket{le=+Inf}"]) == 25)
    // 3 pauses, 17 reminders, 8 expiries logged; the conversions are not events.
    #expect(Self.integer(metrics["io.trialwatch.events_logged"]) == 28)
    #expect(Self.integer(metrics["io.trialwatch.consumer_position{consumer=mail}"]) == 0)
    #expect(Self.integer(metrics["io.trialwatch.consumer_lag_events{consumer=mail}"]) == 28)
    #expect(Self.integer(metrics["io.trialwatch.pending_events"]) == 17)
    #expect(
      Self.integer(metrics["io.trialwatch.control_calls{method=io.trialwatch.Trials.StartTrial}"]) == 31)
    #expect(
      Self.integer(metrics["io.trialwatch.control_errors{method=io.trialwatch.Trials.StartTrial}"]) == 1)
    #expect(metrics["io.trialwatch.control_errors{method=io.trialwatch.Trials.PauseTrial}"] == nil)
    #expect(Self.integer(metrics["io.trialwatch.control_connections"]) == 1)
    #expect(metrics["io.trialwatch.fleet_shards_owned"] == nil, "no fleet")
    if store == .lmdb {
      let file = try #require(Self.integer(metrics["io.trialwatch.store_file_bytes"]))
      let free = try #require(Self.integer(metrics["io.trialwatch.store_free_bytes"]))
      #expect(file > 0 && free >= 0 && free < file)
    } else {
      #expect(metrics["io.trialwatch.store_file_bytes"] == nil)
    }

    // The consumer acknowledges; the daemon is down for a day past the pro trials' end: their
    // expiries fire a day late, counted late and in the last bounded bucket.
    _ = try client.call(
      Trials.acknowledgeEvent, AcknowledgeEventParameters(consumer: "mail", cursor: EventCursor(20)))
    engine.jump(by: 8 * Self.day)
    _ = fixture.fireDue()
    metrics = try Self.list(client)
    #expect(Self.integer(metrics["io.trialwatch.events_fired{kind=expiry}"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.events_fired_late"]) == 17)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_bucket{le=1}"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_bucket{le=3600}"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.fire_lateness_seconds_bucket{le=86400}"]) == 42)
    #expect(Self.integer(metrics["io.trialwatch.trials_by_plan{plan=pro}"]) == 0)
    #expect(Self.integer(metrics["io.trialwatch.trials{state=expired}"]) == 25)
    #expect(Self.integer(metrics["io.trialwatch.consumer_position{consumer=mail}"]) == 20)
    #expect(Self.integer(metrics["io.trialwatch.consumer_lag_events{consumer=mail}"]) == 25)
    #expect(metrics["io.trialwatch.next_event_timestamp_seconds"] == nil, "nothing left to fire but resumes")

    // Two hundred more trials of the same plans: not one metric more.
    let before = metrics.count
    for index in 0..<200 {
      _ = try client.startTrial(
        StartTrialParameters(subject: "more-\(index)", plan: index % 2 == 0 ? "pro" : "basic"))
    }
    metrics = try Self.list(client)
    #expect(metrics.count == before + 1, "only next_event_timestamp_seconds appears")
    #expect(Self.integer(metrics["io.trialwatch.trials_by_plan{plan=basic}"]) == 100)
  }

  /// A restarted engine counts the trials by plan from the store's cohorts, as the first did
  /// as it changed them.
  @Test(arguments: [StoreKind.memory, .lmdb])
  func trialsByPlan_AfterARestart_AreTheSame(store: StoreKind) throws {
    let scratch = try TemporaryDirectory("metrics-restart")
    let repository: any TrialRepository =
      store == .lmdb
      ? try LMDBTrialRepository(directory: scratch.appending("store")) : InMemoryTrialRepository()
    let plans = [
      "pro": TrialPlan(name: "pro", length: .days(14), reminders: .none),
      "basic": TrialPlan(name: "basic", length: .days(7), reminders: .none),
    ]
    var before: [String: MetricValue] = [:]
    do {
      let fixture = try ControlFixture(repository: repository)
      let engine = fixture.engine
      engine.queue.sync { engine.engine.reload(EngineSettings(plans: plans)) }
      let client = try fixture.client()
      var ids: [TrialID] = []
      for index in 0..<8 {
        let plan = index < 5 ? "pro" : "basic"
        ids.append(try client.startTrial(StartTrialParameters(subject: "s\(index)", plan: plan)).id)
      }
      _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(ids[0])))
      _ = try client.endTrial(EndTrialParameters(id: ids[7], outcome: .cancelled))
      before = try Self.list(client, ["io.trialwatch.trials_by_plan"])
      _ = fixture.stop()
    }
    #expect(
      before == [
        "io.trialwatch.trials_by_plan{plan=pro}": .integer(4),
        "io.trialwatch.trials_by_plan{plan=basic}": .integer(2),
      ])
    // The first engine closed its store: the file store is opened again, as by a new daemon.
    let reopened: any TrialRepository =
      store == .lmdb ? try LMDBTrialRepository(directory: scratch.appending("store")) : repository
    let again = try ControlFixture(repository: reopened)
    #expect(try Self.list(try again.client(), ["io.trialwatch.trials_by_plan"]) == before)
  }

  @Test func listAndDescribe_OfFamiliesNamed_GiveThoseOnly() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    let trials = try Self.list(client, ["io.trialwatch.trials", "io.trialwatch.pending_events"])
    #expect(
      Set(trials.keys.map { $0.split(separator: "{")[0] }) == [
        "io.trialwatch.trials", "io.trialwatch.pending_events",
      ])
    #expect(trials.count == TrialState.allCases.count + 1)
    var described: [MetricFamilyReply] = []
    try client.stream(SystemdMetrics.describe, MetricsParameters()) { reply in
      described.append(reply)
      return true
    }
    #expect(described == MetricFamily.allCases.map(\.reply))
    #expect(described.allSatisfy { !$0.description.isEmpty && $0.name.hasPrefix("io.trialwatch.") })

    let unknown = remoteError {
      _ = try Self.list(client, ["io.trialwatch.trials", "io.trialwatch.nothing"])
    }
    #expect(unknown == .noSuchMetric("io.trialwatch.nothing"))
    let foreign = remoteError {
      try client.stream(SystemdMetrics.describe, MetricsParameters(names: ["trials"])) { _ in true }
    }
    #expect(foreign == .noSuchMetric("trials"))
    // A family with no metric now (no fleet): nothing to list is NoSuchMetric, as systemd says.
    let empty = remoteError { _ = try Self.list(client, ["io.trialwatch.fleet_shards_owned"]) }
    #expect(empty == .noSuchMetric(nil))
  }

  @Test func calls_WithoutMoreOrWithUnknownParameters_AreRefused() throws {
    let fixture = try ControlFixture()
    let raw = try fixture.client()
    let single = remoteError { try raw.call("io.systemd.Metrics.List") }
    #expect(single?.name == ControlError.Name.expectedMore)
    try raw.sendBytes(
      Array(#"{"method":"io.systemd.Metrics.Describe","more":true,"parameters":{"pattern":"*"}}"#.utf8) + [0])
    let reply = try raw.receive()
    #expect(reply.error == ControlError.Name.invalidParameter)
    // The connection goes on: several replies, the last without "continues".
    try raw.sendBytes(Array(#"{"method":"io.systemd.Metrics.Describe","more":true}"#.utf8) + [0])
    var replies = [try raw.receive()]
    while replies.last?.continues == true { replies.append(try raw.receive()) }
    #expect(replies.count == MetricFamily.allCases.count)
    let continued = replies.map(\.continues)
    #expect(continued == Array(repeating: true, count: replies.count - 1) + [false])
  }
}

/// What operators read of the metrics stays true to them: docs/monitoring.md names every
/// family with its type, and the example alerting rules pass promtool and name only metrics
/// trialwatchctl writes.
@Suite struct MetricsDocumentTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  @Test func monitoringDocument_NamesEveryFamily_WithItsType() throws {
    let text = try String(contentsOf: Self.root.appendingPathComponent("docs/monitoring.md"), encoding: .utf8)
    for family in MetricFamily.allCases {
      let name = family.rawValue
      for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
        let base = String(name.dropLast(suffix.count))
        #expect(text.contains("| `\(base)` | histogram |"), "\(base)")
      }
      guard !["_bucket", "_sum", "_count"].contains(where: name.hasSuffix) else { continue }
      #expect(text.contains("| `\(name)` | \(family.type.rawValue) |"), "\(name)")
    }
  }

  @Test func exampleAlertingRules_PassPromtool_AndNameTrialwatchMetrics() throws {
    let rules = Self.root.appendingPathComponent("etc/prometheus/trialwatch-alerts.yml").path
    let check = try ChildProcess.run(.path("/usr/bin/promtool"), ["check", "rules", rules])
    #expect(
      check.status.code == 0, "promtool (make deps installs prometheus): \(check.output)\(check.errors)")
    let text = try String(contentsOfFile: rules, encoding: .utf8)
    let named = Set(text.matches(of: /trialwatch_[a-z_]+/).map { String($0.output) })
    let written = Set(
      MetricFamily.allCases.flatMap { family -> [String] in
        let base = "trialwatch_" + family.rawValue
        return family.type == .counter ? [base, base + "_total"] : [base]
      })
    #expect(!named.isEmpty && named.isSubset(of: written), "\(named.subtracting(written))")
  }
}
