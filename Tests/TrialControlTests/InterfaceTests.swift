import Foundation
import Testing
import TrialControl
import TrialCore

@Suite struct InterfaceTests {
  static let sources = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Sources/TrialControl")

  /// The .varlink files are the source of truth; the served descriptions are them, byte for
  /// byte (embedded by the package manager at build time).
  @Test func embeddedDescriptions_AreTheFiles() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
      .filter { $0.hasSuffix(".varlink") }.sorted()
    #expect(
      files == [
        "io.systemd.Metrics.varlink", "io.trialwatch.Trials.varlink", "io.trialwatch.varlink",
        "org.varlink.service.varlink",
      ])
    for file in files {
      let name = String(file.dropLast(".varlink".count))
      let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
      #expect(VarlinkInterfaces.descriptions[name] == text, "\(file)")
      #expect(text.contains("\ninterface \(name)\n"))
    }
    #expect(Set(VarlinkInterfaces.descriptions.keys) == Set(VarlinkInterfaces.all))
  }

  /// Each declared method is in the definitions, with the parameters its type encodes.
  @Test func methodDeclarations_AgreeWithTheDefinitions() throws {
    let id = TrialID(1)
    var getTrial = GetTrialParameters(id: id)
    getTrial.subject = "s"
    var extendTrial = ExtendTrialParameters(id: id, change: .by(.days(1)), labels: ["tier": nil])
    extendTrial.endsAt = Date(timeIntervalSince1970: 1_750_000_000)
    // Both keys, to compare with the declaration (validate refuses the pair).
    var target = TrialTargetParameters(.id(id))
    target.subject = "s"
    var cancel = CancelTrialParameters(.id(id), atEnd: true, labels: ["why": "price"])
    cancel.subject = "s"
    let samples: [(String, MethodKind, any Encodable)] = [
      (
        Trials.startTrial.qualifiedName, Trials.startTrial.kind,
        StartTrialParameters(
          subject: "s", duration: .days(1), endsAt: extendTrial.endsAt, reminders: .default,
          labels: ["tier": "pro"], plan: "pro", variant: "long")
      ),
      (Trials.getTrial.qualifiedName, Trials.getTrial.kind, getTrial),
      (
        Trials.listTrials.qualifiedName, Trials.listTrials.kind,
        ListTrialsParameters(
          state: .active, expiringWithin: .days(1), limit: 1, after: id, label: "tier=pro", plan: "pro")
      ),
      (Trials.listPlans.qualifiedName, Trials.listPlans.kind, ListPlansParameters(activeTrials: false)),
      (
        Trials.grantAgain.qualifiedName, Trials.grantAgain.kind,
        GrantAgainParameters(subject: "ada@example.com", plan: "pro")
      ),
      (Trials.extendTrial.qualifiedName, Trials.extendTrial.kind, extendTrial),
      (
        Trials.endTrial.qualifiedName, Trials.endTrial.kind,
        EndTrialParameters(id: id, outcome: .converted, labels: ["tier": "x"])
      ),
      (Trials.pauseTrial.qualifiedName, Trials.pauseTrial.kind, target),
      (Trials.resumeTrial.qualifiedName, Trials.resumeTrial.kind, target),
      (Trials.cancelTrial.qualifiedName, Trials.cancelTrial.kind, cancel),
      (Trials.uncancelTrial.qualifiedName, Trials.uncancelTrial.kind, target),
      (Trials.getPlan.qualifiedName, Trials.getPlan.kind, GetPlanParameters(id: id)),
      (Trials.simulate.qualifiedName, Trials.simulate.kind, SimulateParameters(at: .fromNow(.days(1)))),
      (Trials.getStatus.qualifiedName, Trials.getStatus.kind, NoParameters()),
      (
        Trials.getOutlook.qualifiedName, Trials.getOutlook.kind,
        GetOutlookParameters(within: [try GivenSpan(parsing: "24h")])
      ),
      (Trials.getFleet.qualifiedName, Trials.getFleet.kind, NoParameters()),
      (
        Trials.getStats.qualifiedName, Trials.getStats.kind,
        GetStatsParameters(
          from: CalendarDay(20_000), to: CalendarDay(20_070), by: .week, plan: "pro", byVariant: true)
      ),
      (
        Trials.export.qualifiedName, Trials.export.kind,
        ExportParameters(
          after: id, limit: 10, uses: true, afterUse: SubjectUse.Position(scope: .all, key: "k"))
      ),
      (Trials.watch.qualifiedName, Trials.watch.kind, WatchParameters(after: EventCursor(7))),
      (Trials.getEventLog.qualifiedName, Trials.getEventLog.kind, NoParameters()),
      (
        Trials.createConsumer.qualifiedName, Trials.createConsumer.kind,
        CreateConsumerParameters(name: "mail", after: EventCursor(7))
      ),
      (Trials.getConsumer.qualifiedName, Trials.getConsumer.kind, ConsumerNameParameters(name: "mail")),
      (Trials.listConsumers.qualifiedName, Trials.listConsumers.kind, NoParameters()),
      (
        Trials.acknowledgeEvent.qualifiedName, Trials.acknowledgeEvent.kind,
        AcknowledgeEventParameters(consumer: "mail", cursor: EventCursor(7))
      ),
      (Trials.removeConsumer.qualifiedName, Trials.removeConsumer.kind, ConsumerNameParameters(name: "mail")),
      (Trials.listWebhooks.qualifiedName, Trials.listWebhooks.kind, NoParameters()),
      (
        Trials.getWebhookAttempts.qualifiedName, Trials.getWebhookAttempts.kind,
        GetWebhookAttemptsParameters(name: "billing", event: "0000000000000007")
      ),
      (Trials.enableWebhook.qualifiedName, Trials.enableWebhook.kind, WebhookNameParameters(name: "billing")),
      (
        Trials.replayWebhook.qualifiedName, Trials.replayWebhook.kind,
        ReplayWebhookParameters(name: "billing", after: EventCursor(1), until: EventCursor(7))
      ),
      (Trials.testWebhook.qualifiedName, Trials.testWebhook.kind, WebhookNameParameters(name: "billing")),
      (Trials.serveWebhooks.qualifiedName, Trials.serveWebhooks.kind, NoParameters()),
      (
        Trials.reportWebhooks.qualifiedName, Trials.reportWebhooks.kind,
        ReportWebhooksParameters(outcomes: [])
      ),
      (
        SystemdMetrics.list.qualifiedName, SystemdMetrics.list.kind,
        MetricsParameters(names: ["io.trialwatch.trials"])
      ),
      (
        SystemdMetrics.describe.qualifiedName, SystemdMetrics.describe.kind,
        MetricsParameters(names: ["io.trialwatch.trials"])
      ),
      (VarlinkService.getInfo.qualifiedName, VarlinkService.getInfo.kind, NoParameters()),
      (
        VarlinkService.getInterfaceDescription.qualifiedName, VarlinkService.getInterfaceDescription.kind,
        GetInterfaceDescriptionParameters(interface: "x")
      ),
    ]
    #expect(Set(samples.map(\.0)) == Set(VarlinkInterfaces.parameterNames.keys), "every declared method")
    for (method, _, sample) in samples {
      let encoded = try JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(sample))
      let keys = Set((encoded as? [String: Any])?.keys.map { $0 } ?? [])
      #expect(keys == VarlinkInterfaces.parameterNames[method], "\(method)")
    }
    #expect(
      Trials.startTrial.kind == .change && Trials.extendTrial.kind == .change
        && Trials.endTrial.kind == .change && Trials.grantAgain.kind == .change
        && Trials.pauseTrial.kind == .change && Trials.resumeTrial.kind == .change
        && Trials.cancelTrial.kind == .change && Trials.uncancelTrial.kind == .change)
    #expect(Trials.watch.kind == .stream)
    #expect(Trials.serveWebhooks.kind == .changeStream)
    #expect(SystemdMetrics.list.kind == .replies && SystemdMetrics.describe.kind == .replies)
    #expect(samples.filter { $0.1 == .change }.count == 15)
  }

  @Test func parameterNames_OfAMethod_AreReadFromItsDeclaration() {
    #expect(
      VarlinkInterfaces.parameterNames["io.trialwatch.Trials.ListTrials"] == [
        "state", "expiringWithin", "limit", "after", "label", "plan",
      ])
    #expect(VarlinkInterfaces.parameterNames["io.trialwatch.Trials.GetStatus"] == [])
    #expect(VarlinkInterfaces.parameterNames["org.varlink.service.GetInterfaceDescription"] == ["interface"])
  }

  /// Every error the code sends is declared in the interface files.
  @Test func errorNames_AreDeclared() throws {
    let errors = try #require(VarlinkInterfaces.descriptions[VarlinkInterfaces.errors])
    let service = try #require(VarlinkInterfaces.descriptions[VarlinkService.interface])
    let names = [
      ControlError.Name.trialNotFound, ControlError.Name.subjectAlreadyActive,
      ControlError.Name.trialNotActive, ControlError.Name.permissionDenied, ControlError.Name.invalidMessage,
      ControlError.Name.messageTooLarge, ControlError.Name.tooManyConnections,
      ControlError.Name.internalError,
      ControlError.Name.interfaceNotFound, ControlError.Name.methodNotFound,
      ControlError.Name.invalidParameter,
      ControlError.Name.expectedMore, ControlError.Name.webhookNotFound,
      ControlError.Name.webhookSenderUnavailable, ControlError.Name.webhookSenderActive,
    ]
    for name in names {
      let dot = try #require(name.lastIndex(of: "."))
      let interface = String(name[..<dot])
      let member = String(name[name.index(after: dot)...])
      let text = interface == VarlinkInterfaces.errors ? errors : service
      #expect(interface == VarlinkInterfaces.errors || interface == VarlinkService.interface)
      #expect(text.contains("\nerror \(member) ("), "\(name) not declared")
    }
  }
}
