import FoundationEssentials
import TrialControl

/// How a handler answers: once, on any thread. A change answers only once it is durable.
public typealias Completion<R> = @Sendable (Result<R, ControlError>) -> Void

/// One method the control server carries out: its declaration and its handler. The daemon's
/// table of routes is `TrialsHandlers.routes`; `org.varlink.service` is served by the router.
public struct Route: Sendable {
  let method: String
  let kind: MethodKind
  let parameterType: any VarlinkParameters.Type
  private(set) var handler: Handler
  /// The handler may read much of the store (a scan): the control poller's thread leaves it
  /// to the connection's queue rather than make every other connection wait for it.
  private(set) var scans = false
  /// Its calls and errors, counted where it is served (set by the router, from `ControlCounters`).
  var tally = MethodTally()

  enum Handler: Sendable {
    /// Carries out a call from a caller (its credentials, where the socket gives them);
    /// completes with the reply message (`OutgoingReply`) or the error.
    case call(
      @Sendable (any VarlinkParameters, PeerCredentials?, JSONEncoder, @escaping Completion<[UInt8]>) -> Void)
    /// Opens a stream; returns what ends it.
    case stream(@Sendable (any VarlinkParameters, any StreamTarget) -> @Sendable () -> Void)
  }

  /// A method answered once.
  @inlinable
  public init<P, R>(
    _ method: VarlinkMethod<P, R>, _ handler: @escaping @Sendable (P, @escaping Completion<R>) -> Void
  ) {
    self.init(method) { parameters, _, done in handler(parameters, done) }
  }

  /// A method answered once, whose handler is told who called (to record it). Inlinable, so
  /// that the module that routes a method specializes what each call runs for its types (the
  /// hot path of every call); the rest of the route is `init(answered:…)`'s.
  @inlinable
  public init<P, R>(
    _ method: VarlinkMethod<P, R>,
    _ handler: @escaping @Sendable (P, PeerCredentials?, @escaping Completion<R>) -> Void
  ) {
    precondition(!method.kind.streams, "\(method.qualifiedName) streams: route it with Route(stream:)")
    // A trial's reply is hand-written (`FastPath`); every other reply goes through Codable.
    let encode: @Sendable (R, JSONEncoder) -> [UInt8]
    if R.self == TrialReply.self {
      encode = { reply, _ in FastPath.message(reply as! TrialReply) }
    } else {
      encode = { reply, encoder in encoder.message(OutgoingReply(parameters: reply)) }
    }
    self.init(answered: method.qualifiedName, kind: method.kind, parameterType: P.self) {
      parameters, caller, encoder, done in
      handler(parameters as! P, caller) { result in
        switch result {
        case .success(let reply): done(.success(encode(reply, encoder)))
        case .failure(let error): done(.failure(error))
        }
      }
    }
  }

  /// A method answered once by `call`, which completes with the reply message.
  @usableFromInline
  init(
    answered method: String, kind: MethodKind, parameterType: any VarlinkParameters.Type,
    call:
      @escaping @Sendable (
        any VarlinkParameters, PeerCredentials?, JSONEncoder, @escaping Completion<[UInt8]>
      )
      -> Void
  ) {
    self.method = method
    self.kind = kind
    self.parameterType = parameterType
    handler = .call(call)
  }

  /// A method answered at once with several replies (`MethodKind.replies`): the handler
  /// completes with all of them, written as one message each, every one but the last marked
  /// `continues`. An empty list is sent as no reply at all: the handler fails instead.
  public init<P, R: WireObject>(
    replies method: VarlinkMethod<P, R>, _ handler: @escaping @Sendable (P, @escaping Completion<[R]>) -> Void
  ) {
    precondition(method.kind == .replies, "\(method.qualifiedName) is not answered with several replies")
    self.method = method.qualifiedName
    kind = .replies
    parameterType = P.self
    self.handler = .call { parameters, _, _, done in
      handler(parameters as! P) { result in done(result.map { R.messages($0) }) }
    }
  }

