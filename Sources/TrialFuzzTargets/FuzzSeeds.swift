import FoundationEssentials
import TrialControl
import TrialCore
@_spi(StoreTesting) @_spi(Fuzzing) import TrialStore

/// The seed inputs of each target, as committed under `FuzzTesting/Corpora/<target>/seed-*`:
/// well-formed inputs of every kind the target reads, and a few of the common mistakes, for
/// libFuzzer to start from. `FuzzReplayTests` checks the committed ones are these (and writes
/// them with `TRIALWATCH_FUZZ_WRITE_SEEDS=1`).
public enum FuzzSeeds {
  /// The seeds of `target`, by file name.
  public static func seeds(of target: String) -> [String: [UInt8]] {
    switch target {
    case FuzzTargets.control.name: control()
    case FuzzTargets.configuration.name: configuration()
    case FuzzTargets.storeRecords.name: storeRecords()
    case FuzzTargets.storeFile.name: storeFile()
    case FuzzTargets.text.name: text()
    default: [:]
    }
  }

  static func control() -> [String: [UInt8]] {
    let trials = "io.trialwatch.Trials."
    let calls: [String: String] = [
      "start-fast":
        #"{"method":"\#(trials)StartTrial","parameters":{"subject":"acme-42","duration":"14d","reminders":["3d","1d"],"labels":{"tier":"pro"}}}"#,
      "start-plan":
        #"{"method":"\#(trials)StartTrial","parameters":{"subject":"acme-43","plan":"pro","endsAt":"2026-12-01T12:00:00Z"}}"#,
      "start-codable":
        #"{ "method": "\#(trials)StartTrial", "parameters": { "subject": "b\u00e9", "duration": "1d 12h" } }"#,
      "get-fast": #"{"method":"\#(trials)GetTrial","parameters":{"id":"000000000000002a"}}"#,
      "get-subject": #"{"method":"\#(trials)GetTrial","parameters":{"subject":"acme-42"}}"#,
      "list":
        #"{"method":"\#(trials)ListTrials","parameters":{"state":"active","expiringWithin":"3d","limit":10,"label":"tier=pro"}}"#,
      "extend":
        #"{"method":"\#(trials)ExtendTrial","parameters":{"id":"2a","by":"7d","labels":{"tier":"enterprise","customer":null}}}"#,
      "end": #"{"method":"\#(trials)EndTrial","parameters":{"id":"2a","outcome":"converted"}}"#,
      "pause": #"{"method":"\#(trials)PauseTrial","parameters":{"subject":"acme-42"}}"#,
      "resume": #"{"method":"\#(trials)ResumeTrial","parameters":{"id":"2a"}}"#,
      "plan": #"{"method":"\#(trials)GetPlan","parameters":{"id":"2a"}}"#,
      "simulate": #"{"method":"\#(trials)Simulate","parameters":{"at":"+3d"}}"#,
      "status": #"{"method":"\#(trials)GetStatus"}"#,
      "outlook": #"{"method":"\#(trials)GetOutlook","parameters":{"within":["24h","7d","1d 12h"]}}"#,
      "plans": #"{"method":"\#(trials)ListPlans","parameters":{"activeTrials":true}}"#,
      "stats-variants":
        #"{"method":"\#(trials)GetStats","parameters":{"from":"2026-01-01","plan":"pro","byVariant":true}}"#,
      "grant-again":
        #"{"method":"\#(trials)GrantAgain","parameters":{"subject":"bob@example.com","plan":"pro"}}"#,
      "stats":
        #"{"method":"\#(trials)GetStats","parameters":{"from":"2026-01-01","to":"2026-11-27","by":"week","plan":"pro"}}"#,
      "export": #"{"method":"\#(trials)Export","parameters":{"after":"2a","limit":500}}"#,
      "export-uses":
        #"{"method":"\#(trials)Export","parameters":{"uses":true,"afterUse":"plan:pro bob@example.com"}}"#,
      "watch": #"{"method":"\#(trials)Watch","parameters":{"after":"00000000000004d0"},"more":true}"#,
      "event-log": #"{"method":"\#(trials)GetEventLog","parameters":{}}"#,
      "create-consumer":
        #"{"method":"\#(trials)CreateConsumer","parameters":{"name":"mailer","after":"0000000000000000"}}"#,
      "acknowledge":
        #"{"method":"\#(trials)AcknowledgeEvent","parameters":{"consumer":"mailer","cursor":"00000000000004d1"},"oneway":true}"#,
      "consumers":
        #"{"method":"\#(trials)ListConsumers"}{"method":"\#(trials)GetConsumer","parameters":{"name":"mailer"}}"#,
      "remove-consumer": #"{"method":"\#(trials)RemoveConsumer","parameters":{"name":"mailer"}}"#,
      "fleet": #"{"method":"\#(trials)GetFleet"}"#,
      "metrics":
        #"{"method":"io.systemd.Metrics.List","parameters":{"names":["io.trialwatch.trials"]},"more":true}"#,
      "describe": #"{"method":"io.systemd.Metrics.Describe","more":true}"#,
      "info": #"{"method":"org.varlink.service.GetInfo"}"#,
      "interface":
        #"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.trialwatch.Trials"}}"#,
      "unknown-method": #"{"method":"io.trialwatch.Trials.Frobnicate"}"#,
      "unknown-interface": #"{"method":"com.example.Nothing.Here","parameters":{}}"#,
      "unknown-parameter": #"{"method":"\#(trials)GetTrial","parameters":{"id":"2a","colour":"blue"}}"#,
      "wrong-type": #"{"method":"\#(trials)ListTrials","parameters":{"limit":"ten"}}"#,
      "not-json": #"{"method": "\#(trials)GetTrial", "parameters": {"id": "2a"#,
      "upgrade": #"{"method":"\#(trials)GetStatus","upgrade":true}"#,
      "no-more": #"{"method":"\#(trials)Watch"}"#,
    ]
    var seeds: [String: [UInt8]] = [:]
    for (name, call) in calls {
      // Messages are NUL-terminated; a seed of several is a pipelined stream.
      let messages = call.replacing("}{", with: "}\0{")
      seeds["seed-\(name)"] = Array(messages.utf8) + [0]
    }
    seeds["seed-pipelined"] = calls.keys.sorted().prefix(12).flatMap { seeds["seed-\($0)"]! }
    seeds["seed-unterminated"] = Array(calls["get-fast"]!.utf8)
    return seeds
  }

