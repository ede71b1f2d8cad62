import Dispatch
import FoundationEssentials
import Logging
import TrialControl
@_spi(Fuzzing) import TrialControlServer
import TrialCore
import TrialDaemon
import TrialEngine
import TrialTesting

/// The bytes one client sends on the control socket, through the connection's machine and the
/// server's router (`ConnectionReplay`: framing, the fast path and the Codable path, unknown
/// methods and keys, types, `validate()`, `more`, permission, the message size limit), with the
/// daemon's own routes. Each call is answered at once with a numbered stub reply. What must
/// hold:
///
/// - every message written back is JSON: a stub reply, or an error whose name the interface
///   files declare; stub replies go out in call order, and the connection closes once its input
///   ended and its calls were answered;
/// - the same bytes cut into other reads give the same calls and the same replies;
/// - a peer who may not change trials gets no change performed;
/// - a message the fast path reads, the Codable path reads as the same call;
/// - the parameters of every call performed are valid, and written and read again as JSON they
///   are the same; a start's or an extension's command is made or refused with a `TrialError`.
enum ControlTarget {
  /// A smaller limit than the daemon's 1 MiB, so that inputs of a few kilobytes reach it.
  static let limits: ConnectionLimits = {
    var limits = ConnectionLimits()
    limits.maximumMessageSize = 2048
    return limits
  }()

  static let routes = DaemonRoutes.make()
  static let changer = ConnectionReplay(routes: routes, mayChange: true, limits: limits)
  static let reader = ConnectionReplay(routes: routes, mayChange: false, limits: limits)

  /// The error names the interface files declare, qualified (`io.trialwatch.TrialNotFound`).
  static let declaredErrors: Set<String> = {
    var names: Set<String> = []
    for (interface, text) in VarlinkInterfaces.descriptions {
      for line in text.split(separator: "\n") where line.hasPrefix("error ") {
        let name = line.dropFirst("error ".count).prefix { $0 != " " && $0 != "(" }
        names.insert("\(interface).\(name)")
      }
    }
    return names
  }()

