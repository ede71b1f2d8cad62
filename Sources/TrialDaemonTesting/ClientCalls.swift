import TrialControl
import TrialCore

// Shorthands for tests: each is one typed call through the method's declaration.
extension VarlinkClient {
  public func startTrial(_ parameters: StartTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try call(Trials.startTrial, parameters).trial
  }

  /// Starts a trial of `subject`, `days` long, with a reminder each of `reminders` days before
  /// its end.
  public func startTrial(_ subject: String, days: Double, reminders: [Double]) throws -> TrialObject {
    try startTrial(
      StartTrialParameters(
        subject: subject, duration: .seconds(days * 86_400),
        reminders: try ReminderSchedule(reminders.map { .seconds($0 * 86_400) })))
  }

  public func getTrial(_ parameters: GetTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try call(Trials.getTrial, parameters).trial
  }

  public func listTrials(_ parameters: ListTrialsParameters = ListTrialsParameters())
    throws(VarlinkClientError)
    -> ListTrialsReply
  {
    try call(Trials.listTrials, parameters)
  }

  public func extendTrial(_ parameters: ExtendTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try call(Trials.extendTrial, parameters).trial
  }

  public func endTrial(_ parameters: EndTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try call(Trials.endTrial, parameters).trial
  }

  public func getPlan(_ parameters: GetPlanParameters) throws(VarlinkClientError) -> [EventObject] {
    try call(Trials.getPlan, parameters).events
  }

  public func simulate(_ parameters: SimulateParameters) throws(VarlinkClientError) -> [EventObject] {
    try call(Trials.simulate, parameters).events
  }

  public func getStatus() throws(VarlinkClientError) -> GetStatusReply { try call(Trials.getStatus) }

  public func getInfo() throws(VarlinkClientError) -> GetInfoReply { try call(VarlinkService.getInfo) }

  public func interfaceDescription(_ interface: String) throws(VarlinkClientError) -> String {
    try call(VarlinkService.getInterfaceDescription, GetInterfaceDescriptionParameters(interface: interface))
      .description
  }

  /// Calls `method` by name with parameters as JSON text; throws the error it replies with.
  @discardableResult
  public func call(_ method: String, _ parameters: String = "{}") throws(VarlinkClientError) -> VarlinkReply {
    try sendBytes(message(method, parameters))
    let reply = try receive()
    _ = try decode(reply, as: ControlError.Parameters.self)
    return reply
  }
}

/// A call as sent, with its NUL: `method` with `parameters` as JSON text.
public func message(_ method: String, _ parameters: String = "{}", oneway: Bool = false, more: Bool = false)
  -> [UInt8]
{
  var text = #"{"method":""# + method + #"","parameters":"# + parameters
  if oneway { text += #","oneway":true"# }
  if more { text += #","more":true"# }
  return Array((text + "}").utf8) + [0]
}
