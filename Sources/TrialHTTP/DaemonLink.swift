import Glibc
import Synchronization
import TrialControl

/// The gateway's calls to the daemon's control socket, made on behalf of HTTP clients: a call's
/// parameters go as they came (checked to be one JSON object), its reply's come back as they
/// are, never decoded. Connections are kept for the next call; a stream takes one of its own.
final class DaemonLink: Sendable {
  /// What a call came to.
  enum Outcome: Sendable {
    /// The reply's parameters, as JSON.
    case reply([UInt8])
    /// An error reply: its name and parameters, as JSON.
    case error(String, [UInt8])
    /// The daemon could not be reached, or the connection failed: why.
    case unreachable(String)
  }

  let socketPath: String
  /// Connections no call is using, most recent last.
  private let idle = Mutex<[Connection]>([])
  /// The most connections kept idle.
  private let keep = 16

  init(socketPath: String) {
    self.socketPath = socketPath
  }

  /// One call and its one reply.
  func call(_ method: String, parameters: [UInt8]) -> Outcome {
    let connection: Connection
    switch take() {
    case .success(let taken): connection = taken
    case .failure(let problem): return .unreachable(problem.description)
    }
    do {
      try connection.client.sendBytes(Self.message(method, parameters, more: false))
      let reply = try connection.client.receive()
      put(connection)
      return Self.outcome(of: reply)
    } catch {
      connection.client.close()
      return .unreachable(error.description)
    }
  }

  /// A call with `more`: its replies as they come, on a connection of its own.
  func stream(_ method: String, parameters: [UInt8]) -> Result<Replies, VarlinkClientError> {
    do {
      let client = try VarlinkClient(path: socketPath)
      try client.sendBytes(Self.message(method, parameters, more: true))
      return .success(Replies(client: client))
    } catch {
      return .failure(error)
    }
  }

  /// The replies of a stream: each reply's outcome, and whether more follow.
  final class Replies: @unchecked Sendable {
    // @unchecked: used by one thread at a time (the HTTP connection's).
    private let client: VarlinkClient
    private var ended = false

    fileprivate init(client: VarlinkClient) { self.client = client }

    /// What waiting for the next reply came to.
    enum Next {
      /// A reply, and whether another follows.
      case reply(Outcome, more: Bool)
      /// `stop` became readable first; the stream goes on.
      case interrupted
      /// No more replies.
      case end
    }

    /// The next reply; `.interrupted` when `stop` (a descriptor) is readable first.
    func next(stop: Int32?) -> Next {
      guard !ended else { return .end }
      do {
        guard let reply = try client.receive(interruptedBy: stop) else { return .interrupted }
        let outcome = DaemonLink.outcome(of: reply)
        if !reply.continues || reply.error != nil { finish() }
        return .reply(outcome, more: !ended)
      } catch {
        finish()
        return .reply(.unreachable(error.description), more: false)
      }
    }

    func finish() {
      ended = true
      client.close()
    }
  }

  // MARK: - Messages

  /// `{"method":M,"parameters":P}` with its NUL; `method` is one of the catalog's names and
  /// `parameters` one JSON object, so that the message is one JSON object too.
  static func message(_ method: String, _ parameters: [UInt8], more: Bool) -> [UInt8] {
    var message = Array(#"{"method":""#.utf8) + Array(method.utf8) + Array(#"","parameters":"#.utf8)
    message += parameters.isEmpty ? Array("{}".utf8) : parameters
    if more { message += Array(#","more":true"#.utf8) }
    message += [UInt8(ascii: "}"), 0]
    return message
  }

  static func outcome(of reply: VarlinkReply) -> Outcome {
    let members = JSONSyntax.members(of: reply.bytes) ?? [:]
    let parameters = members["parameters"].map { Array(reply.bytes[$0]) } ?? Array("{}".utf8)
    if let error = reply.error { return .error(error, parameters) }
    return .reply(parameters)
  }

  // MARK: - Connections

  /// A connection to the daemon.
  final class Connection: @unchecked Sendable {
    // @unchecked: a connection is used by one call at a time; the pool hands it over.
    let client: VarlinkClient
    init(client: VarlinkClient) { self.client = client }
  }

  /// A kept connection that is still open (the daemon closes idle ones), else a new one.
  private func take() -> Result<Connection, VarlinkClientError> {
    while let kept = idle.withLock({ $0.popLast() }) {
      // Readable with no call out means closed by the daemon (or garbage): not used again.
      if !kept.client.hasReplyArriving { return .success(kept) }
      kept.client.close()
    }
    do {
      return .success(Connection(client: try VarlinkClient(path: socketPath)))
    } catch {
      return .failure(error)
    }
  }

  private func put(_ connection: Connection) {
    let surplus = idle.withLock { idle -> Connection? in
      idle.append(connection)
      return idle.count > keep ? idle.removeFirst() : nil
    }
    surplus?.client.close()
  }
}