  static func configuration() -> [String: [UInt8]] {
    let main = """
      [Trials]
      DefaultLength=5d
      DefaultReminders=3d, 1d
      ComplianceWarnings=yes
      Retention=400d

      [CatchUp]
      LateReminders=latest
      ReminderGrace=1h
      LateThreshold=1s

      [Events]
      Retention=90d
      MaxRetention=365d

      [Daemon]
      StateDirectory=/var/lib/trialwatch
      Socket=/run/trialwatch/io.trialwatch
      SocketGroup=trialwatch
      ControlGroup=trialwatch-admin
      MaxConnections=4096
      MaxConnectionsPerUser=1024
      ReservedConnections=64
      IdleTimeout=5min
      MessageTimeout=10s
      LogLevel=info
      LogTarget=auto

      [Journal]
      RateLimitIntervalSec=30s
      RateLimitBurst=9000

      [Store]
      Backend=lmdb

      """
    let files: [String: String] = [
      "sample": main,
      "drop-ins": main + """
        ==> trialwatch.conf.d/10-length.conf <==
        [Trials]
        DefaultLength=14d
        DefaultReminders=7d, \\
          1d
        ==> trialwatch.conf.d/20-reset.conf <==
        [Trials]
        DefaultReminders=
        ; a comment
        ==> trialwatch.conf.d/30-masked.conf -> /dev/null <==
        ==> trialwatch.conf.d/notes.txt <==
        [Trials]
        DefaultLength=oops
        """,
      "plans": """
      [Trials]
      DefaultLength=30d
      ==> plans/pro.conf <==
      [Plan]
      Description=Pro, two weeks
      Length=14d
      Reminders=7d, 1d
      Labels=tier=pro "team=growth hacking"
      MaxPause=30d
      RemindAfterCancel=yes
      ==> plans/enterprise.conf <==
      [Plan]
      Length=30d
      Reminders=none
      ComplianceWarnings=no
      Once=all
      SubjectKey=email
      OnceFor=180d
      ==> plans/basic.conf <==
      [Plan]
      Once=plan
      SubjectKey=casefold
      ==> plans/Bad Name.conf <==
      [Plan]
      Length=1d
      """,
      "variants": """
      ==> plans/pro.conf <==
      [Plan]
      Length=14d
      Reminders=3d, 1d
      Grace=3d
      MaxLength=60d

      [Variant]
      Name=two-weeks

      [Variant]
      Name=month
      Weight=3
      Length=30d
      Reminders=7d, 1d
      Grace=0
      Labels=offer=month
      ==> plans/bad.conf <==
      [Plan]
      Length=14d
      [Variant]
      Weight=0
      [Variant]
      Name=Month
      Length=90d
      [variant]
      Name=month
      Name=month
      """,
      "fleet": """
      [Store]
      Backend=postgresql

      [PostgreSQL]
      Connection=host=db.example.org dbname=trialwatch user=trialwatch
      NodeName=node-1
      Shards=256
      """,
      "mistakes": """
      DefaultLength=5d
      [trials]
      DefaultLenght=5d
      [Trials
      DefaultLength=-3d
      DefaultReminders=2d, 2d, 9d
      [Daemon]
      MaxConnections=0
      ReservedConnections=5000
      LogLevel=loud
      [Store]
      Backend=postgresql
      """,
      "consumer": """
      ==> consumers/mailer.conf <==
      COMMAND='/usr/local/bin/trialwatch-mail --to ops@example.org'
      CONSUME_OPTIONS=--from-oldest --timeout 1min --retry-max 30min
      ==> consumers/hook.conf <==
      # a webhook
      COMMAND="curl --fail --data-binary @- https://hooks.example.org/trialwatch"
      CONSUME_OPTIONS=--after 00000000000004d0 --retry-initial 10s --retry-max 1s
      """,
    ]
    return files.reduce(into: [:]) { seeds, file in seeds["seed-\(file.key)"] = Array(file.value.utf8) }
  }

