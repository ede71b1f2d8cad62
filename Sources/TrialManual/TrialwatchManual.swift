import ArgumentParser
import Foundation
import TrialConfiguration
import TrialControl
import TrialCtl
import TrialDaemon
import TrialHTTP
import TrialWebhookSender

/// A generated page: its name, section and man(7) source.
public struct ManualPage: Hashable, Sendable {
  public var name: String
  public var section: Int
  public var source: String

  /// `trialwatchd.8`.
  public var fileName: String { "\(name).\(section)" }
}

/// trialwatch's manual: `trialwatchctl(1)`, `trialwatchd(8)`, `trialwatch-webhooks(8)` and
/// `trialwatch-http(8)` from their command-line definitions (the JSON `--experimental-dump-help` prints, taken from the command types
/// themselves), `trialwatch.conf(5)` from the configuration schema. What the definitions do
/// not hold (environment, files, related pages) is written here, from the same constants the
/// code uses.
public enum TrialwatchManual {
  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// `trialwatch 0.1.0`: the source every page names.
  public static var source: String { "trialwatch \(Daemon.version)" }

  /// The five pages, dated `date` (YYYY-MM-DD).
  public static func pages(date: String) throws -> [ManualPage] {
    guard isDate(date) else { throw Failure(description: "\"\(date)\" is not a date as YYYY-MM-DD") }
    return [
      ManualPage(
        name: "trialwatchctl", section: 1,
        source: try commandPage(
          TrialwatchCtl._dumpHelp(), section: 1, manual: "User Commands", date: date, extras: ctlExtras)),
      ManualPage(
        name: "trialwatch.conf", section: 5,
        source: ConfigurationPage(
          documentation: .current, date: date, source: source,
          seeAlso: [
            PageReference("trialwatchctl", 1), PageReference("systemd.syntax", 7),
            PageReference("systemd.time", 7), PageReference("trialwatch-http", 8),
            PageReference("trialwatch-webhooks", 8), PageReference("trialwatchd", 8),
          ]
        ).render()),
      ManualPage(
        name: "trialwatchd", section: 8,
        source: try commandPage(
          TrialwatchdCommand._dumpHelp(), section: 8, manual: "System Manager's Manual", date: date,
          extras: daemonExtras)),
      ManualPage(
        name: "trialwatch-webhooks", section: 8,
        source: try commandPage(
          WebhookSenderCommand._dumpHelp(), section: 8, manual: "System Manager's Manual", date: date,
          extras: senderExtras)),
      ManualPage(
        name: "trialwatch-http", section: 8,
        source: try commandPage(
          GatewayCommand._dumpHelp(), section: 8, manual: "System Manager's Manual", date: date,
          extras: gatewayExtras)),
    ]
  }

  /// Writes the pages into `directory` (made if missing); returns their paths.
  @discardableResult
  public static func write(date: String, to directory: String) throws -> [String] {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return try pages(date: date).map { page in
      let path = directory + "/" + page.fileName
      try page.source.write(toFile: path, atomically: true, encoding: .utf8)
      return path
    }
  }

  /// A command's page from its `--experimental-dump-help` JSON.
  public static func commandPage(
    _ dump: String, section: Int, manual: String, date: String, extras: PageExtras
  )
    throws -> String
  {
    let info: ToolInfo
    do {
      info = try ToolInfo(dump: dump)
    } catch {
      throw Failure(description: error.description)
    }
    return CommandPage(
      command: info.command, section: section, manual: manual, date: date, source: source, extras: extras
    ).render()
  }

  static func isDate(_ text: String) -> Bool {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    return parts.map(\.count) == [4, 2, 2] && parts.allSatisfy { $0.allSatisfy(\.isASCII) && Int($0) != nil }
      && (1...12).contains(Int(parts[1]) ?? 0) && (1...31).contains(Int(parts[2]) ?? 0)
  }

  // MARK: What the definitions do not say

  static let socket = VarlinkInterfaces.defaultSocketPath
  static let configuration = ConfigurationDocumentation.mainFile
  static let dropIns = ConfigurationDocumentation.dropInDirectory
  /// The documents by topic, installed beside README.md (`make install`).
  static let documents = "/usr/share/doc/trialwatch/docs/"

