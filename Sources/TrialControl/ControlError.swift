import TrialCore

/// A Varlink error reply: its qualified name and parameters. The daemon answers with these;
/// clients receive them, including names this version does not know.
public struct ControlError: Error, Hashable, Sendable, CustomStringConvertible {
  public let name: String
  public let parameters: JSONObject

  public init(name: String, parameters: JSONObject = [:]) {
    self.name = name
    self.parameters = parameters
  }

  /// The error names this service uses.
  public enum Name {
    public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
    public static let methodNotFound = "org.varlink.service.MethodNotFound"
    public static let methodNotImplemented = "org.varlink.service.MethodNotImplemented"
    public static let invalidParameter = "org.varlink.service.InvalidParameter"
    public static let expectedMore = "org.varlink.service.ExpectedMore"
    public static let trialNotFound = "io.trialwatch.TrialNotFound"
    public static let subjectAlreadyActive = "io.trialwatch.SubjectAlreadyActive"
    public static let trialNotActive = "io.trialwatch.TrialNotActive"
    public static let permissionDenied = "io.trialwatch.PermissionDenied"
    public static let invalidMessage = "io.trialwatch.InvalidMessage"
    public static let messageTooLarge = "io.trialwatch.MessageTooLarge"
    public static let tooManyConnections = "io.trialwatch.TooManyConnections"
    public static let internalError = "io.trialwatch.InternalError"
  }

  // MARK: Standard Varlink errors

  public static func interfaceNotFound(_ interface: String) -> ControlError {
    ControlError(name: Name.interfaceNotFound, parameters: ["interface": .string(interface)])
  }

  public static func methodNotFound(_ method: String) -> ControlError {
    ControlError(name: Name.methodNotFound, parameters: ["method": .string(method)])
  }

  public static func methodNotImplemented(_ method: String) -> ControlError {
    ControlError(name: Name.methodNotImplemented, parameters: ["method": .string(method)])
  }

  /// `parameter` names the offending parameter, as the standard error requires; `problem`
  /// (an addition the standard allows clients to ignore) says what is wrong with it.
  public static func invalidParameter(_ parameter: String, problem: String? = nil) -> ControlError {
    var parameters: JSONObject = ["parameter": .string(parameter)]
    parameters.set("problem", problem.map(JSONValue.string))
    return ControlError(name: Name.invalidParameter, parameters: parameters)
  }

  public static func invalidParameter(_ error: JSONShapeError) -> ControlError {
    invalidParameter(error.field, problem: error.description)
  }

  public static func expectedMore() -> ControlError {
    ControlError(name: Name.expectedMore)
  }

  // MARK: io.trialwatch errors

  public static func trialNotFound(id: TrialID? = nil, subject: String? = nil) -> ControlError {
    var parameters = JSONObject()
    parameters.set("id", id.map { .string($0.description) })
    parameters.set("subject", subject.map(JSONValue.string))
    return ControlError(name: Name.trialNotFound, parameters: parameters)
  }

  public static func subjectAlreadyActive(subject: String, existing: TrialID) -> ControlError {
    ControlError(
      name: Name.subjectAlreadyActive,
      parameters: ["subject": .string(subject), "id": .string(existing.description)])
  }

  public static func trialNotActive(_ id: TrialID, state: TrialState) -> ControlError {
    ControlError(
      name: Name.trialNotActive,
      parameters: ["id": .string(id.description), "state": .string(state.rawValue)])
  }

  public static func permissionDenied(method: String, uid: UInt32) -> ControlError {
    ControlError(
      name: Name.permissionDenied, parameters: ["method": .string(method), "uid": .int(Int64(uid))])
  }

  public static func invalidMessage(_ problem: String) -> ControlError {
    ControlError(name: Name.invalidMessage, parameters: ["problem": .string(problem)])
  }

  public static func messageTooLarge(limit: Int) -> ControlError {
    ControlError(name: Name.messageTooLarge, parameters: ["limit": .int(Int64(limit))])
  }

  public static func tooManyConnections(limit: Int) -> ControlError {
    ControlError(name: Name.tooManyConnections, parameters: ["limit": .int(Int64(limit))])
  }

  public static func internalError(_ message: String) -> ControlError {
    ControlError(name: Name.internalError, parameters: ["message": .string(message)])
  }

  /// The domain's refusal, as the error a client receives.
  public init(_ error: TrialError) {
    switch error.code {
    case .notFound(let id, let subject):
      self = .trialNotFound(id: id, subject: subject)
    case .subjectAlreadyActive(let subject, let existing):
      self = .subjectAlreadyActive(subject: subject, existing: existing)
    case .notActive(let id, let state):
      self = .trialNotActive(id, state: state)
    case .invalidParameter(let name, let problem):
      self = .invalidParameter(name, problem: problem)
    case .idSpaceExhausted:
      self = .internalError(error.description)
    }
  }

  // MARK: Reading

  private func text(_ key: String) -> String? {
    if case .string(let value)? = parameters[key] { return value }
    return nil
  }

  /// The error in words, naming what was wrong.
  public var description: String {
    switch name {
    case Name.interfaceNotFound:
      return "the service has no interface \"\(text("interface") ?? "?")\""
    case Name.methodNotFound:
      return "the service has no method \"\(text("method") ?? "?")\""
    case Name.methodNotImplemented:
      return "method \"\(text("method") ?? "?")\" is not implemented"
    case Name.invalidParameter:
      let parameter = text("parameter") ?? "?"
      if let problem = text("problem") {
        return problem.hasPrefix(parameter)
          ? "invalid parameter \(problem)" : "invalid parameter \(parameter): \(problem)"
      }
      return "invalid parameter \(parameter)"
    case Name.expectedMore:
      return "the method streams its replies and must be called with \"more\""
    case Name.trialNotFound:
      if let id = text("id") { return "no trial with id \(id)" }
      if let subject = text("subject") { return "no active trial for subject \"\(subject)\"" }
      return "no such trial"
    case Name.subjectAlreadyActive:
      return "subject \"\(text("subject") ?? "?")\" already has an active trial (id \(text("id") ?? "?"))"
    case Name.trialNotActive:
      return "trial \(text("id") ?? "?") is not active (it is \(text("state") ?? "?"))"
    case Name.permissionDenied:
      var uid = "?"
      if case .int(let value)? = parameters["uid"] { uid = String(value) }
      return
        "permission denied: \(text("method") ?? "this call") changes trials and needs root, "
        + "the daemon's user "
        + "or the control group (caller uid \(uid))"
    case Name.invalidMessage:
      return "invalid message: \(text("problem") ?? "?")"
    case Name.messageTooLarge:
      return "message too large (limit \(parameters["limit"]?.jsonText ?? "?") bytes)"
    case Name.tooManyConnections:
      return "too many connections to the daemon (limit \(parameters["limit"]?.jsonText ?? "?"))"
    case Name.internalError:
      return "internal error: \(text("message") ?? "?")"
    default:
      return parameters.isEmpty ? name : "\(name) \(parameters.jsonText)"
    }
  }
}
