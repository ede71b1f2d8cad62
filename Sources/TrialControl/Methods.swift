import FoundationEssentials

/// How a method is served: whether it changes trials (and so needs authorization and goes
/// through the engine's group commit) and whether it streams its replies (and so needs `more`).
public enum MethodKind: Hashable, Sendable {
  case read
  case change
  case stream
  /// A stream that needs the rights of a change (the webhook sender's feed).
  case changeStream
  /// Answered at once with several replies (a call with `more`), the last without
  /// `continues`; the connection goes on taking calls (`io.systemd.Metrics.List`).
  case replies
}

extension MethodKind {
  /// Whether its replies stream (it needs `more` and takes over its connection).
  public var streams: Bool { self == .stream || self == .changeStream }
  /// Whether the caller needs the rights of a change.
  public var needsChangeRights: Bool { self == .change || self == .changeStream }
}

/// One Varlink method, declared once: its name, the types of its parameters and reply, and
/// its kind. The daemon routes by it, the client calls through it, trialwatchctl names it.
public struct VarlinkMethod<Parameters: VarlinkParameters, Reply: Codable & Sendable>: Sendable {
  public let interface: String
  public let name: String
  public let kind: MethodKind
  /// `io.trialwatch.Trials.StartTrial`: joined once, as the fast path compares every call with it.
  public let qualifiedName: String

  public init(_ interface: String, _ name: String, _ kind: MethodKind = .read) {
    self.interface = interface
    self.name = name
    self.kind = kind
    self.qualifiedName = "\(interface).\(name)"
  }
}

/// The parameters of a method. Decoding checks each value's type and form; `validate()`
/// checks what decoding cannot (ranges, one of two fields), naming the parameter at fault.
public protocol VarlinkParameters: Codable, Sendable {
  func validate() throws(WireProblem)
}

extension VarlinkParameters {
  public func validate() throws(WireProblem) {}
}

/// The parameters of a method that takes none.
public struct NoParameters: VarlinkParameters, Hashable {
  public init() {}
}

/// `org.varlink.service`: introspection, offered by every Varlink service.
public enum VarlinkService {
  public static let interface = "org.varlink.service"
  public static let getInfo = VarlinkMethod<NoParameters, GetInfoReply>(interface, "GetInfo")
  public static let getInterfaceDescription = VarlinkMethod<
    GetInterfaceDescriptionParameters, GetInterfaceDescriptionReply
  >(interface, "GetInterfaceDescription")
}

/// `io.trialwatch.Trials`: the methods applications and operators call.
public enum Trials {
  public static let interface = "io.trialwatch.Trials"
  public static let startTrial = VarlinkMethod<StartTrialParameters, TrialReply>(
    interface, "StartTrial", .change)
  public static let getTrial = VarlinkMethod<GetTrialParameters, TrialReply>(interface, "GetTrial")
  public static let listTrials = VarlinkMethod<ListTrialsParameters, ListTrialsReply>(interface, "ListTrials")
  public static let extendTrial = VarlinkMethod<ExtendTrialParameters, TrialReply>(
    interface, "ExtendTrial", .change)
  public static let endTrial = VarlinkMethod<EndTrialParameters, TrialReply>(interface, "EndTrial", .change)
  public static let pauseTrial = VarlinkMethod<TrialTargetParameters, TrialReply>(
    interface, "PauseTrial", .change)
  public static let resumeTrial = VarlinkMethod<TrialTargetParameters, TrialReply>(
    interface, "ResumeTrial", .change)
  public static let cancelTrial = VarlinkMethod<CancelTrialParameters, TrialReply>(
    interface, "CancelTrial", .change)
  public static let uncancelTrial = VarlinkMethod<TrialTargetParameters, TrialReply>(
    interface, "UncancelTrial", .change)
  public static let getPlan = VarlinkMethod<GetPlanParameters, EventsReply>(interface, "GetPlan")
  public static let simulate = VarlinkMethod<SimulateParameters, EventsReply>(interface, "Simulate")
  public static let getStatus = VarlinkMethod<NoParameters, GetStatusReply>(interface, "GetStatus")
  public static let getOutlook = VarlinkMethod<GetOutlookParameters, GetOutlookReply>(interface, "GetOutlook")
  public static let listPlans = VarlinkMethod<ListPlansParameters, ListPlansReply>(interface, "ListPlans")
  public static let grantAgain = VarlinkMethod<GrantAgainParameters, GrantAgainReply>(
    interface, "GrantAgain", .change)
  public static let getFleet = VarlinkMethod<NoParameters, GetFleetReply>(interface, "GetFleet")
  public static let getStats = VarlinkMethod<GetStatsParameters, GetStatsReply>(interface, "GetStats")
  public static let export = VarlinkMethod<ExportParameters, ExportReply>(interface, "Export")
  public static let watch = VarlinkMethod<WatchParameters, WatchReply>(interface, "Watch", .stream)
  public static let getEventLog = VarlinkMethod<NoParameters, GetEventLogReply>(interface, "GetEventLog")
  public static let createConsumer = VarlinkMethod<CreateConsumerParameters, ConsumerReply>(
    interface, "CreateConsumer", .change)
  public static let getConsumer = VarlinkMethod<ConsumerNameParameters, ConsumerReply>(
    interface, "GetConsumer")
  public static let listConsumers = VarlinkMethod<NoParameters, ListConsumersReply>(
    interface, "ListConsumers")
  public static let acknowledgeEvent = VarlinkMethod<AcknowledgeEventParameters, ConsumerReply>(
    interface, "AcknowledgeEvent", .change)
  public static let removeConsumer = VarlinkMethod<ConsumerNameParameters, EmptyReply>(
    interface, "RemoveConsumer", .change)
  public static let listWebhooks = VarlinkMethod<NoParameters, ListWebhooksReply>(interface, "ListWebhooks")
  public static let getWebhookAttempts = VarlinkMethod<GetWebhookAttemptsParameters, GetWebhookAttemptsReply>(
    interface, "GetWebhookAttempts")
  public static let enableWebhook = VarlinkMethod<WebhookNameParameters, WebhookEndpointReply>(
    interface, "EnableWebhook", .change)
  public static let replayWebhook = VarlinkMethod<ReplayWebhookParameters, WebhookEndpointReply>(
    interface, "ReplayWebhook", .change)
  public static let testWebhook = VarlinkMethod<WebhookNameParameters, TestWebhookReply>(
    interface, "TestWebhook", .change)
  public static let serveWebhooks = VarlinkMethod<NoParameters, ServeWebhooksReply>(
    interface, "ServeWebhooks", .changeStream)
  public static let reportWebhooks = VarlinkMethod<ReportWebhooksParameters, EmptyReply>(
    interface, "ReportWebhooks", .change)
}

