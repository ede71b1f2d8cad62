import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting

@testable import TrialCtl

/// trialwatchctl metrics against the real daemon: the table, JSON, the Prometheus exposition
/// written atomically and checked by promtool (Debian's prometheus package), the report socket
/// the daemon binds with MetricsSocket=, and bad requests.
@Suite struct MetricsEndToEndTests {
  /// promtool, which make deps installs; a test that needs it fails without it.
  static let promtool = "/usr/bin/promtool"

  @Test func metrics_OfARealDaemon_ReadAsTableJSONAndPrometheusText() throws {
    let report = try TemporaryDirectory("report")
    let reportPath = report.appending("io.trialwatch")
    let daemon = try DaemonProcess(config: "[Daemon]\nMetricsSocket=\(reportPath)\n")
    let env = try daemon.startReady()
    #expect(try Ctl.run(["start", "acme-1", "--duration", "10d"], environment: env).status == 0)
    #expect(try Ctl.run(["start", "acme-1", "--duration", "10d"], environment: env).status == 1)

    let table = try Ctl.run(["metrics"], environment: env)
    #expect(table.status == 0, "\(table.errors)")
    let rows = table.output.split(separator: "\n").map {
      $0.split(separator: " ", omittingEmptySubsequences: true)
    }
    #expect(rows.first == ["METRIC", "FIELDS", "VALUE"])
    #expect(rows.contains(["trials", "state=active", "1"]), "\(table.output)")
    #expect(
      rows.contains(["control_errors", "method=io.trialwatch.Trials.StartTrial", "1"]), "\(table.output)")
    #expect(rows.contains(["build_info", "-", Substring(Daemon.version)]), "\(table.output)")

    let json = try Ctl.run(["metrics", "trials", "io.trialwatch.pending_events", "--json"], environment: env)
    let lines = json.output.split(separator: "\n")
    #expect(lines.count == TrialState.allCases.count + 1, "\(json.output)")
    let decoded = try lines.map { try WireCoding.makeDecoder().decode(MetricReply.self, from: Data($0.utf8)) }
    #expect(decoded.contains(MetricReply(name: "io.trialwatch.pending_events", value: .integer(3))))

