/// Typed calls of `io.trialwatch.Trials` and `org.varlink.service` over a `VarlinkClient`.
public final class TrialsClient {
  public let connection: VarlinkClient

  public init(connection: VarlinkClient) {
    self.connection = connection
  }

  /// Connects to the daemon's socket at `path`.
  public convenience init(path: String) throws(VarlinkClientError) {
    self.init(connection: try VarlinkClient(path: path))
  }

  public func startTrial(_ parameters: StartTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try connection.call(TrialsMethod.startTrial.qualifiedName, parameters, as: TrialReply.self).trial
  }

  public func getTrial(_ parameters: GetTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try connection.call(TrialsMethod.getTrial.qualifiedName, parameters, as: TrialReply.self).trial
  }

  public func listTrials(_ parameters: ListTrialsParameters = ListTrialsParameters())
    throws(VarlinkClientError)
    -> ListTrialsReply
  {
    try connection.call(TrialsMethod.listTrials.qualifiedName, parameters, as: ListTrialsReply.self)
  }

  public func extendTrial(_ parameters: ExtendTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try connection.call(TrialsMethod.extendTrial.qualifiedName, parameters, as: TrialReply.self).trial
  }

  public func endTrial(_ parameters: EndTrialParameters) throws(VarlinkClientError) -> TrialObject {
    try connection.call(TrialsMethod.endTrial.qualifiedName, parameters, as: TrialReply.self).trial
  }

  public func getPlan(_ parameters: GetPlanParameters) throws(VarlinkClientError) -> [EventObject] {
    try connection.call(TrialsMethod.getPlan.qualifiedName, parameters, as: EventsReply.self).events
  }

  public func simulate(_ parameters: SimulateParameters) throws(VarlinkClientError) -> [EventObject] {
    try connection.call(TrialsMethod.simulate.qualifiedName, parameters, as: EventsReply.self).events
  }

  public func getStatus() throws(VarlinkClientError) -> GetStatusReply {
    try connection.call(TrialsMethod.getStatus.qualifiedName, NoParameters(), as: GetStatusReply.self)
  }

  /// Streams events: `body` is called once the watch is in place (with nil), then with each
  /// event, until it returns false.
  public func watch(_ body: (EventObject?) throws -> Bool) throws {
    try connection.stream(TrialsMethod.watch.qualifiedName) { parameters in
      try body(try connection.decode(parameters, as: WatchReply.self).event)
    }
  }

  public func getInfo() throws(VarlinkClientError) -> GetInfoReply {
    try connection.call(ServiceMethod.getInfo.qualifiedName, NoParameters(), as: GetInfoReply.self)
  }

  public func interfaceDescription(_ interface: String) throws(VarlinkClientError) -> String {
    try connection.call(
      ServiceMethod.getInterfaceDescription.qualifiedName,
      GetInterfaceDescriptionParameters(interface: interface),
      as: GetInterfaceDescriptionReply.self
    ).description
  }
}
