import Foundation
import Logging
import Systemd
import TestSupport
import Testing
import TrialCore

@testable import TrialConfiguration
@testable import TrialDaemon

/// Every way a configuration can be wrong, each with its exact message.
@Suite struct ConfigurationErrorTests {
  /// Loads a main file holding `section` and `line` (at line 2) and returns its problems.
  func problems(_ section: String, _ line: String) -> (LoadedConfiguration, [String]) {
    let fixture = ConfigurationFixture(main: "[\(section)]\n\(line)\n")
    let loaded = fixture.load()
    return (
      loaded,
      loaded.diagnostics.map {
        $0.description.replacingOccurrences(of: fixture.main, with: "trialwatch.conf")
      }
    )
  }

  /// `line` in `[section]`, refused with `message`.
  struct BadValue: Sendable, CustomTestStringConvertible {
    var section: String
    var line: String
    var message: String

    /// The message names the value (unless `quoted` is false: a connection string is not
    /// repeated), the key and the section, then `reason`.
    init(_ section: String, _ line: String, _ reason: String, quoted: Bool = true) {
      self.section = section
      self.line = line
      let equals = line.firstIndex(of: "=")!
      let value = quoted ? "\"\(line[line.index(after: equals)...])\" " : ""
      message = "invalid value \(value)for \(line[..<equals])= in [\(section)]: " + reason
    }

    var testDescription: String { "[\(section)] \(line)" }
  }

  // The reasons given for more than one key.
  static let timeSpan = "not a time span (like 5d, 36h, 90s or 1d 12h): "
  static let group =
    #"not a group name (a letter or "_", then letters, digits, "_", "-" or ".", at most 32) or a numeric group id"#
  static let nodeName =
    #"not a node name (1 to 64 ASCII letters, digits, "-", "_" or ".", starting with a letter or digit)"#
  static let connections = "expected a whole number from 1 to 65536"
  static let burst = "expected a whole number from 0 to 1000000, or infinity"
  static let shards = "expected a whole number from 1 to 4096"
  static let pairs = "; expected keyword=value pairs separated by spaces"