  static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
    let bytes = Array(input)
    let whole = changer.run([bytes[...]], reply: stubReply())
    try check(whole, of: "the whole input")
    let pieces = chunks(bytes)
    let chunked = changer.run(pieces, reply: stubReply())
    try require(
      chunked.output == whole.output,
      "the replies differ when the input arrives in \(pieces.count) reads: \(text(chunked.output)) "
        + "against \(text(whole.output))")
    try require(
      same(chunked.steps, whole.steps),
      "the calls differ when the input arrives in \(pieces.count) reads: \(describe(chunked.steps)) "
        + "against \(describe(whole.steps))")
    // A reader's connection differs only where a change was performed.
    if whole.steps.contains(where: { if case .performed(_, _, true) = $0 { true } else { false } }) {
      let read = reader.run([bytes[...]], reply: stubReply())
      try check(read, of: "a reader's connection")
      for case .performed(let method, _, true) in read.steps {
        throw FuzzFailure("a peer who may not change trials had \(method) performed")
      }
    }
    try checkFastPath(bytes)
  }

  /// A reply numbering the calls: `{"parameters":{"call":N}}`.
  static func stubReply() -> (String, any VarlinkParameters) -> [UInt8] {
    var count = 0
    return { _, _ in
      count += 1
      return Array("{\"parameters\":{\"call\":\(count)}}\0".utf8)
    }
  }

  /// What a reply written back holds, as far as the checks need it.
  private struct ReplyShape: Decodable {
    struct Parameters: Decodable { var call: Int? }
    var error: String?
    var parameters: Parameters?
  }

  static func check(_ outcome: ConnectionReplay.Outcome, of what: String) throws(FuzzFailure) {
    try require(outcome.closed, "\(what): the connection is still open after its input ended")
    try require(outcome.output.last.map { $0 == 0 } ?? true, "\(what): the output ends inside a message")
    var lastCall = 0
    let decoder = JSONDecoder()
    for message in outcome.output.split(separator: 0, omittingEmptySubsequences: false).dropLast() {
      guard let reply = try? decoder.decode(ReplyShape.self, from: Data(message)) else {
        throw FuzzFailure("\(what): a reply is not JSON: \(text(Array(message)))")
      }
      if let error = reply.error {
        try require(
          declaredErrors.contains(error), "\(what): the error \(error) is not declared in the interface files"
        )
      } else if let call = reply.parameters?.call {
        try require(
          call > lastCall, "\(what): the reply to call \(call) went out after that to call \(lastCall)")
        lastCall = call
      } else {
        throw FuzzFailure("\(what): a reply is neither an error nor a call's reply: \(text(Array(message)))")
      }
    }
    for case .performed(let method, let parameters, _) in outcome.steps {
      try checkParameters(parameters, method: method)
    }
    for case .streamed(let method, let parameters) in outcome.steps {
      try checkParameters(parameters, method: method)
    }
  }

  static func checkParameters(_ parameters: any VarlinkParameters, method: String) throws(FuzzFailure) {
    do throws(WireProblem) {
      try parameters.validate()
    } catch {
      throw FuzzFailure("\(method): parameters that do not validate were performed: \(error)")
    }
    try roundTrip(parameters, method: method)
    // The handlers' first step: the command the engine carries out, checked in TrialCore.
    switch parameters {
    case let start as StartTrialParameters: _ = try? start.command()
    case let extend as ExtendTrialParameters: _ = try? extend.command()
    default: break
    }
  }

  /// Written as JSON and read back, the parameters are the same.
  static func roundTrip<P: VarlinkParameters>(_ parameters: P, method: String) throws(FuzzFailure) {
    let data: Data
    do {
      data = try WireCoding.makeEncoder().encode(parameters)
    } catch {
      throw FuzzFailure("\(method): the parameters cannot be written as JSON: \(error)")
    }
    let again: P
    do {
      again = try WireCoding.makeDecoder().decode(P.self, from: data)
    } catch {
      throw FuzzFailure("\(method): the parameters written as \(text(Array(data))) are refused: \(error)")
    }
    try require(
      hashable(again) == hashable(parameters),
      "\(method): the parameters written as \(text(Array(data))) read back otherwise")
  }

  /// Every message the fast path reads is the call the Codable path reads.
  static func checkFastPath(_ bytes: [UInt8]) throws(FuzzFailure) {
    var frames = VarlinkFrameDecoder(maximumMessageSize: limits.maximumMessageSize)
    frames.append(bytes)
    while let message = try? frames.nextMessage() {
      guard let (method, fast) = FastPath.call(message) else { continue }
      let call: IncomingCall
      do {
        call = try changer.decode(message)
      } catch {
        throw FuzzFailure(
          "the fast path reads \(text(Array(message))), the Codable path refuses it: \(error)")
      }
      guard call.method == method, case .success(let parameters)? = call.parameters else {
        throw FuzzFailure(
          "the fast path reads \(text(Array(message))) as \(method), the Codable path as \(call.method) "
            + "with \(String(describing: call.parameters))")
      }
      try require(
        hashable(parameters) == hashable(fast),
        "the two paths read \(text(Array(message))) as \(fast) and \(parameters)")
    }
  }

  /// Parameters as a value to compare: every parameter type is `Hashable`.
  static func hashable(_ parameters: any VarlinkParameters) -> AnyHashable {
    func erase<H: Hashable>(_ value: H) -> AnyHashable { AnyHashable(value) }
    guard let value = parameters as? any Hashable else {
      fatalError("the parameters \(type(of: parameters)) are not Hashable")
    }
    return erase(value)
  }

  /// The input cut into reads of varied sizes (1, 2, 3, 5, 8... bytes, then again).
  static func chunks(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    let sizes = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]
    var pieces: [ArraySlice<UInt8>] = []
    var start = 0
    var next = 0
    while start < bytes.count {
      let end = min(bytes.count, start + sizes[next % sizes.count])
      pieces.append(bytes[start..<end])
      start = end
      next += 1
    }
    return pieces
  }

  /// The same calls with the same parameters, the same streams, the same ends.
  static func same(_ one: [ConnectionReplay.Step], _ other: [ConnectionReplay.Step]) -> Bool {
    one.count == other.count
      && zip(one, other).allSatisfy { pair in
        switch pair {
        case (.performed(let a, let p, let c), .performed(let b, let q, let d)):
          a == b && c == d && hashable(p) == hashable(q)
        case (.streamed(let a, let p), .streamed(let b, let q)): a == b && hashable(p) == hashable(q)
        case (.closed(let a), .closed(let b)): a == b
        default: false
        }
      }
  }

  static func describe(_ steps: [ConnectionReplay.Step]) -> [String] {
    steps.map { step in
      switch step {
      case .performed(let method, let parameters, let change): "\(method) \(parameters) change: \(change)"
      case .streamed(let method, let parameters): "stream \(method) \(parameters)"
      case .closed(let reason): "closed: \(reason)"
      }
    }
  }

  static func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes.prefix(300), as: UTF8.self).replacing("\0", with: "\\0")
  }
}

/// The daemon's routes (`TrialsHandlers` and `MetricsHandlers`) over an engine on the in-memory
/// store, in virtual time. Only their declarations are used: no call reaches a handler.
enum DaemonRoutes {
  /// What the routes hold on to.
  private final class Parts: @unchecked Sendable {
    // @unchecked: built once, then never touched.
    var engine: Engine?
    var handlers: TrialsHandlers?
  }
  private static let parts = Parts()

  static func make() -> [Route] {
    let queue = DispatchQueue(label: "trialwatch.fuzz.engine")
    let start = Date(timeIntervalSince1970: 1_750_000_000)
    let quiet = Logger(label: "trialwatch.fuzz") { _ in SwiftLogNoOpLogHandler() }
    let engine = Engine(
      repository: InMemoryTrialRepository(), scheduler: TestScheduler(now: start), logger: quiet)
    do {
      _ = try queue.sync { try engine.start() }
    } catch {
      fatalError("the fuzz target's engine does not start: \(error)")
    }
    let handlers = TrialsHandlers(engine: engine, queue: queue, startedAt: start, version: "0.0.0")
    let metrics = MetricsHandlers(
      handlers: handlers, engine: engine, queue: queue, space: { nil }, fleet: nil)
    parts.engine = engine
    parts.handlers = handlers
    return handlers.routes + metrics.routes
  }
}
