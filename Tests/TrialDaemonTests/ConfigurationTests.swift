import Foundation
import Logging
import Systemd
import TestSupport
import Testing
import TrialCore

@testable import TrialConfiguration
@testable import TrialDaemon

@Suite struct ConfigurationLoadingTests {
  @Test func load_WithoutFiles_GivesTheDefaults() {
    let fixture = ConfigurationFixture()
    let loaded = fixture.load()
    #expect(loaded.configuration == defaults)
    #expect(loaded.diagnostics.isEmpty)
    #expect(loaded.files.isEmpty)
    #expect(loaded.checkReport == ConfigurationReport(text: "configuration OK\n", exitCode: 0))
  }

  @Test func defaults_AreTheDocumentedOnes() throws {
    #expect(defaults.defaultLength == .days(5))
    #expect(defaults.defaultReminders == ReminderSchedule.default)
    #expect(defaults.defaultReminders.offsets == [.days(3), .days(1)])
    #expect(
      defaults.catchUp == CatchUpPolicy(reminders: .latest, grace: .hours(1), lateThreshold: .seconds(1)))
    #expect(defaults.stateDirectory == "/var/lib/trialwatch")
    #expect(defaults.socketPath == "/run/trialwatch/io.trialwatch")
    #expect(defaults.socketGroup == "trialwatch")
    #expect(defaults.controlGroup == "trialwatch-admin")
    #expect(defaults.maxConnections == 4096)
    #expect(defaults.maxConnectionsPerUser == 1024)
    #expect(defaults.reservedConnections == 64)
    #expect(defaults.idleTimeout == .minutes(5))
    #expect(defaults.messageTimeout == .seconds(10))
    #expect(defaults.logLevel == .info)
    #expect(defaults.logTarget == .auto)
    #expect(defaults.journalRateLimitInterval == .seconds(30))
    #expect(defaults.journalRateLimitBurst == 9000)
    #expect(defaults.journalRateLimit == JournalPace.Limit(interval: .seconds(30), burst: 9000))
    #expect(defaults.trialRetention == nil)
    #expect(defaults.storeBackend == .lmdb)
    #expect(defaults.postgreSQL == nil)
  }

  @Test func stateDirectory_ByDefault_IsSystemdsStateDirectory() {
    #expect(
      DaemonConfiguration(environment: ["STATE_DIRECTORY": "/var/lib/trialwatch-a:/var/lib/b"]).stateDirectory
        == "/var/lib/trialwatch-a")
    #expect(
      DaemonConfiguration(environment: ["STATE_DIRECTORY": "relative"]).stateDirectory
        == "/var/lib/trialwatch")
    // An empty assignment resets to the same default.
    let fixture = ConfigurationFixture(main: "[Daemon]\nStateDirectory=/srv/x\nStateDirectory=\n")
    #expect(
      fixture.load(environment: ["STATE_DIRECTORY": "/run/sd"]).configuration.stateDirectory == "/run/sd")
  }

  /// A slash followed by a combining mark is one Character; the path still starts with a slash.
  @Test func absolutePaths_StartingWithASlashAndACombiningMark_AreAbsolute() {
    let loaded = ConfigurationFixture.load("[Daemon]\nStateDirectory=/\u{301}tw\n")
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.stateDirectory == "/\u{301}tw")
    #expect(
      DaemonConfiguration(environment: ["STATE_DIRECTORY": "/\u{301}sd"]).stateDirectory == "/\u{301}sd")
  }

  @Test func load_OfEveryKey_ReadsIt() throws {
    let fixture = ConfigurationFixture()
    fixture.write(
      "trialwatch.conf",
      """
      [Trials]
      DefaultLength=14d
      DefaultReminders=7d, 2d 12h, 90min
      Retention=400d

      [CatchUp]
      LateReminders=skip
      ReminderGrace=30min
      LateThreshold=250ms

      [Daemon]
      StateDirectory=/srv/trialwatch
      Socket=/run/tw/control
      SocketGroup=licensing-readers
      ControlGroup=licensing
      MaxConnections=32
      IdleTimeout=infinity
      LogLevel=debug
      LogTarget=journal

      [Journal]
      RateLimitIntervalSec=1min
      RateLimitBurst=20000
      """)
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    var expected = defaults
    expected.defaultLength = .days(14)
    expected.defaultReminders = try ReminderSchedule([.days(7), .hours(60), .minutes(90)])
    expected.trialRetention = .days(400)
    expected.catchUp = CatchUpPolicy(reminders: .skip, grace: .minutes(30), lateThreshold: .milliseconds(250))
    expected.stateDirectory = "/srv/trialwatch"
    expected.socketPath = "/run/tw/control"
    expected.socketGroup = "licensing-readers"
    expected.controlGroup = "licensing"
    expected.maxConnections = 32
    expected.idleTimeout = nil
    expected.logLevel = .debug
    expected.logTarget = .journal
    expected.journalRateLimitInterval = .seconds(60)
    expected.journalRateLimitBurst = 20000
    #expect(loaded.configuration == expected)
    #expect(loaded.configuration.journalRateLimit == JournalPace.Limit(interval: .seconds(60), burst: 20000))
    #expect(loaded.files == [fixture.main])
  }

  @Test(
    arguments: [
      ("RateLimitBurst=0", nil, nil), ("RateLimitBurst=infinity", nil, nil),
      ("RateLimitIntervalSec=0", .zero, 9000),
    ] as [(String, Duration?, Int?)])
  func journalPace_TurnedOff_HasNoLimit(line: String, interval: Duration?, burst: Int?) {
    let fixture = ConfigurationFixture(main: "[Journal]\n\(line)\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.journalRateLimit == nil)
    #expect(loaded.configuration.journalRateLimitInterval == interval ?? .seconds(30))
    #expect(loaded.configuration.journalRateLimitBurst == burst)
  }

  @Test func journalPace_ResetByAnEmptyAssignment_IsTheDefault() {
    let fixture = ConfigurationFixture(main: "[Journal]\nRateLimitBurst=infinity\nRateLimitIntervalSec=5s\n")
    fixture.dropIn("50-pace.conf", "[Journal]\nRateLimitBurst=\nRateLimitIntervalSec=\n")
    #expect(fixture.load().configuration.journalRateLimit == defaults.journalRateLimit)
  }

  @Test func parse_OfSystemdsSyntax_ReadsEveryForm() {
    let fixture = ConfigurationFixture()
    fixture.write(
      "trialwatch.conf",
      "# a comment\r\n; another comment\r\n\r\n  [Trials]  \r\n"
        + "  DefaultLength =  2d  \r\n"
        + "DefaultReminders=1d, \\\n# a comment inside a continuation\n  12h, \\\n 1h\n"
        + "[Daemon]\nMaxConnections=10\n[Trials]\nDefaultLength=3d\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.defaultLength == .days(3))
    #expect(loaded.configuration.defaultReminders.offsets == [.days(1), .hours(12), .hours(1)])
    #expect(loaded.configuration.maxConnections == 10)
  }

  /// A mark after "#", "=" or a space, or a prepended mark before "]" or a backslash, is one
  /// Character with it; systemd reads bytes, and so does the syntax.
  @Test func parse_OfLinesWithMarksBesideTheSyntax_GoesByBytes() {
    let parsed = ConfigurationSyntax.parse(
      "#\u{301} a comment\n[Plan\u{600}]\nKey=\u{301}v\nA=x\u{600}\\\n  y\n \u{301}K = v\n", file: "f")
    #expect(parsed.diagnostics == [])
    #expect(parsed.sections.map(\.name) == ["Plan\u{600}"])
    #expect(
      parsed.assignments == [
        .init(file: "f", line: 3, section: "Plan\u{600}", key: "Key", value: "\u{301}v"),
        .init(file: "f", line: 4, section: "Plan\u{600}", key: "A", value: "x\u{600} y"),
        .init(file: "f", line: 6, section: "Plan\u{600}", key: "\u{301}K", value: "v"),
      ])
  }

  @Test func value_WithEqualsAndHashes_IsKeptWhole() {
    let fixture = ConfigurationFixture(main: "[Daemon]\nSocket=/run/a=b#c\n")
    #expect(fixture.load().configuration.socketPath == "/run/a=b#c")
  }

  @Test func dropIns_WithAMainFile_ApplyAfterItInFileNameOrder() {
    let fixture = ConfigurationFixture(
      main: "[Trials]\nDefaultLength=7d\nComplianceWarnings=no\n[Daemon]\nMaxConnections=8\n")
    let b = fixture.dropIn("20-b.conf", "[Trials]\nDefaultLength=14d\n")
    let a = fixture.dropIn("10-a.conf", "[Trials]\nDefaultLength=10d\nDefaultReminders=none\n")
    let c = fixture.dropIn("30-c.conf", "[Daemon]\nMaxConnections=\n")
    fixture.dropIn("40-ignored.conf.disabled", "[Trials]\nDefaultLength=1d\n")
    fixture.dropIn(".50-hidden.conf", "[Trials]\nDefaultLength=1d\n")
    // A dot, then a combining mark: one Character, yet a name that starts with a dot.
    fixture.dropIn(".\u{301}60-hidden.conf", "[Trials]\nDefaultLength=1d\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.files == [fixture.main, a, b, c])
    #expect(loaded.configuration.defaultLength == .days(14))
    #expect(loaded.configuration.defaultReminders == ReminderSchedule.none)
    // An empty assignment restores the built-in default, not the main file's value.
    #expect(loaded.configuration.maxConnections == 4096)
  }

  @Test func reservedConnections_AboveAQuarterOfMaxConnections_IsCappedWithAWarning() {
    let fixture = ConfigurationFixture(main: "[Daemon]\nMaxConnections=100\nReservedConnections=100\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.map(\.severity) == [.warning])
    #expect(loaded.diagnostics.first?.line == 3)
    #expect(loaded.diagnostics.first?.message.hasSuffix("MaxConnections=100: 25 are reserved") == true)
    #expect(loaded.configuration.effectiveReservedConnections == 25)
    fixture.write("trialwatch.conf", "[Daemon]\nMaxConnections=40\n")
    #expect(fixture.load().diagnostics == [])
    #expect(fixture.load().configuration.effectiveReservedConnections == 10, "the default, capped quietly")
  }

  @Test func dropIns_WithoutAMainFile_Apply() {
    let fixture = ConfigurationFixture()
    let only = fixture.dropIn("override.conf", "[CatchUp]\nLateReminders=all\n")
    let loaded = fixture.load()
    #expect(loaded.files == [only])
    #expect(loaded.configuration.catchUp.reminders == .all)
  }

  @Test func dropIn_LinkedToDevNull_IsMasked() throws {
    let fixture = ConfigurationFixture()
    fixture.dropIn("10-a.conf", "[Trials]\nDefaultLength=4d\n")
    try FileManager.default.createSymbolicLink(
      atPath: fixture.dropIns + "/20-masked.conf", withDestinationPath: "/dev/null")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.files.last == fixture.dropIns + "/20-masked.conf")
    #expect(loaded.configuration.defaultLength == .days(4))
  }

  @Test func configOption_NamingAnotherFile_MovesTheDropInDirectoryToo() {
    let fixture = ConfigurationFixture()
    let custom = fixture.write("custom.conf", "[Trials]\nDefaultLength=2d\n")
    fixture.write("custom.conf.d/x.conf", "[Trials]\nDefaultLength=9d\n")
    let loaded = ConfigurationLoader(mainFile: custom, environment: [:]).load()
    #expect(loaded.files == [custom, custom + ".d/x.conf"])
    #expect(loaded.configuration.defaultLength == .days(9))
  }
}

/// `[Store]` and `[PostgreSQL]`: fleet mode's keys.
@Suite struct StoreConfigurationTests {
  func load(_ text: String) -> LoadedConfiguration { ConfigurationFixture.load(text) }

  @Test func postgreSQL_WithOnlyAConnection_TakesTheDefaults() {
    let loaded = load("[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=host=db1 dbname=trialwatch\n")
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.storeBackend == .postgresql)
    #expect(
      loaded.configuration.postgreSQL
        == PostgreSQLSettings(
          connection: "host=db1 dbname=trialwatch", nodeName: PostgreSQLSettings.defaultNodeName(),
          shards: 256))
  }

  @Test func defaultNodeName_OfThisHost_IsItsHostName() {
    let name = PostgreSQLSettings.defaultNodeName()
    #expect(!name.isEmpty)
    let expected = (try? String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8))?
      .trimmingCharacters(in: .whitespacesAndNewlines)
    if let expected, !expected.isEmpty { #expect(name == expected) }
  }

  @Test(arguments: [
    "host=db1,db2 dbname=trialwatch user=trialwatch target_session_attrs=read-write",
    "host = db1  port=5432 dbname = trialwatch",
    "host=db1 application_name='trial watch' options='-c search_path=tw\\'s'",
    "host=/run/postgresql dbname=trialwatch passfile=/etc/trialwatch/pgpass",
    "service=trialwatch",
    "postgresql://trialwatch@db1,db2/trialwatch?target_session_attrs=read-write",
    "postgres://db1:5432/trialwatch?sslmode=verify-full",
    "postgresql://",
    "postgresql://%2Frun%2Fpostgresql/trialwatch",
    "postgresql://trialwatch@[2001:db8::1]:5432/trialwatch",
  ])
  func connection_InEveryValidForm_IsTakenAsWritten(connection: String) {
    let loaded = load("[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=\(connection)\nNodeName=n1\n")
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.postgreSQL?.connection == connection)
  }

  @Test func postgreSQL_WithEveryKey_ReadsThem() {
    let loaded = load(
      """
      [Store]
      Backend=postgresql
      [PostgreSQL]
      Connection=postgresql://trialwatch@db1/trialwatch
      NodeName=web-3.eu_west
      Shards=4096
      """)
    #expect(loaded.diagnostics == [])
    #expect(
      loaded.configuration.postgreSQL
        == PostgreSQLSettings(
          connection: "postgresql://trialwatch@db1/trialwatch", nodeName: "web-3.eu_west", shards: 4096))
  }

  @Test(arguments: ["NodeName=a", "NodeName=9", "NodeName=" + String(repeating: "n", count: 64), "Shards=1"])
  func postgreSQLKey_AtTheEdges_IsValid(line: String) {
    let loaded = load("[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=host=db1\n\(line)\n")
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.postgreSQL != nil)
  }

  @Test func postgreSQLKeys_WithBackendLmdb_AreAcceptedAndUnused() {
    let loaded = load("[PostgreSQL]\nConnection=host=db1\nNodeName=n1\nShards=16\n")
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration.storeBackend == .lmdb)
    #expect(loaded.configuration.postgreSQL == nil)
  }

  /// A drop-in that resets the backend is lmdb; one that resets the connection the backend
  /// needs is an error where the backend is set.
  @Test func backendOrConnection_ResetByADropIn_LeavesNoPostgreSQL() {
    let fixture = ConfigurationFixture(
      main: "[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=host=db1\n")
    fixture.dropIn("50-reset.conf", "[Store]\nBackend=\n")
    let single = fixture.load()
    #expect(single.diagnostics == [])
    #expect(single.configuration.storeBackend == .lmdb)
    #expect(single.configuration.postgreSQL == nil)
    fixture.dropIn("50-reset.conf", "[PostgreSQL]\nConnection=\n")
    let reset = fixture.load()
    #expect(reset.errors.map(\.file) == [fixture.main])
    #expect(reset.errors.map(\.line) == [2])
    #expect(reset.configuration.postgreSQL == nil)
  }

  @Test func reload_OfRestartOnlyKeys_KeepsTheRunningValuesWithAWarning() {
    let running = load(
      "[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=host=db1\nNodeName=n1\n"
    ).configuration
    let next = load(
      "[Trials]\nDefaultLength=9d\n[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=host=db2\nNodeName=n1\n"
        + "Shards=64\n[Daemon]\nStateDirectory=/srv/tw\n"
    ).configuration
    let (applied, pending) = running.reloading(next)
    #expect(applied.defaultLength == .days(9))
    #expect(applied.postgreSQL == running.postgreSQL)
    #expect(applied.stateDirectory == running.stateDirectory)
    let suffix = " changed: the new value takes effect at the next start (systemctl restart trialwatch)"
    #expect(
      pending == [
        "StateDirectory= in [Daemon]" + suffix, "Connection= in [PostgreSQL]" + suffix,
        "Shards= in [PostgreSQL]" + suffix,
      ])

    let single = load("[PostgreSQL]\nConnection=host=db1\n").configuration
    let (kept, backend) = single.reloading(running)
    #expect(kept.storeBackend == .lmdb)
    #expect(kept.postgreSQL == nil)
    #expect(backend == ["Backend= in [Store]" + suffix])
    #expect(running.reloading(running).pending == [])
  }

  @Test(arguments: [
    ("/etc/trialwatch/trialwatch.conf", "/etc/trialwatch/plans"), ("/trialwatch.conf", "/plans"),
    ("trialwatch.conf", "./plans"), ("conf/tw.conf", "conf/plans"),
    ("/etc/a\u{7F1}/b/\u{7F1}t.conf", "/etc/a\u{7F1}/b/plans"),
  ])
  func planDirectory_BesideAnyMainFile_IsPlansInItsFolder(main: String, plans: String) {
    #expect(ConfigurationLoader.planDirectory(beside: main) == plans)
  }
}

