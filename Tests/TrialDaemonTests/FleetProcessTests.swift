import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// trialwatchd as a fleet node on the tests' private PostgreSQL: its configuration check,
/// its start and stop, its fleet status.
@Suite struct FleetProcessTests {
  static func config(_ connection: String, node: String = "node-a") -> String {
    "[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=\(connection)\nNodeName=\(node)\nShards=8\n"
  }

  @Test func checkConfig_OfAFleetNode_ConnectsAndReportsTheSchema() throws {
    let server = try PostgresServer.shared()
    let daemon = try DaemonProcess(
      config: Self.config(server.conninfo(database: try server.createDatabase())),
      arguments: ["--check-config"])
    let (status, output) = try daemon.run()
    #expect(status == 0)
    #expect(output.contains("PostgreSQL: connected as node node-a; no trialwatch schema yet"))
  }

  @Test func checkConfig_WithAWrongPassword_FailsNamingTheAuthentication() throws {
    let server = try PostgresServer.shared()
    // The password comes from libpq's environment, never from the file.
    let daemon = try DaemonProcess(
      config: Self.config(server.conninfo(user: "pwuser")), environment: ["PGPASSWORD": "wrong"],
      arguments: ["--check-config"])
    let (status, output) = try daemon.run()
    #expect(status == 1)
    #expect(output.contains("error: PostgreSQL ([PostgreSQL] Connection=)"))
    #expect(output.contains("password authentication failed"))
  }

