/// The Varlink interfaces the daemon offers, and their method names.
public enum VarlinkInterfaces {
  /// Introspection, offered by every Varlink service.
  public static let service = "org.varlink.service"
  /// The errors shared by trialwatch's interfaces.
  public static let errors = "io.trialwatch"
  /// Trials: the methods applications and operators call.
  public static let trials = "io.trialwatch.Trials"

  /// In the order GetInfo lists them.
  public static let all = [service, errors, trials]

  /// The default socket under systemd.
  public static let defaultSocketPath = "/run/trialwatch/io.trialwatch"
}

/// The methods of `io.trialwatch.Trials`.
public enum TrialsMethod: String, CaseIterable, Sendable {
  case startTrial = "StartTrial"
  case getTrial = "GetTrial"
  case listTrials = "ListTrials"
  case extendTrial = "ExtendTrial"
  case endTrial = "EndTrial"
  case getPlan = "GetPlan"
  case simulate = "Simulate"
  case getStatus = "GetStatus"
  case watch = "Watch"

  /// The qualified name, `io.trialwatch.Trials.StartTrial`.
  public var qualifiedName: String { "\(VarlinkInterfaces.trials).\(rawValue)" }

  /// Methods that change trials, and so need authorization.
  public var changesTrials: Bool {
    switch self {
    case .startTrial, .extendTrial, .endTrial: true
    default: false
    }
  }

  /// Methods that reply more than once, and so need `more`.
  public var streams: Bool { self == .watch }
}

/// The methods of `org.varlink.service`.
public enum ServiceMethod: String, CaseIterable, Sendable {
  case getInfo = "GetInfo"
  case getInterfaceDescription = "GetInterfaceDescription"

  public var qualifiedName: String { "\(VarlinkInterfaces.service).\(rawValue)" }
}