  static func text() -> [String: [UInt8]] {
    let forms = TextTarget.forms.map(\.name)
    let texts: [String: [String]] = [
      "rfc3339": [
        "2025-03-01T12:00:00Z", "2025-03-01t12:00:00.250z", "2024-02-29 23:59:59.9996+05:30",
        "1970-01-01T00:00:00-00:00", "9999-12-31T23:59:59.999999999Z",
      ],
      "span": ["5d", "1d 12h", "1h30min", "90", "0.5s", "2w 3d 4h 5min 6s 7ms 8us", "1.5µs", "1y 1M"],
      "trial-id": ["000000000000002a", "2A", "ffffffffffffffff"],
      "event-id": [
        "000000000000002a-r1-expiry", "000000000000002a-r3-reminder-86400000ms", "2a-r0-paused-5000ms",
      ],
      "cursor": ["00000000000004d1", "0000000000000000"],
      "use-position": ["all alice@example.com", "plan:pro bob", "plan:pro "],
      "calendar-day": ["2026-11-27", "2026-02-29", "2026-11-27T23:30:00-02:00"],
      "simulate-target": ["+3d", "2026-12-01T00:00:00Z", "+0"],
      "precise-time": ["2025-03-01T12:00:00.250000Z", "2025-03-01T12:00:00.1234567+01:00"],
      "export": [exportFile(), #"{"trial":{"id":"2a","subject":"x","state":"expired"}}"#],
    ]
    var seeds: [String: [UInt8]] = [:]
    for (form, values) in texts {
      guard let index = forms.firstIndex(of: form) else { continue }
      for (number, value) in values.enumerated() {
        seeds["seed-\(form)-\(number + 1)"] = [UInt8(index)] + Array(value.utf8)
      }
    }
    return seeds
  }

  /// An export of a paused trial with labels and a plan, its ledger (a reminder fired and
  /// delivered, one skipped beyond the grace, the pause) and its use, as `trialwatchctl export`
  /// writes it.
  static func exportFile() -> String {
    let start = Date(timeIntervalSince1970: 1_763_380_800)  // 2025-11-17T12:00:00Z
    let day: TimeInterval = 86_400
    let id = TrialID(42)
    let labels = (try? TrialLabels(["tier": "pro", "customer": "c-991"])) ?? .none
    let trial = Trial(
      id: id, attributes: TrialAttributes(subject: "acme-42", plan: "pro", labels: labels),
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(14 * day)), state: .paused,
      reminders: (try? ReminderSchedule([.days(7), .days(1)])) ?? .none,
      pause: TrialPause(since: start.addingTimeInterval(9 * day)))
    func event(_ kind: EventKind, due: TimeInterval) -> TrialEvent {
      TrialEvent(id: EventID(trialID: id, revision: 1, kind: kind), due: start.addingTimeInterval(due))
    }
    let entries = [
      LedgerEntry(
        event: event(.reminder(before: .days(7)), due: 7 * day), outcome: .fired,
        takenAt: start.addingTimeInterval(7 * day + 0.0015), isLate: false,
        deliveredAt: start.addingTimeInterval(7 * day + 0.25)),
      LedgerEntry(
        event: event(.paused(left: .days(5)), due: 9 * day), outcome: .fired,
        takenAt: start.addingTimeInterval(9 * day), isLate: false),
      LedgerEntry(
        event: event(.reminder(before: .days(1)), due: 13 * day),
        outcome: .skipped(.beyondGrace(lateness: .seconds(7200), grace: .seconds(3600))),
        takenAt: start.addingTimeInterval(13 * day + 7200), isLate: true),
    ]
    let use = SubjectUse(
      scope: .plan("pro"), key: "acme-42", subject: "acme-42", plan: "pro", firstStartedAt: start, trial: id,
      lastStartedAt: start.addingTimeInterval(270 * day), lastTrial: TrialID(id.rawValue + 1))
    return (ExportRecord.records(of: trial, ledger: entries) + [ExportRecord(use)]).map(\.jsonLine)
      .joined(separator: "\n") + "\n"
  }

