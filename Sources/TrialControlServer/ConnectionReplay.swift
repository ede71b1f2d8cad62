import FoundationEssentials
import TrialControl

/// One control connection without a socket, for the fuzz targets (`TrialFuzzTargets`): the
/// bytes a client sends go through the connection's `ConnectionMachine` and the server's
/// `ControlRouter`, as `ControlConnection` sends them, with every call answered at once by the
/// caller instead of a handler. Not part of the public interface: `@_spi(Fuzzing) import
/// TrialDaemon` reaches it.
@_spi(Fuzzing)
public struct ConnectionReplay: Sendable {
  /// What the connection did, in order.
  public enum Step: Sendable {
    /// A call reached its handler: its method, its decoded and checked parameters.
    case performed(method: String, parameters: any VarlinkParameters, change: Bool)
    /// A Watch started.
    case streamed(method: String, parameters: any VarlinkParameters)
    case closed(reason: String)
  }

  /// The steps, and every byte the connection wrote back.
  public struct Outcome {
    public var steps: [Step] = []
    public var output: [UInt8] = []
    /// The connection closed by itself once its input ended and its calls were answered.
    public var closed = false
  }

  private let router: ControlRouter
  private let mayChange: Bool
  private let limits: ConnectionLimits

  /// A connection to a server with `routes` (and `org.varlink.service`, which the router adds),
  /// from a peer who may, or may not, change trials.
  public init(routes: [Route], mayChange: Bool, limits: ConnectionLimits = ConnectionLimits()) {
    let options = ControlServer.Options()
    router = ControlRouter(
      routes: routes,
      info: GetInfoReply(
        vendor: options.vendor, product: options.product, version: options.version, url: options.url,
        interfaces: options.interfaces))
    self.mayChange = mayChange
    self.limits = limits
  }

  /// One message (without its NUL) as the router decodes it on its Codable path.
  public func decode(_ message: ArraySlice<UInt8>) throws(WireProblem) -> IncomingCall {
    try IncomingCall.decode(message, with: router.decoder)
  }

  /// Sends `chunks` one read at a time, then ends the input. Each call performed is answered
  /// with `reply(method, parameters)` as soon as the machine hands it out (the machine drops the
  /// reply of a oneway call); a Watch stays open until the input ends.
  public func run(
    _ chunks: [ArraySlice<UInt8>], reply: (String, any VarlinkParameters) -> [UInt8]
  ) -> Outcome {
    let router = router
    let mayChange = mayChange
    var machine = ConnectionMachine<PreparedCall>(
      limits: limits, now: .zero,
      classify: { router.classify($0, mayChange: mayChange, uid: 1000) }, errorReply: router.errorReply)
    var outcome = Outcome()
    var pending: [ConnectionMachine<PreparedCall>.Action] = []

    func settle() {
      while !pending.isEmpty || machine.pendingOutput > 0 {
        while !pending.isEmpty {
          switch pending.removeFirst() {
          case .perform(let call, let slot):
            let change = call.route.kind == .change
            outcome.steps.append(
              .performed(method: call.route.method, parameters: call.parameters, change: change))
            let answer = reply(call.route.method, call.parameters)
            pending += machine.finished(slot: slot, reply: answer, change: change, now: .zero)
          case .startStream(let call):
            outcome.steps.append(.streamed(method: call.route.method, parameters: call.parameters))
          case .stopStream, .log:
            break
          case .close(let reason):
            outcome.steps.append(.closed(reason: reason))
          }
        }
        let unwritten = machine.unwrittenOutput
        guard !unwritten.isEmpty else { continue }
        outcome.output += unwritten
        pending += machine.wrote(unwritten.count, now: .zero)
      }
    }

    for chunk in chunks {
      pending += machine.received(chunk, now: .zero)
      settle()
    }
    pending += machine.endOfInput(now: .zero)
    settle()
    outcome.closed = machine.isClosed
    return outcome
  }
}
