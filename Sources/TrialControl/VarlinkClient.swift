import FoundationEssentials
import Glibc

/// Why a call through `VarlinkClient` failed: the socket could not be reached, the connection
/// broke, the service answered with something that is not Varlink, or the service replied
/// with an error.
public struct VarlinkClientError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: Hashable, Sendable {
    /// No connection could be made at all (nothing listens, no such socket, not allowed).
    case cannotConnect
    /// The connection ended or broke after it was made.
    case connectionLost
    case protocolViolation
    /// The service replied with an error.
    case remote
  }

  public let kind: Kind
  /// The socket the client talks to.
  public let path: String
  /// The `errno` of a failed connect, read or write.
  public let errno: Int32?
  /// The error the service replied with, if it did.
  public let remoteError: ControlError?
  public let description: String

  init(_ kind: Kind, path: String, errno: Int32? = nil, remote: ControlError? = nil, _ description: String) {
    self.kind = kind
    self.path = path
    self.errno = errno
    self.remoteError = remote
    self.description = description
  }

  static func cannotConnect(_ failure: UnixSocket.Failure, path: String) -> Self {
    Self(.cannotConnect, path: path, errno: failure.errno, "cannot connect to \(path): \(failure.reason)")
  }

  static func connectionFailed(_ failure: UnixSocket.Failure, path: String) -> Self {
    Self(.connectionLost, path: path, errno: failure.errno, "connection to \(path) failed: \(failure)")
  }

  static func closedByService(path: String) -> Self {
    Self(.connectionLost, path: path, "the service at \(path) closed the connection before replying")
  }

  static func protocolViolation(_ problem: String, path: String) -> Self {
    Self(.protocolViolation, path: path, "the service at \(path) sent an invalid reply: \(problem)")
  }

  static func remote(_ error: ControlError, path: String) -> Self {
    Self(.remote, path: path, remote: error, error.description)
  }

  public var isUnreachable: Bool { kind == .cannotConnect }
}

/// A blocking Varlink client over a Unix stream socket: one connection, calls one at a time,
/// typed by the methods declared in `Trials` and `VarlinkService`. Not thread-safe; use one
/// client per thread.
public final class VarlinkClient {
  /// The largest reply accepted.
  public static let maximumReplySize = 64 << 20

  public let path: String
  private var fd: Int32
  private var frames = VarlinkFrameDecoder(maximumMessageSize: VarlinkClient.maximumReplySize)
  private var readBuffer = [UInt8](repeating: 0, count: 65_536)
  private let encoder = WireCoding.makeEncoder()

  /// Connects to the socket at `path`. With `timeout` (seconds), neither connecting nor any
  /// later read or write waits longer than that.
  /// - Throws: `VarlinkClientError` naming the path when nothing can be reached there.
  public init(path: String, timeout: Double? = nil) throws(VarlinkClientError) {
    self.path = path
    do {
      fd = try UnixSocket.connect(to: path, timeout: timeout)
    } catch {
      throw .cannotConnect(error, path: path)
    }
  }

  deinit {
    if fd >= 0 { UnixSocket.closeSocket(fd) }
  }

  /// The connected descriptor, for tests that need to poll it; -1 once closed.
  public var fileDescriptor: Int32 { fd }