  /// Every record of the store target's fixture.
  static func storeRecords() -> [String: [UInt8]] {
    var seeds: [String: [UInt8]] = [:]
    StoreFileTarget.withFixture { raw in
      for (code, database) in StoreRecordCoding.databases.enumerated() {
        for (number, key) in ((try? raw.keys(database)) ?? []).enumerated() {
          guard let value = (try? raw.get(database, key)) ?? nil, key.count < 256 else { continue }
          seeds["seed-\(database)-\(number + 1)"] = [UInt8(code), UInt8(key.count)] + key + value
        }
      }
    }
    return seeds
  }

  /// The fixture as it is, and a few changes of each kind.
  static func storeFile() -> [String: [UInt8]] {
    let index = { (name: String) in UInt8(StoreFileTarget.databases.firstIndex(of: name)!) }
    let schema = Array("schema".utf8)
    return [
      "seed-fixture": [],
      "seed-delete-subject": [2, index("subjects"), 0],
      "seed-trial-state": [3, index("trials"), 1, 1, 1, 1],
      "seed-cut-ledger": [4, index("ledger"), 0, 10],
      "seed-cut-event": [4, index("events"), 1, 30, 2, index("outbox"), 0],
      "seed-meta-schema": [0, index("meta"), UInt8(schema.count)] + schema + [0, 4, 10, 0, 0, 0],
      "seed-foreign-database": [0, index("main"), 5] + Array("other".utf8) + [0, 1, 7],
      "seed-consumer-ahead": [3, index("consumers"), 0, 2, 8, 0xff, 0xff, 0, 0, 0, 0, 0, 0],
    ]
  }
}