    let described = try Ctl.run(["metrics", "--describe"], environment: env)
    #expect(
      described.lines.contains {
        $0.split(separator: " ").prefix(2) == ["fire_lateness_seconds_bucket", "counter"]
      },
      "\(described.output)")

    // The textfile collector's file: replaced whole, readable by another user, clean to promtool.
    let file = report.appending("trialwatch.prom")
    try "stale".write(toFile: file, atomically: false, encoding: .utf8)
    let written = try Ctl.run(["metrics", "--prometheus", "--output", file], environment: env)
    #expect(written.status == 0 && written.output.isEmpty, "\(written.errors)")
    let text = try String(contentsOfFile: file, encoding: .utf8)
    #expect(text.contains("\n# TYPE trialwatch_events_fired_total counter\n"))
    #expect(text.contains("\ntrialwatch_trials{state=\"active\"} 1\n"))
    #expect(text.contains("\n# TYPE trialwatch_fire_lateness_seconds histogram\n"))
    #expect(text.contains("\ntrialwatch_build_info{version=\"\(Daemon.version)\"} 1\n"))
    let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
    #expect(mode == 0o644)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: report.path).sorted() == [
        "io.trialwatch", "trialwatch.prom",
      ])
    #expect(
      FileManager.default.isExecutableFile(atPath: Self.promtool), "promtool: make deps installs prometheus")
    let check = try ChildProcess.run(.path(Self.promtool), ["check", "metrics"], input: text)
    #expect(
      check.status.code == 0 && check.errors.isEmpty && check.output.isEmpty, "\(check.output)\(check.errors)"
    )

    // The report socket serves the metrics, and nothing else.
    let client = try VarlinkClient(path: reportPath, timeout: 10)
    #expect(try client.getInfo().interfaces == VarlinkInterfaces.report)
    var names: [String] = []
    try client.stream(SystemdMetrics.list, MetricsParameters()) { reply in
      names.append(reply.name)
      return true
    }
    #expect(names.contains("io.trialwatch.trials") && names.contains("io.trialwatch.control_calls"))
    let trials = try #require(throws: VarlinkClientError.self) { try client.call(Trials.getStatus) }
    #expect(trials.remoteError?.name == ControlError.Name.interfaceNotFound)

    // Bad requests: named, with the exit status of their kind.
    let unknown = try Ctl.run(["metrics", "trials", "nothing"], environment: env)
    #expect(unknown.status == 3 && unknown.errors.contains("\"io.trialwatch.nothing\""), "\(unknown.errors)")
    let both = try Ctl.run(["metrics", "--prometheus", "--json"], environment: env)
    #expect(both.status == 2 && both.errors.contains("--prometheus"), "\(both.errors)")
    let nowhere = try Ctl.run(
      ["metrics", "--prometheus", "--output", "/nonexistent/x.prom"], environment: env)
    #expect(nowhere.status == 1 && nowhere.errors.contains("/nonexistent/x.prom"), "\(nowhere.errors)")
  }

  @Test func prometheusText_OfFamilies_GroupsHistogramsEscapesLabelsAndNamesCounters() {
    let families = [
      MetricFamilyReply(name: "io.trialwatch.build_info", description: "Version", type: .string),
      MetricFamilyReply(name: "io.trialwatch.events_fired", description: "Fired\nby kind", type: .counter),
      MetricFamilyReply(name: "io.trialwatch.lag_seconds_bucket", description: "Lag", type: .counter),
      MetricFamilyReply(name: "io.trialwatch.lag_seconds_sum", description: "Sum", type: .counter),
      MetricFamilyReply(name: "io.trialwatch.lag_seconds_count", description: "Count", type: .counter),
      MetricFamilyReply(name: "io.trialwatch.consumer_lag_events", description: "Lag", type: .gauge),
      MetricFamilyReply(name: "io.trialwatch.fleet_shards_owned", description: "None here", type: .gauge),
    ]
    let metrics = [
      MetricReply(name: "io.trialwatch.build_info", value: .text("1.0")),
      MetricReply(name: "io.trialwatch.events_fired", value: .integer(2), fields: ["kind": "expiry"]),
      MetricReply(name: "io.trialwatch.lag_seconds_bucket", value: .integer(1), fields: ["le": "0.5"]),
      MetricReply(name: "io.trialwatch.lag_seconds_bucket", value: .integer(3), fields: ["le": "+Inf"]),
      MetricReply(name: "io.trialwatch.lag_seconds_sum", value: .number(2.25)),
      MetricReply(name: "io.trialwatch.lag_seconds_count", value: .integer(3)),
      MetricReply(
        name: "io.trialwatch.consumer_lag_events", value: .integer(4), fields: ["consumer": "a\"b\\c\nd"]),
    ]
    #expect(
      PrometheusText.render(families: families, metrics: metrics) == """
        # HELP trialwatch_build_info Version
        # TYPE trialwatch_build_info gauge
        trialwatch_build_info{version="1.0"} 1
        # HELP trialwatch_events_fired_total Fired\\nby kind
        # TYPE trialwatch_events_fired_total counter
        trialwatch_events_fired_total{kind="expiry"} 2
        # HELP trialwatch_lag_seconds Lag
        # TYPE trialwatch_lag_seconds histogram
        trialwatch_lag_seconds_bucket{le="0.5"} 1
        trialwatch_lag_seconds_bucket{le="+Inf"} 3
        trialwatch_lag_seconds_sum 2.25
        trialwatch_lag_seconds_count 3
        # HELP trialwatch_consumer_lag_events Lag
        # TYPE trialwatch_consumer_lag_events gauge
        trialwatch_consumer_lag_events{consumer="a\\"b\\\\c\\nd"} 4

        """)
  }
}