/// `etc/trialwatch.conf`, the shipped sample: it must document every key with its default.
@Suite struct SampleConfigurationTests {
  static let sample = RepositoryFile.path("etc/trialwatch.conf")

  @Test func sample_AsShipped_IsAllDefaults() {
    var loader = ConfigurationLoader(mainFile: Self.sample, dropInDirectory: "/nonexistent", environment: [:])
    loader.planDirectory = "/nonexistent"
    loader.webhookDirectory = "/nonexistent"
    let loaded = loader.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration == defaults)
  }

  /// `etc/plans/`, the sample plans beside it, as the daemon reads them.
  @Test func samplePlans_AsShipped_LoadWithoutAProblem() {
    let loaded = ConfigurationLoader(mainFile: Self.sample, dropInDirectory: "/nonexistent", environment: [:])
      .load()
    #expect(loaded.diagnostics == [])
    #expect(!loaded.configuration.plans.isEmpty)
    for plan in loaded.configuration.plans.values {
      // Each meets the card networks' rule: a reminder at least 7 days before the end.
      #expect(TrialPlan.meetsCardNetworkRule(length: plan.length, reminders: plan.reminders), "\(plan.name)")
    }
  }

  @Test func sample_Uncommented_SetsEveryKeyToItsDefault() throws {
    let text = try String(contentsOfFile: Self.sample, encoding: .utf8)
    var keys: [String] = []
    var section = ""
    let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
      if line.hasPrefix("[") { section = String(line.dropFirst().dropLast()) }
      guard line.hasPrefix("#"), let equals = line.firstIndex(of: "="), !line.contains(" =") else {
        return String(line)
      }
      let key = line[line.index(after: line.startIndex)..<equals]
      guard key.allSatisfy({ $0.isLetter }) else { return String(line) }
      keys.append("[\(section)] \(key)")
      return String(line.dropFirst())
    }
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", uncommented.joined(separator: "\n"))
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration == defaults)
    #expect(keys == ConfigurationSchema.keys.map { "[\($0.section)] \($0.name)" })
    #expect(
      ConfigurationSchema.keys.allSatisfy { key in
        uncommented.contains("\(key.name)=\(key.defaultText)")
      })
  }
}
