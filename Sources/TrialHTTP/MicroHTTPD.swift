import CMicroHTTPD
import Glibc
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd (Debian's libmicrohttpd12, as systemd-journal-gatewayd
/// uses), opened at run time: the request line, headers, chunked bodies, keep-alive and timeouts
/// are the library's; each request is read whole and handed to `handler` on its connection's
/// thread. The only importer of CMicroHTTPD.
public final class HTTPServer: @unchecked Sendable {
  // @unchecked: `daemon` is set once by start and cleared by stop, both on the owner's thread;
  // the library calls in on its threads only between the two.

  /// What the server allows a client.
  public struct Limits: Sendable {
    /// Seconds a connection may stay silent before it is closed (a slow header too).
    public var connectionTimeout: UInt32 = 30
    /// Connections at once; the kernel's backlog holds more until one closes.
    public var connections: UInt32 = 4096
    /// Bytes of a request's line and headers (more: 431).
    public var headerBytes = 32 * 1024
    /// Bytes of a request's body (more: 413).
    public var bodyBytes = 1 << 20
    /// The stack of each connection's thread.
    public var threadStack = 512 * 1024

    public init() {}
  }

  public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

  private let table: UnsafePointer<TWMicroHTTPD>
  private let limits: Limits
  private let handler: Handler
  private var daemon: OpaquePointer?

  /// The library's version (`0.9.75`).
  public var libraryVersion: String { table.pointee.MHD_get_version().map(cText) ?? "unknown" }

  /// A server that answers with `handler`; `start` puts it on a socket.
  public init(limits: Limits = Limits(), handler: @escaping Handler) throws(HTTPServerError) {
    self.table = try Self.opened.get()
    self.limits = limits
    self.handler = handler
  }

  private nonisolated(unsafe) static let opened: Result<UnsafePointer<TWMicroHTTPD>, HTTPServerError> = {
    // nonisolated(unsafe): the table is filled once and only read after.
    var error = [CChar](repeating: 0, count: 512)
    guard let table = tw_mhd_open(&error, error.count) else {
      return .failure(
        .unavailable(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
    }
    return .success(table)
  }()

  /// Serves on `listenFD`, a stream socket already listening; the server's threads run until
  /// `stop`.
  public func start(listenFD: Int32) throws(HTTPServerError) {
    precondition(daemon == nil, "the server was started already")
    let settings = TWServerLimits(
      listen_fd: listenFD, connection_timeout: limits.connectionTimeout, connection_limit: limits.connections,
      memory_limit: limits.headerBytes, thread_stack: limits.threadStack)
    let me = Unmanaged.passUnretained(self).toOpaque()
    guard let started = tw_mhd_start(table, settings, accessHandler, me, completedHandler, me) else {
      throw .cannotStart("libmicrohttpd did not start on descriptor \(listenFD) (its message is above)")
    }
    daemon = started
  }

  /// Closes the connections and stops the threads; the listening socket stays open.
  public func stop() {
    guard let running = daemon else { return }
    table.pointee.MHD_stop_daemon(running)
    daemon = nil
  }

  // MARK: - The library's calls

  /// A request being read: its head, and its body as it arrives.
  fileprivate final class Pending {
    var request: HTTPRequest
    /// Whether the head frames the body ambiguously: two Content-Lengths that differ, or
    /// Transfer-Encoding more than once. The library frames by the first; a proxy in front may
    /// frame by another, and what one takes for body the other takes for a next request.
    var framedAmbiguously = false
    /// Set when the body went over its limit: the rest is read and dropped, the answer is 413.
    var tooLarge = false

    init(request: HTTPRequest) { self.request = request }
  }

  fileprivate func access(
    _ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
    uploadSize: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
  ) -> MHD_Result {
    guard let stored = context.pointee else {
      let pending = head(connection, url: url, method: method)
      context.pointee = Unmanaged.passRetained(pending).toOpaque()
      let headers = pending.request.headers
      // A body framed twice is how requests are smuggled past a proxy: refused, and closed.
      if headers["transfer-encoding"] != nil && headers["content-length"] != nil {
        return queue(
          connection, .text(400, "a request may not carry both Content-Length and Transfer-Encoding\n"),
          close: true)
      }
      if pending.framedAmbiguously {
        return queue(
          connection,
          .text(400, "a request may carry one Content-Length (or equal ones) and one Transfer-Encoding\n"),
          close: true)
      }
      if let length = headers["content-length"].flatMap({ Int($0) }), length > limits.bodyBytes {
        return queue(connection, Self.tooLarge(limits.bodyBytes), close: true)
      }
      return TW_MHD_YES
    }
    let pending = Unmanaged<Pending>.fromOpaque(stored).takeUnretainedValue()
    if uploadSize.pointee > 0 {
      if !pending.tooLarge, let upload {
        if pending.request.body.count + uploadSize.pointee > limits.bodyBytes {
          pending.tooLarge = true
          pending.request.body = []
        } else {
          upload.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
            pending.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
          }
        }
      }
      uploadSize.pointee = 0
      return TW_MHD_YES
    }
    if pending.tooLarge { return queue(connection, Self.tooLarge(limits.bodyBytes), close: true) }
    return queue(connection, handler(pending.request), close: false)
  }

  fileprivate func completed(_ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
    guard let context, let stored = context.pointee else { return }
    Unmanaged<Pending>.fromOpaque(stored).release()
    context.pointee = nil
  }

  private static func tooLarge(_ limit: Int) -> HTTPResponse {
    .text(413, "the request's body is larger than \(limit) bytes\n")
  }

  /// The request line and headers of `connection`.
  private func head(_ connection: OpaquePointer, url: String, method: String) -> Pending {
    var request = HTTPRequest(method: method, path: url, peer: peer(connection))
    request.socket = tw_mhd_connection_fd(table, connection)
    let headers = values(connection, TW_MHD_HEADER_KIND, lowercased: true)
    request.headers = headers.values
    request.query = values(connection, TW_MHD_GET_ARGUMENT_KIND, lowercased: false).values
    request.cookies = request.headers["cookie"].map(parseCookies) ?? [:]
    let pending = Pending(request: request)
    pending.framedAmbiguously =
      Set(headers.all.filter { $0.0 == "content-length" }.map(\.1)).count > 1
      || headers.all.filter { $0.0 == "transfer-encoding" }.count > 1
    return pending
  }

  /// The values of `kind`, by name (the last of repeated ones), and all of them in order.
  private func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> (
    values: [String: String], all: [(String, String)]
  ) {
    final class Gathered {
      var values: [String: String] = [:]
      var all: [(String, String)] = []
      let lowercased: Bool
      init(lowercased: Bool) { self.lowercased = lowercased }
    }
    let gathered = Gathered(lowercased: lowercased)
    _ = withExtendedLifetime(gathered) {
      table.pointee.MHD_get_connection_values(
        connection, kind,
        { cls, _, key, value in
          let gathered = Unmanaged<Gathered>.fromOpaque(cls!).takeUnretainedValue()
          if let key {
            let name = gathered.lowercased ? cText(key).lowercased() : cText(key)
            let text = value.map(cText) ?? ""
            gathered.values[name] = text
            gathered.all.append((name, text))
          }
          return TW_MHD_YES
        }, Unmanaged.passUnretained(gathered).toOpaque())
    }
    return (gathered.values, gathered.all)
  }

  private func peer(_ connection: OpaquePointer) -> String {
    guard let address = tw_mhd_client_address(table, connection) else { return "unknown" }
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
    let length = socklen_t(
      Int32(address.pointee.sa_family) == AF_INET6
        ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    guard
      getnameinfo(
        address, length, &host, socklen_t(host.count), &port, socklen_t(port.count),
        NI_NUMERICHOST | NI_NUMERICSERV)
        == 0
    else { return "unknown" }
    let name = cText(host)
    return name.contains(":") ? "[\(name)]:\(cText(port))" : "\(name):\(cText(port))"
  }

  private func queue(_ connection: OpaquePointer, _ response: HTTPResponse, close: Bool) -> MHD_Result {
    let made: OpaquePointer?
    switch response.body {
    case .bytes(let bytes):
      made = bytes.withUnsafeBytes {
        table.pointee.MHD_create_response_from_buffer(
          $0.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), TW_MHD_RESPMEM_MUST_COPY)
      }
    case .stream(let stream):
      let box = Unmanaged.passRetained(StreamBox(stream)).toOpaque()
      made = table.pointee.MHD_create_response_from_callback(
        UInt64.max, 16 * 1024, streamReader, box, streamFreed)
      if made == nil { Unmanaged<StreamBox>.fromOpaque(box).release() }
    }
    guard let made else { return TW_MHD_NO }
    defer { table.pointee.MHD_destroy_response(made) }
    for (name, value) in response.headers { _ = table.pointee.MHD_add_response_header(made, name, value) }
    if close { _ = table.pointee.MHD_add_response_header(made, "Connection", "close") }
    return table.pointee.MHD_queue_response(connection, UInt32(response.status), made)
  }
}

/// A streamed body as the library reads it: the parts `next()` gives, copied out as room allows.
private final class StreamBox {
  let stream: any HTTPBodyStream
  var part: [UInt8] = []
  var offset = 0

  init(_ stream: any HTTPBodyStream) { self.stream = stream }

  /// Copies into `buffer`; -1 at the end.
  func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
    while offset == part.count {
      guard let next = stream.next() else { return -1 }
      part = next
      offset = 0
    }
    let count = min(max, part.count - offset)
    part.withUnsafeBytes { bytes in
      UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
    }
    offset += count
    return count
  }
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
  Unmanaged<StreamBox>.fromOpaque(cls!).takeUnretainedValue().read(into: buffer!, max: max)
}

private let streamFreed: MHD_ContentReaderFreeCallback = { cls in
  let box = Unmanaged<StreamBox>.fromOpaque(cls!).takeRetainedValue()
  box.stream.close()
}

private let accessHandler: MHD_AccessHandlerCallback = {
  cls, connection, url, method, _, upload, size, context in
  Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue().access(
    connection!, url: cText(url!), method: cText(method!), upload: upload,
    uploadSize: size!, context: context!)
}

private let completedHandler: MHD_RequestCompletedCallback = { cls, _, context, _ in
  Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue().completed(context)
}

/// A C string's text (UTF-8, bytes that are not replaced).
private func cText(_ pointer: UnsafePointer<CChar>) -> String {
  String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}

private func cText(_ buffer: [CChar]) -> String {
  String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// What went wrong with the HTTP server.
public enum HTTPServerError: Error, CustomStringConvertible, Sendable {
  /// libmicrohttpd could not be opened.
  case unavailable(String)
  case cannotStart(String)

  public var description: String {
    switch self {
    case .unavailable(let reason): "libmicrohttpd cannot be used: \(reason)"
    case .cannotStart(let reason): reason
    }
  }
}