  /// libpq is opened at the first connection: on a host without it, a fleet node's check
  /// fails naming the library and its package. The host's libpq is hidden from the daemon by an
  /// empty file mounted over it in a mount namespace of its own (root only).
  @Test(.enabled(if: getuid() == 0, "mounts in a namespace of its own"))
  func checkConfig_WithoutLibpq_FailsNamingTheLibraryAndItsPackage() throws {
    let scratch = try TemporaryDirectory("no-libpq")
    let library = try #require(
      [
        "/usr/lib/x86_64-linux-gnu/libpq.so.5", "/usr/lib/aarch64-linux-gnu/libpq.so.5",
        "/usr/lib/libpq.so.5",
      ]
      .first { FileManager.default.fileExists(atPath: $0) }.map {
        URL(fileURLWithPath: $0).resolvingSymlinksInPath().path
      })
    let empty = scratch.appending("empty")
    let config = scratch.appending("trialwatch.conf")
    try Data().write(to: URL(fileURLWithPath: empty))
    try Self.config("host=\(scratch.path) dbname=trialwatch").write(
      toFile: config, atomically: true, encoding: .utf8)
    let daemon = BuiltProducts.path("trialwatchd")
    let script = "mount --bind \"$1\" \"$2\" && exec \"$3\" --config \"$4\" --state-dir \"$5\" --check-config"
    let result = try ChildProcess.run(
      .path("/usr/bin/unshare"),
      ["--mount", "sh", "-c", script, "sh", empty, library, daemon, config, scratch.appending("state")])
    #expect(result.status.code == 1)
    #expect(
      result.output.contains(
        "error: PostgreSQL ([PostgreSQL] Connection=): could not connect: PostgreSQL's client library cannot be loaded (Debian package libpq5): "
      ), "\(result.output)\(result.errors)")
  }

  @Test func unreachableDatabase_FailsToStart_WithoutReady() throws {
    let empty = try TemporaryDirectory("no-server")
    let daemon = try DaemonProcess(config: Self.config("host=\(empty.path) dbname=trialwatch user=nobody"))
    try daemon.start()
    let failure = try #require(daemon.notify.waitFor { $0.contains("ERRNO=") }.found)
    #expect(failure.contains("cannot join the fleet on PostgreSQL"))
    #expect(!failure.contains("READY=1"))
    #expect(daemon.waitForExit() == 1)
  }

  /// A node reads the shared log only while a Watch runs on it: one started without `after`
  /// begins at the log's newest event, whatever the node skipped before, and then streams what
  /// every node logs.
  @Test func watch_OnANodeThatReadNoLogWhileUnwatched_StartsAtTheNewestAndStreamsOtherNodes() throws {
    let server = try PostgresServer.shared()
    let connection = server.conninfo(database: try server.createDatabase())
    let a = try DaemonProcess(config: Self.config(connection, node: "node-a"))
    try a.start()
    #expect(a.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let b = try DaemonProcess(config: Self.config(connection, node: "node-b"))
    try b.start()
    #expect(b.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let onA = try VarlinkClient(path: a.socketPath)
    // A reminder already due when its trial starts is logged as skipped at once.
    let due = try ReminderSchedule([.hours(2)])
    _ = try onA.startTrial(StartTrialParameters(subject: "before", duration: .hours(1), reminders: due))
    var subjects: [String?] = []
    let watch = try VarlinkClient(path: b.socketPath, timeout: 30)
    try watch.stream(Trials.watch, WatchParameters()) { reply in
      guard let event = reply.event else {
        // In place: what node-a logs from now on must reach this Watch on node-b.
        _ = try onA.startTrial(
          StartTrialParameters(subject: "after", duration: .hours(1), reminders: due))
        return true
      }
      subjects.append(event.subject)
      return false
    }
    #expect(subjects == ["after"])
    for daemon in [a, b] {
      daemon.signal(SIGTERM)
      #expect(daemon.waitForExit() == 0)
    }
  }

  /// A commit whose connection is lost may go through all the same (a PostgreSQL failover):
  /// the node took its events for failed, and they are in the ledger, undelivered, as this node's.
  /// When it reconnects, it delivers them.
  @Test func ownUndeliveredEntry_AfterAReconnect_IsDelivered() throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase()
    let daemon = try DaemonProcess(config: Self.config(server.conninfo(database: database)))
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let client = try VarlinkClient(path: daemon.socketPath)
    let trial = try client.startTrial(
      StartTrialParameters(
        subject: "acme-1", duration: .hours(1), reminders: try ReminderSchedule([.minutes(30)])))
    let event = EventID(
      trialID: trial.id, revision: trial.revision, kind: .reminder(before: .milliseconds(1_800_000)))
    // The reminder, recorded as node-a takes it, by a commit whose reply never came.
    _ = try server.psql(
      """
      INSERT INTO trialwatch.ledger (trial_id, revision, offset_ms, event_id, shard, kind, outcome, due_s,
        taken_s, late, node, epoch)
      SELECT t.trial_id, t.revision, 1800000, '\(event)', t.shard, 'reminder', 'fired', t.end_s - 1800,
        t.end_s - 1800, false, 'node-a', s.epoch
      FROM trialwatch.trial t JOIN trialwatch.shard s ON s.shard = t.shard WHERE t.subject = 'acme-1'
      """, database: database)
    // Every session of the node ends, as when the primary goes away.
    _ = try server.psql(
      """
      SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
      WHERE datname = '\(database)' AND pid <> pg_backend_pid()
      """, database: database)
    let delivered = try waitUntil(interval: .milliseconds(50)) {
      try server.psql(
        "SELECT delivered_s IS NOT NULL FROM trialwatch.ledger WHERE event_id = '\(event)'",
        database: database
      ).contains("t")
    }
    #expect(delivered, "\(event) is not delivered after the node reconnected: \(daemon.standardError)")
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  @Test func fleetNode_StartsAnswersAndHandsItsShardsBackOnStop() throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase()
    let daemon = try DaemonProcess(config: Self.config(server.conninfo(database: database)))
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let client = try VarlinkClient(path: daemon.socketPath)
    let fleet = try #require(try client.call(Trials.getFleet).fleet)
    #expect(fleet.node == "node-a" && fleet.shards == Array(0..<8) && fleet.shardCount == 8)
    #expect(fleet.nodes.map(\.name) == ["node-a"])
    #expect(daemon.mappedLibraries.contains { $0.hasPrefix("libpq.so.5") }, "a fleet node loads libpq")
    let trial = try client.startTrial(StartTrialParameters(subject: "acme-1"))
    #expect(try client.getTrial(GetTrialParameters(subject: "acme-1")).id == trial.id)
    #expect(try client.getStatus().fleet?.node == "node-a")
    // The node owns every shard: its planner holds the trial, next due in 2 days (a reminder).
    let outlook = try client.call(
      Trials.getOutlook,
      GetOutlookParameters(within: [try GivenSpan(parsing: "1h"), try GivenSpan(parsing: "7d")]))
    #expect(outlook.windows == [DueWithin(within: "1h", trials: 0), DueWithin(within: "7d", trials: 1)])
    // Its metrics: the shards it owns were claimed in a round that renewed its lease first.
    var metrics: [String: MetricValue] = [:]
    try client.stream(SystemdMetrics.list, MetricsParameters()) { reply in
      metrics[reply.name] = reply.value
      return true
    }
    #expect(metrics["io.trialwatch.fleet_shards_owned"] == .integer(8))
    #expect(metrics["io.trialwatch.fleet_nodes_alive"] == .integer(1))
    #expect(metrics["io.trialwatch.fleet_lease_losses"] == .integer(0))
    if case .integer(let renewals)? = metrics["io.trialwatch.fleet_lease_renewals"] {
      #expect(renewals >= 1)
    } else {
      Issue.record("no fleet_lease_renewals: \(metrics)")
    }
    #expect(metrics["io.trialwatch.store_file_bytes"] == nil, "a database, not a file")
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    let owners = try server.psql(
      "SELECT count(*) FROM trialwatch.shard WHERE owner IS NOT NULL", database: database)
    #expect(owners.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("0"))
  }
}