  static let badValues: [BadValue] = [
    BadValue("Trials", "DefaultLength=5x", timeSpan + #"unknown unit "x""#),
    BadValue("Trials", "DefaultLength=0", "must be longer than 0"),
    BadValue("Trials", "Retention=forever", timeSpan + #"expected a number at "forever""#),
    BadValue("Trials", "DefaultLength=five days", timeSpan + #"expected a number at "five""#),
    BadValue(
      "Trials", "DefaultReminders=3d,,1d",
      "empty reminder offset; expected time spans separated by commas, or none"),
    BadValue("Trials", "DefaultReminders=3d, soon", timeSpan + #"expected a number at "soon""#),
    BadValue("Trials", "DefaultReminders=0", "reminder offset 0 must be a positive span before the end"),
    BadValue("Trials", "DefaultReminders=" + thirtyThreeOffsets, "at most 32 reminders per trial, got 33"),
    BadValue("CatchUp", "LateReminders=sometimes", "expected latest, all or skip"),
    BadValue("CatchUp", "ReminderGrace=abc", timeSpan + #"expected a number at "abc""#),
    BadValue("CatchUp", "LateThreshold=-1s", timeSpan + #"expected a number at "-1s""#),
    BadValue("Daemon", "StateDirectory=var/lib/tw", "must be an absolute path"),
    BadValue("Daemon", "Socket=tw.sock", "must be an absolute path"),
    BadValue(
      "Daemon", "Socket=/run/" + String(repeating: "s", count: 103),
      "longer than 107 bytes, the limit of a Unix socket address"),
    BadValue("Daemon", "ControlGroup=9 lives", group),
    BadValue("Daemon", "SocketGroup=read ers", group),
    BadValue("Daemon", "ControlGroup=-wheel", group),
    BadValue("Daemon", "ControlGroup=4294967295", "group id out of range"),
    BadValue("Daemon", "MaxConnections=0", connections),
    BadValue("Daemon", "MaxConnections=lots", connections),
    BadValue("Daemon", "MaxConnections=70000", connections),
    BadValue("Daemon", "IdleTimeout=0", #"must be longer than 0 (use "infinity" for no timeout)"#),
    BadValue(
      "Daemon", "LogLevel=loud",
      "expected one of emerg, alert, crit, err, warning, notice, info, debug (or trace, error, critical)"),
    BadValue("Daemon", "LogTarget=syslog", "expected auto, journal or console"),
    BadValue("Journal", "RateLimitIntervalSec=half a minute", timeSpan + #"expected a number at "half""#),
    BadValue("Journal", "RateLimitBurst=lots", burst),
    BadValue("Journal", "RateLimitBurst=-1", burst),
    BadValue("Journal", "RateLimitBurst=1000001", burst),
    BadValue("Store", "Backend=postgres", "expected lmdb or postgresql"),
    BadValue("Store", "Backend=LMDB", "expected lmdb or postgresql"),
    BadValue("PostgreSQL", "NodeName=-node1", nodeName),
    BadValue("PostgreSQL", "NodeName=node 1", nodeName),
    BadValue("PostgreSQL", "NodeName=nöde", nodeName),
    BadValue("PostgreSQL", "NodeName=" + String(repeating: "n", count: 65), nodeName),
    BadValue("PostgreSQL", "Shards=0", shards),
    BadValue("PostgreSQL", "Shards=4097", shards),
    BadValue("PostgreSQL", "Shards=many", shards),
    BadValue(
      "PostgreSQL", "Connection=host", #"missing "=" after "host""# + pairs + ", or a postgresql:// URI",
      quoted: false),
    BadValue(
      "PostgreSQL", "Connection=host=db1 dbname",
      #"missing "=" after "dbname""# + pairs + ", or a postgresql:// URI",
      quoted: false),
    BadValue("PostgreSQL", "Connection=host=db1 =x", #"missing keyword before "=""# + pairs, quoted: false),
    BadValue(
      "PostgreSQL", "Connection=host=db1 application_name='trial",
      "unterminated quoted value of application_name=", quoted: false),
    BadValue(
      "PostgreSQL", "Connection=mysql://db1/trialwatch",
      #"unknown URI scheme "mysql"; expected postgresql:// or postgres://"#, quoted: false),
  ]

  static let passwordAdvice =
    "put it in a .pgpass file instead (named by PGPASSFILE; under systemd, passed with LoadCredential= as "
    + "trialwatch-fleet.conf does)"

  @Test(arguments: [
    ("host=db1 user=trialwatch password=s3cret dbname=trialwatch", "password="),
    ("host=db1 password = 's3 cret'", "password="),
    ("postgresql://trialwatch:s3cret@db1/trialwatch", "user:password@"),
    ("postgres://trialwatch:s3cret@db1:5432,db2:5432/trialwatch", "user:password@"),
    ("postgresql://trialwatch@db1/trialwatch?sslmode=verify-full&password=s3cret", "password="),
    ("postgresql://db1/trialwatch?p%61ssword=s3cret", "password="),
  ])
  func connection_WithAPassword_IsRefusedWithoutRepeatingIt(value: String, form: String) {
    for backend in ["lmdb", "postgresql"] {
      let fixture = ConfigurationFixture(
        main: "[Store]\nBackend=\(backend)\n[PostgreSQL]\nConnection=\(value)\n")
      let loaded = fixture.load()
      #expect(
        loaded.diagnostics.map(\.description) == [
          "\(fixture.main):4: error: invalid value for Connection= in [PostgreSQL]: holds a password "
            + "(\(form)); " + Self.passwordAdvice
        ])
      // The scratch directory's random name may hold "s3" of its own.
      #expect(!loaded.checkReport.text.replacingOccurrences(of: fixture.main, with: "").contains("s3"))
      #expect(loaded.checkReport.exitCode == 1)
      #expect(loaded.configuration.postgreSQL == nil)
    }
  }

  @Test func backendPostgresql_WithoutConnection_IsAnErrorWhereBackendIsSet() {
    let fixture = ConfigurationFixture(main: "[PostgreSQL]\nNodeName=node1\n")
    let dropIn = fixture.dropIn("50-fleet.conf", "# fleet\n[Store]\nBackend=postgresql\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(dropIn):3: error: Backend=postgresql needs Connection= in [PostgreSQL] (a libpq connection string "
          + "or a postgresql:// URI); none is set"
      ])
    #expect(loaded.configuration.postgreSQL == nil)
    #expect(loaded.checkReport.exitCode == 1)
  }

  @Test func backendPostgresql_WithAnInvalidConnection_IsOneError() {
    let fixture = ConfigurationFixture(main: "[Store]\nBackend=postgresql\n[PostgreSQL]\nConnection=db1\n")
    let loaded = fixture.load()
    #expect(loaded.errors.map(\.line) == [4])
    #expect(loaded.errors.first?.message.hasPrefix("invalid value for Connection= in [PostgreSQL]: ") == true)
    #expect(loaded.configuration.postgreSQL == nil)
  }

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
      ("Journal", "RateLimitBurst=1"), ("Journal", "RateLimitBurst=1000000"), ("Journal", "RateLimitBurst=0"),
      ("Journal", "RateLimitIntervalSec=1us"),
    ] {
      #expect(problems(section, line).1 == [], "\(line)")
    }
  }

  @Test func value_ThatIsInvalid_KeepsTheValueBeforeIt() {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=9d\n")
    let bad = fixture.dropIn("10-bad.conf", "[Trials]\nDefaultLength=nine days\n")
    let loaded = fixture.load()
    #expect(loaded.configuration.defaultLength == .days(9))
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
    let fixture = ConfigurationFixture(main: "[Trials]\n\(line)\n")
    #expect(fixture.load().diagnostics.map(\.description) == ["\(fixture.main):2: error: \(message)"])
  }

  @Test func assignments_AfterABrokenHeader_AreDroppedQuietly() {
    let fixture = ConfigurationFixture(main: "[Trials\nDefaultLength=9d\n[Daemon]\nMaxConnections=3\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.count == 1)
    #expect(loaded.configuration.defaultLength == .days(5))
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
          + "[CatchUp], [Events], [Daemon], [Journal], [Store], [PostgreSQL])",
        "\(file):3: warning: unknown key \"DefaultLenght\" in [Trials], ignored",
        "\(file):4: warning: unknown key \"defaultlength\" in [Trials], ignored (did you mean "
          + "\"DefaultLength\"?)",
        "\(file):5: warning: unknown key \"Socket\" in [Trials], ignored (Socket= belongs in [Daemon])",
        "\(file):6: warning: unknown section [trials], its assignments are ignored (did you mean [Trials]?)",
        "\(file):8: warning: unknown section [Network], its assignments are ignored",
      ])
    #expect(!loaded.hasErrors)
    #expect(loaded.configuration.defaultLength == .days(5))
    #expect(loaded.configuration.maxConnections == 9)
    // Warnings alone pass the check; they are printed before the verdict.
    #expect(loaded.checkReport.exitCode == 0)
    #expect(
      loaded.checkReport.text
        == loaded.diagnostics.map { $0.description + "\n" }.joined() + "configuration OK\n")
  }

  @Test func reminders_NotShorterThanTheLength_AreWarnedAboutWhereSet() {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultReminders=7d, 5d, 1d\n")
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