/// The interfaces the daemon offers, with their definitions embedded from the `.varlink`
/// files beside this one (the source of truth, served verbatim by GetInterfaceDescription).
public enum VarlinkInterfaces {
  /// The errors shared by trialwatch's interfaces.
  public static let errors = "io.trialwatch"

  /// In the order GetInfo lists them.
  public static let all = [VarlinkService.interface, errors, Trials.interface, SystemdMetrics.interface]

  /// What the report socket offers (`trialwatch-report.socket`): the metrics only.
  public static let report = [VarlinkService.interface, SystemdMetrics.interface]

  /// The default socket under systemd.
  public static let defaultSocketPath = "/run/trialwatch/io.trialwatch"

  /// The interface definitions, by interface name, exactly as in the .varlink files.
  public static let descriptions: [String: String] = [
    VarlinkService.interface: String(decoding: PackageResources.org_varlink_service_varlink, as: UTF8.self),
    errors: String(decoding: PackageResources.io_trialwatch_varlink, as: UTF8.self),
    Trials.interface: String(decoding: PackageResources.io_trialwatch_Trials_varlink, as: UTF8.self),
    SystemdMetrics.interface: String(decoding: PackageResources.io_systemd_Metrics_varlink, as: UTF8.self),
  ]

  /// The parameter names of every method declared, by qualified method name: read from the
  /// definitions, so that a call naming any other parameter is refused.
  public static let parameterNames: [String: Set<String>] = {
    var names: [String: Set<String>] = [:]
    for (interface, text) in descriptions {
      // Comments may hold anything; only declarations count.
      let code = text.split(separator: "\n").filter { !$0.drop { $0 == " " }.hasPrefix("#") }
        .joined(separator: "\n")
      var rest = Substring(code)
      while let start = rest.firstRange(of: "\nmethod ") {
        rest = rest[start.upperBound...]
        guard let open = rest.firstIndex(of: "(") else { break }
        let method = String(rest[..<open].trimmingWhitespace())
        var depth = 0
        var field = ""
        var fields: Set<String> = []
        for character in rest[open...] {
          if character == "(" || character == "[" { depth += 1 }
          if character == ")" || character == "]" { depth -= 1 }
          if depth == 0 || (depth == 1 && character == ",") {
            if let colon = field.firstIndex(of: ":") {
              fields.insert(String(field[..<colon].trimmingWhitespace()))
            }
            field = ""
            if depth == 0 { break }
          } else if !(depth == 1 && character == "(") {
            field.append(character)
          }
        }
        names["\(interface).\(method)"] = fields
      }
    }
    return names
  }()
}

extension VarlinkInterfaces {
  /// The kind of every method the control socket offers, by qualified name: for a client that
  /// passes calls on without decoding them (the HTTP gateway), which must know what a call may do.
  /// The daemon's routes are checked against it in the tests.
  public static let methodKinds: [String: MethodKind] = {
    func entry<P, R>(_ method: VarlinkMethod<P, R>) -> (String, MethodKind) {
      (method.qualifiedName, method.kind)
    }
    let t = Trials.self
    return Dictionary(
      uniqueKeysWithValues: [
        entry(VarlinkService.getInfo), entry(VarlinkService.getInterfaceDescription),
        entry(SystemdMetrics.list), entry(SystemdMetrics.describe),
        entry(t.startTrial), entry(t.getTrial), entry(t.listTrials), entry(t.extendTrial), entry(t.endTrial),
        entry(t.pauseTrial), entry(t.resumeTrial), entry(t.cancelTrial), entry(t.uncancelTrial),
        entry(t.getPlan), entry(t.simulate), entry(t.getStatus),
        entry(t.getOutlook), entry(t.listPlans), entry(t.grantAgain), entry(t.getFleet), entry(t.getStats),
        entry(t.export),
        entry(t.watch), entry(t.getEventLog), entry(t.createConsumer), entry(t.getConsumer),
        entry(t.listConsumers), entry(t.acknowledgeEvent), entry(t.removeConsumer), entry(t.listWebhooks),
        entry(t.getWebhookAttempts), entry(t.enableWebhook), entry(t.replayWebhook), entry(t.testWebhook),
        entry(t.serveWebhooks), entry(t.reportWebhooks),
      ])
  }()
}
