import TrialControl

/// A call, understood: answered by the server itself, handed to the backend, or a Watch.
enum ControlRequest: Sendable {
  /// Answered without the backend (introspection).
  case reply(JSONObject)
  case startTrial(StartTrialParameters)
  case getTrial(GetTrialParameters)
  case listTrials(ListTrialsParameters)
  case extendTrial(ExtendTrialParameters)
  case endTrial(EndTrialParameters)
  case getPlan(GetPlanParameters)
  case simulate(SimulateParameters)
  case getStatus
  case watch

  /// Whether the request changes trials (and so goes through the engine's group commit).
  var changesTrials: Bool {
    switch self {
    case .startTrial, .extendTrial, .endTrial: true
    default: false
    }
  }
}

/// Turns a Varlink call into a request, or into the error to reply with: unknown interface or
/// method, invalid parameters, a missing `more`, or a caller who may not change trials.
/// Pure: no I/O, so every decision is testable on its own.
struct ControlRouter: Sendable {
  var info: GetInfoReply
  var authorizer: ControlAuthorizer

  func route(_ call: VarlinkCall, peer: PeerCredentials?) -> Result<ControlRequest, ControlError> {
    if call.upgrade {
      return .failure(
        .invalidParameter("upgrade", problem: "no method of this service upgrades the connection"))
    }
    switch call.interface {
    case VarlinkInterfaces.service:
      return routeService(call)
    case VarlinkInterfaces.trials:
      guard let method = TrialsMethod(rawValue: call.memberName) else {
        return .failure(.methodNotFound(call.method))
      }
      return routeTrials(method, call, peer: peer)
    case VarlinkInterfaces.errors:
      return .failure(.methodNotFound(call.method))
    default:
      return .failure(.interfaceNotFound(call.interface))
    }
  }

  private func routeService(_ call: VarlinkCall) -> Result<ControlRequest, ControlError> {
    guard let method = ServiceMethod(rawValue: call.memberName) else {
      return .failure(.methodNotFound(call.method))
    }
    do {
      switch method {
      case .getInfo:
        _ = try NoParameters(json: call.parameters)
        return .success(.reply(info.json))
      case .getInterfaceDescription:
        let parameters = try GetInterfaceDescriptionParameters(json: call.parameters)
        guard let description = VarlinkInterfaces.descriptions[parameters.interface] else {
          return .failure(.interfaceNotFound(parameters.interface))
        }
        return .success(.reply(GetInterfaceDescriptionReply(description: description).json))
      }
    } catch {
      return .failure(.invalidParameter(error))
    }
  }

  private func routeTrials(_ method: TrialsMethod, _ call: VarlinkCall, peer: PeerCredentials?)
    -> Result<ControlRequest, ControlError>
  {
    if method.streams && (!call.more || call.oneway) { return .failure(.expectedMore()) }
    // Refused callers learn nothing from their parameters being checked.
    if method.changesTrials {
      guard let peer, authorizer.mayChange(peer).permitted else {
        return .failure(.permissionDenied(method: call.method, uid: peer?.uid ?? UInt32.max))
      }
    }
    let request: ControlRequest
    do {
      let parameters = call.parameters
      switch method {
      case .startTrial: request = .startTrial(try StartTrialParameters(json: parameters))
      case .getTrial: request = .getTrial(try GetTrialParameters(json: parameters))
      case .listTrials: request = .listTrials(try ListTrialsParameters(json: parameters))
      case .extendTrial: request = .extendTrial(try ExtendTrialParameters(json: parameters))
      case .endTrial: request = .endTrial(try EndTrialParameters(json: parameters))
      case .getPlan: request = .getPlan(try GetPlanParameters(json: parameters))
      case .simulate: request = .simulate(try SimulateParameters(json: parameters))
      case .getStatus:
        _ = try NoParameters(json: parameters)
        request = .getStatus
      case .watch:
        _ = try NoParameters(json: parameters)
        request = .watch
      }
    } catch {
      return .failure(.invalidParameter(error))
    }
    return .success(request)
  }
}