  /// A streaming method: the handler sends replies to its sink until the returned closure
  /// is called (the client went away) or it finishes the sink.
  public init<P, R>(
    stream method: VarlinkMethod<P, R>,
    _ handler: @escaping @Sendable (P, StreamSink<R>) -> @Sendable () -> Void
  ) {
    precondition(method.kind.streams, "\(method.qualifiedName) does not stream")
    self.method = method.qualifiedName
    kind = method.kind
    parameterType = P.self
    self.handler = .stream { parameters, target in handler(parameters as! P, StreamSink(target)) }
  }
}

extension Route {
  /// The same route, marked as one whose handler may scan much of the store (see `scans`).
  public func scanning() -> Route {
    var route = self
    route.scans = true
    return route
  }

  /// The same route, running `starting` as a call reaches its handler and `taken` once the
  /// handler has returned (a change is then queued with the engine): for tests and tools that
  /// wait until calls have arrived.
  public func observed(starting: @escaping @Sendable () -> Void, taken: @escaping @Sendable () -> Void)
    -> Route
  {
    guard case .call(let perform) = handler else { return self }
    var route = self
    route.handler = .call { parameters, caller, encoder, done in
      starting()
      perform(parameters, caller, encoder, done)
      taken()
    }
    return route
  }
}

/// The receiving end of a stream, on the connection: replies are encoded there, not on the
/// thread that sends them.
public protocol StreamTarget: Sendable {
  func send(_ encode: @escaping @Sendable (JSONEncoder) -> [UInt8])
  /// Several replies in one hand-off, written together.
  func send(all encodes: [@Sendable (JSONEncoder) -> [UInt8]])
  /// Several replies, written together at once: only on the stream's queue (in a body of
  /// `perform` or `whenDrained`), where no hand-off is needed.
  func sendHere(all encodes: [@Sendable (JSONEncoder) -> [UInt8]])
  /// No more replies (the daemon is stopping).
  func finish()
  /// Ends the stream with an error reply; the connection closes once it is written.
  func fail(_ error: ControlError)
  /// Replies sent and not yet written to the client's socket.
  var unwritten: Int { get }
  /// The most replies that may wait unwritten.
  var capacity: Int { get }
  /// Runs `body` once, on the stream's queue, when at most half of `capacity` replies are
  /// unwritten (at once if that is so now).
  func whenDrained(_ body: @escaping @Sendable () -> Void)
  /// Runs `body` on the stream's queue (the connection's), where replies are ordered.
  func perform(_ body: @escaping @Sendable () -> Void)
}

/// Where a streaming handler sends its replies.
public struct StreamSink<R: Encodable & Sendable>: Sendable {
  let target: any StreamTarget

  init(_ target: any StreamTarget) {
    self.target = target
  }

  public func send(_ reply: R) {
    target.send { $0.message(OutgoingReply(parameters: reply, continues: true)) }
  }

  /// Several replies in one hand-off, written together.
  public func send(_ replies: [R]) {
    target.send(
      all: replies.map { reply in { $0.message(OutgoingReply(parameters: reply, continues: true)) } })
  }

  /// Replies written at once, from the stream's queue: in a body of `perform` or `whenDrained`
  /// (a source that runs there crosses no queue to send).
  public func sendHere(_ replies: [R]) {
    target.sendHere(
      all: replies.map { reply in { $0.message(OutgoingReply(parameters: reply, continues: true)) } })
  }

  public func finish() {
    target.finish()
  }

  public func fail(_ error: ControlError) {
    target.fail(error)
  }

  public var unwritten: Int { target.unwritten }
  public var capacity: Int { target.capacity }

  public func whenDrained(_ body: @escaping @Sendable () -> Void) {
    target.whenDrained(body)
  }

  public func perform(_ body: @escaping @Sendable () -> Void) {
    target.perform(body)
  }
}

