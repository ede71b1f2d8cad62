/// Why a call through `VarlinkClient` failed: the socket could not be reached, the connection
/// broke, the service answered with something that is not Varlink, or the service replied
/// with an error.
public struct VarlinkClientError: Error, Hashable, Sendable, CustomStringConvertible {
  private enum Code: Hashable, Sendable {
    case cannotConnect(UnixSocket.Failure)
    case connectionFailed(UnixSocket.Failure)
    case closedByService
    case protocolViolation(String)
    case remote(ControlError)
  }

  private let code: Code
  /// The socket the client talks to.
  public let path: String

  private init(_ code: Code, path: String) {
    self.code = code
    self.path = path
  }

  static func cannotConnect(_ failure: UnixSocket.Failure, path: String) -> Self {
    Self(.cannotConnect(failure), path: path)
  }

  static func connectionFailed(_ failure: UnixSocket.Failure, path: String) -> Self {
    Self(.connectionFailed(failure), path: path)
  }

  static func closedByService(path: String) -> Self { Self(.closedByService, path: path) }

  static func protocolViolation(_ problem: String, path: String) -> Self {
    Self(.protocolViolation(problem), path: path)
  }

  static func remote(_ error: ControlError, path: String) -> Self { Self(.remote(error), path: path) }

  /// The error the service replied with, if it did.
  public var remoteError: ControlError? {
    if case .remote(let error) = code { return error }
    return nil
  }

  /// No connection could be made at all (nothing listens, no such socket, not allowed).
  public var isUnreachable: Bool {
    if case .cannotConnect = code { return true }
    return false
  }

  /// The `errno` of a failed connect, read or write.
  public var errno: Int32? {
    switch code {
    case .cannotConnect(let failure), .connectionFailed(let failure): failure.errno
    default: nil
    }
  }

  public var description: String {
    switch code {
    case .cannotConnect(let failure):
      "cannot connect to \(path): \(failure.reason)"
    case .connectionFailed(let failure):
      "connection to \(path) failed: \(failure)"
    case .closedByService:
      "the service at \(path) closed the connection before replying"
    case .protocolViolation(let problem):
      "the service at \(path) sent an invalid reply: \(problem)"
    case .remote(let error):
      error.description
    }
  }
}

/// A blocking Varlink client over a Unix stream socket: one connection, calls one at a time.
/// Not thread-safe; use one client per thread.
public final class VarlinkClient {
  /// The largest reply accepted.
  public static let maximumReplySize = 64 << 20

  public let path: String
  private var fd: Int32
  private var decoder = VarlinkFrameDecoder(maximumMessageSize: VarlinkClient.maximumReplySize)
  private var readBuffer = [UInt8](repeating: 0, count: 65_536)

  /// Connects to the socket at `path`.
  /// - Throws: `VarlinkClientError` naming the path when nothing can be reached there.
  public init(path: String) throws(VarlinkClientError) {
    self.path = path
    do {
      fd = try UnixSocket.connect(to: path)
    } catch {
      throw .cannotConnect(error, path: path)
    }
  }

  deinit {
    if fd >= 0 { UnixSocket.closeSocket(fd) }
  }

  /// The connected descriptor, for tests that need to poll it; -1 once closed.
  public var fileDescriptor: Int32 { fd }

  public func close() {
    if fd >= 0 { UnixSocket.closeSocket(fd) }
    fd = -1
  }

  /// Makes `receive` fail instead of waiting longer than `seconds` for a reply.
  public func setReceiveTimeout(seconds: Double) {
    UnixSocket.setReceiveTimeout(fd, seconds: seconds)
  }

  // MARK: Messages

  /// Sends one call without waiting for anything.
  public func send(_ call: VarlinkCall) throws(VarlinkClientError) {
    try sendBytes(call.encoded())
  }

  /// Sends raw bytes as they are: for tests of how the service copes with bad input.
  public func sendBytes(_ bytes: [UInt8]) throws(VarlinkClientError) {
    guard fd >= 0 else { throw .closedByService(path: path) }
    let result = bytes.withUnsafeBytes { buffer in
      Result { () throws(UnixSocket.Failure) in try UnixSocket.writeAll(fd, buffer) }
    }
    do {
      try result.get()
    } catch {
      throw .connectionFailed(error, path: path)
    }
  }

  /// The next message from the service, error replies included.
  public func receive() throws(VarlinkClientError) -> VarlinkReply {
    while true {
      let frame: ArraySlice<UInt8>?
      do {
        frame = try decoder.nextMessage()
      } catch {
        throw .protocolViolation(error.description, path: path)
      }
      if let frame {
        do {
          return try VarlinkReply.decode(frame)
        } catch {
          throw .protocolViolation(error.description, path: path)
        }
      }
      guard fd >= 0 else { throw .closedByService(path: path) }
      let result = readBuffer.withUnsafeMutableBytes { buffer in
        Result { () throws(UnixSocket.Failure) in try UnixSocket.read(fd, into: buffer) }
      }
      let count: Int
      do {
        count = try result.get()
      } catch {
        throw .connectionFailed(error, path: path)
      }
      if count == 0 {
        if decoder.hasPartialMessage {
          throw .protocolViolation("the reply ended without its NUL terminator", path: path)
        }
        throw .closedByService(path: path)
      }
      readBuffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
  }

  // MARK: Calls

  /// Calls `method` and returns the parameters of its single reply.
  /// - Throws: `VarlinkClientError`, with `remoteError` set when the service replied with an error.
  public func call(_ method: String, _ parameters: JSONObject = [:]) throws(VarlinkClientError) -> JSONObject
  {
    try send(VarlinkCall(method: method, parameters: parameters))
    let reply = try receive()
    if let name = reply.error {
      throw .remote(ControlError(name: name, parameters: reply.parameters), path: path)
    }
    guard !reply.continues else {
      throw .protocolViolation("a reply to a call without \"more\" has \"continues\"", path: path)
    }
    return reply.parameters
  }

  /// Calls `method` with typed parameters and reads its reply as `R`.
  public func call<R: JSONRepresentable>(
    _ method: String, _ parameters: some JSONRepresentable, as type: R.Type
  ) throws(VarlinkClientError) -> R {
    try decode(try call(method, parameters.json), as: R.self)
  }

  /// Reads reply parameters as `R`.
  public func decode<R: JSONRepresentable>(_ parameters: JSONObject, as type: R.Type)
    throws(VarlinkClientError) -> R
  {
    do {
      return try R(json: parameters)
    } catch {
      throw .protocolViolation("reply parameter \(error.description)", path: path)
    }
  }

  /// Calls `method` with `more` and hands each reply's parameters to `body` until the service
  /// sends its last reply or `body` returns false (the connection is then closed, as the only
  /// way to stop a stream).
  public func stream(
    _ method: String, _ parameters: JSONObject = [:], _ body: (JSONObject) throws -> Bool
  ) throws {
    try send(VarlinkCall(method: method, parameters: parameters, more: true))
    while true {
      let reply = try receive()
      if let name = reply.error {
        throw VarlinkClientError.remote(ControlError(name: name, parameters: reply.parameters), path: path)
      }
      guard try body(reply.parameters) else {
        close()
        return
      }
      if !reply.continues { return }
    }
  }

  /// Calls `method` with `oneway`: the service replies nothing.
  public func oneway(_ method: String, _ parameters: JSONObject = [:]) throws(VarlinkClientError) {
    try send(VarlinkCall(method: method, parameters: parameters, oneway: true))
  }
}