  static let ctlExtras = PageExtras(
    environment: [
      .init(
        "TRIALWATCH_SOCKET", "The daemon's socket when --socket is not given; without either, \(socket)."),
      .init("TZ", "The time zone dates are shown in."),
      .init(
        "LC_ALL, LC_TIME, LANG",
        "The locale dates are shown in: the first of them that is set. C and POSIX read as US English."),
    ],
    files: [
      .init(
        socket,
        "The daemon's control socket, a Varlink socket: mode 0660, group trialwatch. Changing trials also "
          + "needs root, the daemon's user or its control group (ControlGroup=, default trialwatch-admin)."),
      .init(
        "/usr/lib/systemd/system/trialwatch-consumer@.service",
        "The unit that runs consume for the consumer named by its instance, as the user "
          + "trialwatch-consumer, with COMMAND= (and CONSUME_OPTIONS=) from the instance's configuration."),
      .init(
        ConfigurationDocumentation.planDirectory + "/NAME.conf",
        "The plan NAME that start --plan names and plans lists; see PLAN FILES in trialwatch.conf(5)."),
      .init(
        "/etc/trialwatch/consumers/NAME.conf",
        "The configuration of the consumer NAME for that unit; a commented sample is "
          + "/usr/share/doc/trialwatch/examples/consumer.conf."),
      .init(
        ConfigurationDocumentation.webhookDirectory + "/NAME.conf",
        "The webhook endpoint NAME that the webhooks commands name; see WEBHOOK ENDPOINT FILES in "
          + "trialwatch.conf(5). Its SecretFile= is the file webhooks secret writes."),
      .init(
        documents,
        "The documentation by topic: trialwatchctl.md for this command, events-and-consumers.md for consume "
          + "and consumers, control-socket.md for the Varlink interface it speaks."),
    ],
    seeAlso: [
      PageReference("journalctl", 1), PageReference("systemctl", 1), PageReference("systemd.exec", 5),
      PageReference("trialwatch.conf", 5), PageReference("trialwatchd", 8),
    ])

  static let daemonExtras = PageExtras(
    environment: [
      .init(
        "STATE_DIRECTORY",
        "Set by systemd from the unit's StateDirectory=: where the store lives unless trialwatch.conf(5) "
          + "says otherwise."),
      .init(
        "NOTIFY_SOCKET",
        "Where the daemon sends its sd_notify(3) messages: READY=1 once the store is loaded and missed "
          + "events have fired, STATUS= lines, WATCHDOG=1, RELOADING=1 and STOPPING=1. Without it, "
          + "nothing is sent."),
      .init(
        "WATCHDOG_USEC, WATCHDOG_PID",
        "The watchdog's interval (WatchdogSec=): the scheduler pings at half of it."),
      .init(
        "LISTEN_FDS, LISTEN_PID",
        "Socket activation: the listening socket from trialwatch.socket, and the metrics socket from "
          + "trialwatch-report.socket (named metrics). Without them, the daemon binds Socket= itself, and "
          + "MetricsSocket= when set."),
      .init(
        "JOURNAL_STREAM",
        "With LogTarget=auto, logs go to the journal when standard error is the stream this names, "
          + "and to standard error as readable lines otherwise."),
    ],
    files: [
      .init(configuration, "The configuration; see trialwatch.conf(5)."),
      .init(dropIns + "/*.conf", "Drop-ins, read after it in the order of their names."),
      .init(
        ConfigurationDocumentation.planDirectory + "/*.conf",
        "Plan files, one a plan named after its file; see PLAN FILES in trialwatch.conf(5)."),
      .init(
        ConfigurationDocumentation.webhookDirectory + "/*.conf",
        "Webhook endpoints' files, one an endpoint named after its file; see WEBHOOK ENDPOINT FILES in "
          + "trialwatch.conf(5)."),
      .init(
        DaemonConfiguration.defaultStateDirectory + "/",
        "The trial store (StateDirectory=): LMDB's data.mdb and lock.mdb, and store.lock, held while a "
          + "process has the store open."),
      .init(socket, "The control socket (Socket=), from trialwatch.socket or bound by the daemon."),
      .init("/usr/lib/systemd/system/trialwatch.service", "The service unit."),
      .init("/usr/lib/systemd/system/trialwatch.socket", "The socket unit."),
      .init(
        "/run/systemd/report/io.trialwatch",
        "The metrics socket (io.systemd.Metrics, for systemd-report), from trialwatch-report.socket."),
      .init(
        "/usr/lib/sysusers.d/trialwatch.conf",
        "The user trialwatch and the groups trialwatch and trialwatch-admin."),
      .init(
        "/usr/lib/systemd/catalog/trialwatch.catalog",
        "What the daemon's journal entries mean, for journalctl -x."),
      .init("/usr/share/doc/trialwatch/README.md", "The overview, with links to the documents by topic."),
      .init(
        documents,
        "The documentation by topic: install.md, configuration.md, systemd.md, backups.md, fleet.md, "
          + "events-and-consumers.md, control-socket.md and more."),
    ],
    seeAlso: [
      PageReference("journalctl", 1), PageReference("systemctl", 1), PageReference("trialwatchctl", 1),
      PageReference("sd_notify", 3), PageReference("systemd.exec", 5), PageReference("systemd.service", 5),
      PageReference("systemd.socket", 5), PageReference("systemd.unit", 5), PageReference("sysusers.d", 5),
      PageReference("trialwatch.conf", 5), PageReference("trialwatch-http", 8),
      PageReference("trialwatch-webhooks", 8),
    ])