  /// Whether a reply has arrived, whole or in part, that `receive` has not returned yet: then
  /// `receive` does not wait long.
  public var hasReplyArriving: Bool {
    if frames.hasPartialMessage { return true }
    guard fd >= 0 else { return false }
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&descriptor, 1, 0) > 0
  }

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
  public func send<P: Encodable>(_ call: OutgoingCall<P>) throws(VarlinkClientError) {
    try sendBytes(encoder.message(call))
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
    // Without a descriptor to watch, the wait ends only with a message.
    try receive(interruptedBy: nil)!
  }

  /// The next message from the service, or nil as soon as `interrupt` (the read end of a pipe
  /// another thread writes to) can be read before a whole message has arrived: a wait for a
  /// reply that a stop request can end. What was read of a message stays buffered.
  public func receive(interruptedBy interrupt: Int32?) throws(VarlinkClientError) -> VarlinkReply? {
    guard let frame = try nextMessage(interruptedBy: interrupt) else { return nil }
    do {
      return try VarlinkReply(frame)
    } catch {
      throw .protocolViolation(error.description, path: path)
    }
  }

  /// The next reply, decoded once as a typed call reads it.
  private func receive<R: Decodable>(as type: R.Type) throws(VarlinkClientError) -> TypedReply<R> {
    let frame = try nextMessage(interruptedBy: nil)!
    do {
      return try TypedReply<R>.decode(frame)
    } catch {
      throw .protocolViolation(error.description, path: path)
    }
  }

  /// The bytes of the next message, without its NUL; nil as `receive(interruptedBy:)` says.
  private func nextMessage(interruptedBy interrupt: Int32?) throws(VarlinkClientError) -> [UInt8]? {
    while true {
      let frame: ArraySlice<UInt8>?
      do {
        frame = try frames.nextMessage()
      } catch {
        throw .protocolViolation(error.description, path: path)
      }
      if let frame { return Array(frame) }
      guard fd >= 0 else { throw .closedByService(path: path) }
      if let interrupt, !waitReadable(interrupt) { return nil }
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
        if frames.hasPartialMessage {
          throw .protocolViolation("the reply ended without its NUL terminator", path: path)
        }
        throw .closedByService(path: path)
      }
      readBuffer.withUnsafeBytes { frames.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
  }

  /// Waits until the socket can be read (true) or `interrupt` can (false), whichever first.
  private func waitReadable(_ interrupt: Int32) -> Bool {
    var descriptors = [
      pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0),
    ]
    while poll(&descriptors, 2, -1) < 0 && errno == EINTR {}
    return descriptors[1].revents == 0
  }

  /// The reply's parameters as `R`, or the error it carries, thrown.
  public func decode<R: Decodable>(_ reply: VarlinkReply, as type: R.Type) throws(VarlinkClientError) -> R {
    if let error = reply.controlError { throw .remote(error, path: path) }
    do {
      return try reply.parameters(as: R.self)
    } catch {
      throw .protocolViolation("reply parameter \(error.description)", path: path)
    }
  }

  // MARK: Calls

  /// Calls `method` and returns its single reply.
  /// - Throws: `VarlinkClientError`, with `remoteError` set when the service replied with an error.
  public func call<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P) throws(VarlinkClientError) -> R {
    try send(OutgoingCall(method: method.qualifiedName, parameters: parameters))
    return try single(R.self)
  }

  /// Calls a method that takes no parameters.
  public func call<R>(_ method: VarlinkMethod<NoParameters, R>) throws(VarlinkClientError) -> R {
    try call(method, NoParameters())
  }

  private func single<R: Decodable>(_ type: R.Type) throws(VarlinkClientError) -> R {
    let reply = try receive(as: R.self)
    let value = try value(of: reply)
    guard !reply.continues else {
      throw .protocolViolation("a reply to a call without \"more\" has \"continues\"", path: path)
    }
    return value
  }

  /// The parameters of a typed reply, or the error it carries, thrown.
  private func value<R>(of reply: TypedReply<R>) throws(VarlinkClientError) -> R {
    switch reply.outcome {
    case .success(let value): return value
    case .failure(let error): throw .remote(error, path: path)
    }
  }

  /// Calls `method` with `more` and hands each reply to `body` until the service sends its
  /// last reply or `body` returns false (the connection is then closed, as the only way to
  /// stop a stream).
  public func stream<P, R>(_ method: VarlinkMethod<P, R>, _ parameters: P, _ body: (R) throws -> Bool) throws
  {
    try send(OutgoingCall(method: method.qualifiedName, parameters: parameters, more: true))
    while true {
      let reply = try receive(as: R.self)
      guard try body(try value(of: reply)) else {
        close()
        return
      }
      if !reply.continues { return }
    }
  }
}
