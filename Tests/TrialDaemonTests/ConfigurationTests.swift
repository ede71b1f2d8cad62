import Foundation
import Logging
import Systemd
import TestSupport
import Testing
import TrialCore

@testable import TrialDaemon

/// A scratch `/etc/trialwatch`: the main file and its drop-in directory, on the real file system.
final class ConfigurationFixture {
  let scratch = try! TemporaryDirectory("config")
  var directory: String { scratch.path }

  var main: String { directory + "/trialwatch.conf" }
  var dropIns: String { main + ".d" }

  /// Writes `text` to `name` (relative to the scratch directory), creating folders.
  @discardableResult
  func write(_ name: String, _ text: String) -> String {
    let path = directory + "/" + name
    try! FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try! Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  @discardableResult
  func dropIn(_ name: String, _ text: String) -> String {
    write("trialwatch.conf.d/" + name, text)
  }

  func load(environment: [String: String] = [:]) -> LoadedConfiguration {
    ConfigurationLoader(mainFile: main, environment: environment).load()
  }
}

private let defaults = DaemonConfiguration(environment: [:])
private let thirtyThreeOffsets: String = (1...33).map { "\($0)h" }.joined(separator: ",")

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
    #expect(defaults.defaultLength == Days(5))
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
  }

  @Test func stateDirectory_ByDefault_IsSystemdsStateDirectory() {
    #expect(
      DaemonConfiguration(environment: ["STATE_DIRECTORY": "/var/lib/trialwatch-a:/var/lib/b"]).stateDirectory
        == "/var/lib/trialwatch-a")
    #expect(
      DaemonConfiguration(environment: ["STATE_DIRECTORY": "relative"]).stateDirectory
        == "/var/lib/trialwatch")
    // An empty assignment resets to the same default.
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Daemon]\nStateDirectory=/srv/x\nStateDirectory=\n")
    #expect(
      fixture.load(environment: ["STATE_DIRECTORY": "/run/sd"]).configuration.stateDirectory == "/run/sd")
  }

  @Test func load_OfEveryKey_ReadsIt() throws {
    let fixture = ConfigurationFixture()
    fixture.write(
      "trialwatch.conf",
      """
      [Trials]
      DefaultLength=14d
      DefaultReminders=7d, 2d 12h, 90min

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
      """)
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    var expected = defaults
    expected.defaultLength = Days(14)
    expected.defaultReminders = try ReminderSchedule([.days(7), .hours(60), .minutes(90)])
    expected.catchUp = CatchUpPolicy(reminders: .skip, grace: .minutes(30), lateThreshold: .milliseconds(250))
    expected.stateDirectory = "/srv/trialwatch"
    expected.socketPath = "/run/tw/control"
    expected.socketGroup = "licensing-readers"
    expected.controlGroup = "licensing"
    expected.maxConnections = 32
    expected.idleTimeout = nil
    expected.logLevel = .debug
    expected.logTarget = .journal
    #expect(loaded.configuration == expected)
    #expect(loaded.files == [fixture.main])
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
    #expect(loaded.configuration.defaultLength == Days(3))
    #expect(loaded.configuration.defaultReminders.offsets == [.days(1), .hours(12), .hours(1)])
    #expect(loaded.configuration.maxConnections == 10)
  }

  @Test func value_WithEqualsAndHashes_IsKeptWhole() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Daemon]\nSocket=/run/a=b#c\n")
    #expect(fixture.load().configuration.socketPath == "/run/a=b#c")
  }

  @Test func dropIns_WithAMainFile_ApplyAfterItInFileNameOrder() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Trials]\nDefaultLength=7d\n[Daemon]\nMaxConnections=8\n")
    let b = fixture.dropIn("20-b.conf", "[Trials]\nDefaultLength=14d\n")
    let a = fixture.dropIn("10-a.conf", "[Trials]\nDefaultLength=10d\nDefaultReminders=none\n")
    let c = fixture.dropIn("30-c.conf", "[Daemon]\nMaxConnections=\n")
    fixture.dropIn("40-ignored.conf.disabled", "[Trials]\nDefaultLength=1d\n")
    fixture.dropIn(".50-hidden.conf", "[Trials]\nDefaultLength=1d\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.files == [fixture.main, a, b, c])
    #expect(loaded.configuration.defaultLength == Days(14))
    #expect(loaded.configuration.defaultReminders == ReminderSchedule.none)
    // An empty assignment restores the built-in default, not the main file's value.
    #expect(loaded.configuration.maxConnections == 4096)
  }

  @Test func reservedConnections_AboveAQuarterOfMaxConnections_IsCappedWithAWarning() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Daemon]\nMaxConnections=100\nReservedConnections=100\n")
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
    fixture.dropIn("10-a.conf", "[Trials]\nDefaultLength=10d\n")
    try FileManager.default.createSymbolicLink(
      atPath: fixture.dropIns + "/20-masked.conf", withDestinationPath: "/dev/null")
    let loaded = fixture.load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.files.last == fixture.dropIns + "/20-masked.conf")
    #expect(loaded.configuration.defaultLength == Days(10))
  }

  @Test func configOption_NamingAnotherFile_MovesTheDropInDirectoryToo() {
    let fixture = ConfigurationFixture()
    let custom = fixture.write("custom.conf", "[Trials]\nDefaultLength=2d\n")
    fixture.write("custom.conf.d/x.conf", "[Trials]\nDefaultLength=9d\n")
    let loaded = ConfigurationLoader(mainFile: custom, environment: [:]).load()
    #expect(loaded.files == [custom, custom + ".d/x.conf"])
    #expect(loaded.configuration.defaultLength == Days(9))
  }
}