  static let senderExtras = PageExtras(
    environment: [
      .init(
        "TRIALWATCH_SOCKET", "The daemon's socket when --socket is not given; without either, \(socket)."),
      .init(
        "NOTIFY_SOCKET",
        "Where the sender sends its sd_notify(3) messages: READY=1 once attached to the daemon the first time, "
          + "STATUS= lines and STOPPING=1. Without it, nothing is sent."),
      .init(
        "JOURNAL_STREAM",
        "With --log-target auto, logs go to the journal when standard error is the stream this names, and to "
          + "standard error as readable lines otherwise."),
    ],
    files: [
      .init(
        socket,
        "The daemon's control socket. Attaching and reporting need the rights of a change: root, the daemon's "
          + "user or its control group (ControlGroup=, default trialwatch-admin), and the group trialwatch to "
          + "connect."),
      .init(
        ConfigurationDocumentation.webhookDirectory + "/*.conf",
        "The webhook endpoints, read by the daemon, which hands the sender each attempt with its URL and "
          + "secret file; see WEBHOOK ENDPOINT FILES in trialwatch.conf(5)."),
      .init(
        ConfigurationDocumentation.webhookDirectory + "/NAME.secret",
        "An endpoint's secrets (SecretFile=), read by the sender alone, again whenever the file changes: owner "
          + "root, group trialwatch-webhooks, mode 0640."),
      .init(
        "/usr/lib/systemd/system/trialwatch-webhooks.service",
        "The service unit, which runs the sender as the user trialwatch-webhooks once an endpoint is "
          + "configured."),
      .init(
        "/usr/lib/sysusers.d/trialwatch.conf",
        "The user trialwatch-webhooks, in the groups trialwatch and trialwatch-admin."),
      .init(documents, "The documentation by topic: webhooks.md for the delivery of webhooks."),
    ],
    seeAlso: [
      PageReference("journalctl", 1), PageReference("systemctl", 1), PageReference("trialwatchctl", 1),
      PageReference("sd_notify", 3), PageReference("systemd.exec", 5), PageReference("systemd.service", 5),
      PageReference("trialwatch.conf", 5), PageReference("trialwatchd", 8),
    ])

  static let gatewayExtras = PageExtras(
    environment: [
      .init(
        "TRIALWATCH_SOCKET", "The daemon's socket when --socket is not given; without either, \(socket)."),
      .init(
        "LISTEN_FDS, LISTEN_PID",
        "Socket activation: the listening socket from trialwatch-http.socket. Without them, the gateway "
          + "listens on --listen itself."),
      .init(
        "NOTIFY_SOCKET",
        "Where the gateway sends its sd_notify(3) messages: READY=1 once it listens, STATUS= and STOPPING=1. "
          + "Without it, nothing is sent."),
      .init(
        "JOURNAL_STREAM",
        "With --log-target auto, logs go to the journal when standard error is the stream this names, and to "
          + "standard error as readable lines otherwise."),
    ],
    files: [
      .init(
        socket,
        "The daemon's control socket. Reading needs the group trialwatch; the calls of a change token need "
          + "the rights of a change too: root, the daemon's user or its control group (ControlGroup=, default "
          + "trialwatch-admin)."),
      .init(
        HTTPTokenFile.defaultPath,
        "The tokens, one a line: NAME SCOPE sha256:HEX, SCOPE read or change. Read again whenever the file "
          + "changes: owner root, group trialwatch-http, mode 0640."),
      .init(
        "/usr/lib/systemd/system/trialwatch-http.socket",
        "The socket unit: 127.0.0.1:8181, not enabled as installed; a drop-in (systemctl edit) listens "
          + "elsewhere or on a Unix socket."),
      .init(
        "/usr/lib/systemd/system/trialwatch-http.service",
        "The service unit, started by its socket, which runs the gateway as the user trialwatch-http with "
          + "no network of its own (PrivateNetwork=yes)."),
      .init(
        "/usr/lib/sysusers.d/trialwatch.conf",
        "The user trialwatch-http, in the groups trialwatch and trialwatch-admin."),
      .init(documents, "The documentation by topic: http.md for the gateway, its API and a reverse proxy."),
    ],
    seeAlso: [
      PageReference("curl", 1), PageReference("journalctl", 1), PageReference("systemctl", 1),
      PageReference("trialwatchctl", 1), PageReference("sd_notify", 3), PageReference("systemd.exec", 5),
      PageReference("systemd.service", 5), PageReference("systemd.socket", 5),
      PageReference("trialwatch.conf", 5),
      PageReference("trialwatchd", 8),
    ])
}