/// A call the router accepted: its route and its decoded, checked parameters.
struct PreparedCall: @unchecked Sendable {
  // @unchecked: parameters are value types (`VarlinkParameters` are Sendable structs).
  let route: Route
  let parameters: any VarlinkParameters
}

/// Turns a message into a call to carry out, or into the reply to send at once: an unknown
/// interface or method, an invalid message or parameters, a missing `more`, or a caller who
/// may not change trials. Pure: no I/O, so every decision is testable on its own.
struct ControlRouter: Sendable {
  private let routes: [String: Route]
  /// The interfaces served, as GetInfo lists them.
  private let interfaces: Set<String>
  let decoder: JSONDecoder
  let encoder = WireCoding.makeEncoder()

  init(routes: [Route], info: GetInfoReply, counters: ControlCounters = ControlCounters()) {
    let service = [
      Route(VarlinkService.getInfo) { _, done in done(.success(info)) },
      Route(VarlinkService.getInterfaceDescription) { [served = Set(info.interfaces)] parameters, done in
        guard served.contains(parameters.interface),
          let description = VarlinkInterfaces.descriptions[parameters.interface]
        else {
          return done(.failure(.interfaceNotFound(parameters.interface)))
        }
        done(.success(GetInterfaceDescriptionReply(description: description)))
      },
    ]
    var table: [String: Route] = [:]
    for var route in service + routes {
      route.tally = counters.tally(of: route.method)
      table[route.method] = route
    }
    self.routes = table
    interfaces = Set(info.interfaces)
    decoder = WireCoding.makeDecoder()
    decoder.userInfo[.varlinkParameterTypes] = ParameterTypes(table.mapValues(\.parameterType))
  }

  /// Every method served, by qualified name.
  var methods: Set<String> { Set(routes.keys) }

  /// What to do with one message from a peer who may (or may not) change trials.
  /// `refused` hears of a call refused for permission.
  func classify(
    _ message: ArraySlice<UInt8>, mayChange: Bool, uid: UInt32?, refused: (ControlError) -> Void = { _ in }
  ) -> ConnectionMachine<PreparedCall>.Classified {
    // The common calls in their common form skip Codable; a refusal takes the Codable path.
    if let (method, parameters) = FastPath.call(message), let route = routes[method],
      route.kind == .read || (route.kind == .change && mayChange)
    {
      return .call(
        PreparedCall(route: route, parameters: parameters), change: route.kind == .change, oneway: false)
    }
    let call: IncomingCall
    do {
      call = try IncomingCall.decode(message, with: decoder)
    } catch {
      return .answer(errorReply(.invalidMessage(error.problem)))
    }
    func refuse(_ error: ControlError) -> ConnectionMachine<PreparedCall>.Classified {
      .answer(call.oneway ? nil : errorReply(error))
    }
    if call.upgrade {
      return refuse(
        .invalidParameter("upgrade", problem: "no method of this service upgrades the connection"))
    }
    guard let route = routes[call.method], let parameters = call.parameters else {
      let known = interfaces.contains(call.interface)
      return refuse(known ? .methodNotFound(call.method) : .interfaceNotFound(call.interface))
    }
    if route.kind.streams || route.kind == .replies, !call.more || call.oneway {
      route.tally.refused()
      return refuse(.expectedMore())
    }
    // Refused callers learn nothing from their parameters being checked.
    if route.kind.needsChangeRights && !mayChange {
      let error = ControlError.permissionDenied(method: call.method, uid: uid ?? .max)
      refused(error)
      route.tally.refused()
      return refuse(error)
    }
    switch parameters {
    case .failure(let problem):
      route.tally.refused()
      return refuse(.invalidParameter(problem))
    case .success(let parameters):
      let prepared = PreparedCall(route: route, parameters: parameters)
      if route.kind.streams { return .stream(prepared) }
      return .call(prepared, change: route.kind == .change, oneway: call.oneway)
    }
  }

  func errorReply(_ error: ControlError) -> [UInt8] {
    encoder.message(OutgoingReply(error: error))
  }
}