/// Every way a configuration can be wrong, each with its exact message.
@Suite struct ConfigurationErrorTests {
  /// Loads a main file holding `section` and `line` (at line 2) and returns its problems.
  func problems(_ section: String, _ line: String) -> (LoadedConfiguration, [String]) {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[\(section)]\n\(line)\n")
    let loaded = fixture.load()
    return (
      loaded,
      loaded.diagnostics.map {
        $0.description.replacingOccurrences(of: fixture.main, with: "trialwatch.conf")
      }
    )
  }

  struct BadValue: Sendable, CustomTestStringConvertible {
    var section: String
    var line: String
    var message: String

    init(_ section: String, _ line: String, _ message: String) {
      self.section = section
      self.line = line
      self.message = message
    }

    var testDescription: String { "[\(section)] \(line)" }
  }

  static let badValues: [BadValue] = [
    BadValue(
      "Trials", "DefaultLength=5x",
      #"invalid value "5x" for DefaultLength= in [Trials]: not a time span (like 5d, 36h, 90s or 1d 12h): "#
        + #"unknown unit "x""#
    ),
    BadValue(
      "Trials", "DefaultLength=0", #"invalid value "0" for DefaultLength= in [Trials]: must be longer than 0"#
    ),
    BadValue(
      "Trials", "DefaultLength=five days",
      #"invalid value "five days" for DefaultLength= in [Trials]: not a time span (like 5d, 36h, 90s or 1d "#
        + #"12h): expected a number at "five""#
    ),
    BadValue(
      "Trials", "DefaultReminders=3d,,1d",
      #"invalid value "3d,,1d" for DefaultReminders= in [Trials]: empty reminder offset; expected time "#
        + "spans separated by commas, or none"
    ),
    BadValue(
      "Trials", "DefaultReminders=3d, soon",
      #"invalid value "3d, soon" for DefaultReminders= in [Trials]: not a time span (like 5d, 36h, 90s or "#
        + #"1d 12h): expected a number at "soon""#
    ),
    BadValue(
      "Trials", "DefaultReminders=0",
      #"invalid value "0" for DefaultReminders= in [Trials]: reminder offset 0 must be a positive span "#
        + "before the end"
    ),
    BadValue(
      "Trials", "DefaultReminders=" + thirtyThreeOffsets,
      "invalid value \"" + thirtyThreeOffsets
        + "\" for DefaultReminders= in [Trials]: at most 32 reminders per trial, got 33"
    ),
    BadValue(
      "CatchUp", "LateReminders=sometimes",
      #"invalid value "sometimes" for LateReminders= in [CatchUp]: expected latest, all or skip"#
    ),
    BadValue(
      "CatchUp", "ReminderGrace=abc",
      #"invalid value "abc" for ReminderGrace= in [CatchUp]: not a time span (like 5d, 36h, 90s or 1d 12h): "#
        + #"expected a number at "abc""#
    ),
    BadValue(
      "CatchUp", "LateThreshold=-1s",
      #"invalid value "-1s" for LateThreshold= in [CatchUp]: not a time span (like 5d, 36h, 90s or 1d 12h): "#
        + #"expected a number at "-1s""#
    ),
    BadValue(
      "Daemon", "StateDirectory=var/lib/tw",
      #"invalid value "var/lib/tw" for StateDirectory= in [Daemon]: must be an absolute path"#
    ),
    BadValue(
      "Daemon", "Socket=tw.sock",
      #"invalid value "tw.sock" for Socket= in [Daemon]: must be an absolute path"#),
    BadValue(
      "Daemon", "Socket=/run/" + String(repeating: "s", count: 103),
      #"invalid value "/run/"# + String(repeating: "s", count: 103)
        + #"" for Socket= in [Daemon]: longer than 107 bytes, the limit of a Unix socket address"#
    ),
    BadValue(
      "Daemon", "ControlGroup=9 lives",
      #"invalid value "9 lives" for ControlGroup= in [Daemon]: not a group name (a letter or "_", then "#
        + #"letters, digits, "_", "-" or ".", at most 32) or a numeric group id"#
    ),
    BadValue(
      "Daemon", "SocketGroup=read ers",
      #"invalid value "read ers" for SocketGroup= in [Daemon]: not a group name (a letter or "_", then "#
        + #"letters, digits, "_", "-" or ".", at most 32) or a numeric group id"#
    ),
    BadValue(
      "Daemon", "ControlGroup=-wheel",
      #"invalid value "-wheel" for ControlGroup= in [Daemon]: not a group name (a letter or "_", then "#
        + #"letters, digits, "_", "-" or ".", at most 32) or a numeric group id"#
    ),
    BadValue(
      "Daemon", "ControlGroup=4294967295",
      #"invalid value "4294967295" for ControlGroup= in [Daemon]: group id out of range"#
    ),
    BadValue(
      "Daemon", "MaxConnections=0",
      #"invalid value "0" for MaxConnections= in [Daemon]: expected a whole number from 1 to 65536"#
    ),
    BadValue(
      "Daemon", "MaxConnections=lots",
      #"invalid value "lots" for MaxConnections= in [Daemon]: expected a whole number from 1 to 65536"#
    ),
    BadValue(
      "Daemon", "MaxConnections=70000",
      #"invalid value "70000" for MaxConnections= in [Daemon]: expected a whole number from 1 to 65536"#
    ),
    BadValue(
      "Daemon", "IdleTimeout=0",
      #"invalid value "0" for IdleTimeout= in [Daemon]: must be longer than 0 (use "infinity" for no "#
        + "timeout)"
    ),
    BadValue(
      "Daemon", "LogLevel=loud",
      #"invalid value "loud" for LogLevel= in [Daemon]: expected one of emerg, alert, crit, err, warning, "#
        + "notice, info, debug (or trace, error, critical)"
    ),
    BadValue(
      "Daemon", "LogTarget=syslog",
      #"invalid value "syslog" for LogTarget= in [Daemon]: expected auto, journal or console"#
    ),
  ]

  @Test(arguments: badValues)
  func value_ThatIsInvalid_IsAnErrorWithFileLineKeyAndReason(bad: BadValue) {
    let (loaded, problems) = problems(bad.section, bad.line)
    #expect(problems == ["trialwatch.conf:2: error: " + bad.message])
    #expect(loaded.hasErrors)
    // The invalid assignment is ignored: the value stays the default.
    #expect(loaded.configuration == defaults)
    #expect(loaded.checkReport.exitCode == 1)
    #expect(!loaded.checkReport.text.contains("configuration OK"))
  }

  @Test func value_AtTheEdges_IsValid() {
    for (section, line) in [
      ("Daemon", "ControlGroup=1000"), ("Daemon", "ControlGroup=_tw-admins.x"), ("Daemon", "SocketGroup=0"),
      ("Daemon", "MaxConnections=65536"),
      ("Daemon", "LogLevel=err"), ("Daemon", "Socket=/" + String(repeating: "s", count: 106)),
      ("CatchUp", "ReminderGrace=0"), ("CatchUp", "LateThreshold=0"), ("Trials", "DefaultReminders=none"),
    ] {
      #expect(problems(section, line).1 == [], "\(line)")
    }
  }

  @Test func value_ThatIsInvalid_KeepsTheValueBeforeIt() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Trials]\nDefaultLength=9d\n")
    let bad = fixture.dropIn("10-bad.conf", "[Trials]\nDefaultLength=nine days\n")
    let loaded = fixture.load()
    #expect(loaded.configuration.defaultLength == Days(9))
    #expect(loaded.errors.map(\.file) == [bad])
    #expect(loaded.errors.map(\.line) == [2])
  }

  @Test(arguments: [
    ("[Trials", #"invalid section header "[Trials": missing "]""#),
    ("[]", #"invalid section header "[]""#),
    ("[a[b]", #"invalid section header "[a[b]""#),
    ("DefaultLength", #"missing "=" in "DefaultLength": expected Key=Value"#),
    ("=5d", #"missing key name before "=" in "=5d""#),
  ])
  func line_WithASyntaxError_IsAnError(line: String, message: String) {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Trials]\n\(line)\n")
    #expect(fixture.load().diagnostics.map(\.description) == ["\(fixture.main):2: error: \(message)"])
  }

  @Test func assignments_AfterABrokenHeader_AreDroppedQuietly() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Trials\nDefaultLength=9d\n[Daemon]\nMaxConnections=3\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.count == 1)
    #expect(loaded.configuration.defaultLength == Days(5))
    #expect(loaded.configuration.maxConnections == 3)
  }

  @Test func sectionsAndKeys_ThatAreUnknown_AreWarnings() {
    let fixture = ConfigurationFixture()
    fixture.write(
      "trialwatch.conf",
      """
      DefaultLength=3d
      [Trials]
      DefaultLenght=3d
      defaultlength=3d
      Socket=/run/x
      [trials]
      DefaultLength=4d
      [Network]
      Port=80
      [Daemon]
      MaxConnections=9
      """)
    let loaded = fixture.load()
    let file = fixture.main
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(file):1: warning: assignment DefaultLength= outside of any section, ignored (sections: [Trials], "
          + "[CatchUp], [Daemon])",
        "\(file):3: warning: unknown key \"DefaultLenght\" in [Trials], ignored",
        "\(file):4: warning: unknown key \"defaultlength\" in [Trials], ignored (did you mean "
          + "\"DefaultLength\"?)",
        "\(file):5: warning: unknown key \"Socket\" in [Trials], ignored (Socket= belongs in [Daemon])",
        "\(file):6: warning: unknown section [trials], its assignments are ignored (did you mean [Trials]?)",
        "\(file):8: warning: unknown section [Network], its assignments are ignored",
      ])
    #expect(!loaded.hasErrors)
    #expect(loaded.configuration.defaultLength == Days(5))
    #expect(loaded.configuration.maxConnections == 9)
    // Warnings alone pass the check; they are printed before the verdict.
    #expect(loaded.checkReport.exitCode == 0)
    #expect(
      loaded.checkReport.text
        == loaded.diagnostics.map { $0.description + "\n" }.joined() + "configuration OK\n")
  }

  @Test func reminders_NotShorterThanTheLength_AreWarnedAboutWhereSet() {
    let fixture = ConfigurationFixture()
    fixture.write("trialwatch.conf", "[Trials]\nDefaultReminders=7d, 5d, 1d\n")
    let first = fixture.load()
    #expect(
      first.diagnostics.map(\.description) == [
        "\(fixture.main):2: warning: reminders 1w, 5d are not shorter than DefaultLength=5d: trials of the "
          + "default length start with them already due, and they are skipped"
      ])
    let shorter = fixture.dropIn("short.conf", "\n[Trials]\nDefaultLength=2d\nDefaultReminders=\n")
    #expect(
      fixture.load().diagnostics.map(\.description) == [
        "\(shorter):3: warning: reminder 3d is not shorter than DefaultLength=2d: trials of the default "
          + "length start with it already due, and it is skipped"
      ])
  }

  @Test func mainFile_NamedOnTheCommandLine_MustExist() {
    let fixture = ConfigurationFixture()
    let loaded = ConfigurationLoader(mainFile: fixture.main, mainFileRequired: true, environment: [:]).load()
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(fixture.main): error: cannot read: No such file or directory"
      ])
    #expect(loaded.checkReport.exitCode == 1)
  }

  @Test func mainFile_ThatCannotBeRead_IsAnError() throws {
    let fixture = ConfigurationFixture()
    try FileManager.default.createDirectory(atPath: fixture.main, withIntermediateDirectories: true)
    #expect(
      fixture.load().diagnostics.map(\.description) == [
        "\(fixture.main): error: is a directory, not a configuration file"
      ])

    let other = ConfigurationFixture()
    other.write("trialwatch.conf.d", "not a directory")
    #expect(other.load().diagnostics.map(\.description) == ["\(other.dropIns): error: not a directory"])
  }

  @Test func dropInFiles_ThatCannotBeRead_AreReported() throws {
    let fixture = ConfigurationFixture()
    try FileManager.default.createDirectory(
      atPath: fixture.dropIns + "/10-dir.conf", withIntermediateDirectories: true)
    #expect(mkfifo(fixture.dropIns + "/20-fifo.conf", 0o600) == 0)
    try FileManager.default.createSymbolicLink(
      atPath: fixture.dropIns + "/30-dangling.conf", withDestinationPath: fixture.directory + "/nowhere")
    try Data([0x5B, 0x54, 0x72, 0x69, 0x61, 0x6C, 0x73, 0x5D, 0x0A, 0xFF, 0xFE, 0x0A])
      .write(to: URL(fileURLWithPath: fixture.dropIns + "/40-binary.conf"))
    let loaded = fixture.load()
    let d = fixture.dropIns
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(d)/10-dir.conf: error: is a directory, not a configuration file",
        "\(d)/20-fifo.conf: error: not a regular file",
        "\(d)/30-dangling.conf: error: cannot read: No such file or directory",
        "\(d)/40-binary.conf: error: not valid UTF-8 text",
      ])
    #expect(loaded.checkReport.exitCode == 1)
    #expect(loaded.checkReport.text == loaded.diagnostics.map { $0.description + "\n" }.joined())
  }

  /// Permission errors, seen by an unprivileged child process (root reads everything).
  @Test func filesAndDirectories_ThatAreUnreadable_AreErrors() async {
    let fixture = ConfigurationFixture()
    chmod(fixture.directory, 0o755)
    let main = fixture.write("trialwatch.conf", "[Trials]\nDefaultLength=2d\n")
    chmod(main, 0)
    fixture.dropIn("a.conf", "")
    chmod(fixture.dropIns, 0)
    let dropIns = fixture.dropIns
    await #expect(processExitsWith: .success) { [main = main as String, dropIns = dropIns as String] in
      if geteuid() == 0 {
        #expect(setgid(65_534) == 0)
        #expect(setuid(65_534) == 0)
      }
      let loaded = ConfigurationLoader(mainFile: main, environment: [:]).load()
      #expect(
        loaded.diagnostics.map(\.description) == [
          "\(main): error: cannot read: Permission denied",
          "\(dropIns): error: cannot list drop-ins: Permission denied",
        ], "\(loaded.diagnostics)")
    }
  }
}

/// `etc/trialwatch.conf`, the shipped sample: it must document every key with its default.
@Suite struct SampleConfigurationTests {
  static let sample = RepositoryFile.path("etc/trialwatch.conf")

  @Test func sample_AsShipped_IsAllDefaults() {
    let loaded = ConfigurationLoader(mainFile: Self.sample, dropInDirectory: "/nonexistent", environment: [:])
      .load()
    #expect(loaded.diagnostics == [])
    #expect(loaded.configuration == defaults)
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
