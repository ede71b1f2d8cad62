import CCurl

/// One HTTP client of libcurl (an easy handle): POSTs, one at a time, reusing its connections
/// from one request to the next. libcurl is opened at first use, once for the process. Used by
/// one thread at a time. The only importer of CCurl.
///
/// Redirects are not followed (a 3xx is the answer); only `http` and `https` are spoken; TLS
/// checks the peer against the system's CA store (or `HTTPRequest.caFile`); proxies come from
/// the usual variables (`https_proxy`, `no_proxy`), as libcurl reads them.
public final class HTTPClient {
  private let curl: UnsafePointer<TWCurl>
  private let handle: UnsafeMutableRawPointer
  /// Where libcurl writes while a request runs: allocated once, so that the addresses it is
  /// given stay valid.
  private let body = UnsafeMutablePointer<TWCurlBody>.allocate(capacity: 1)
  private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

  public init() throws(HTTPClientError) {
    curl = try Self.library()
    guard let handle = curl.pointee.curl_easy_init() else {
      body.deallocate()
      errorText.deallocate()
      throw .unavailable("curl_easy_init failed")
    }
    self.handle = handle
    body.initialize(to: TWCurlBody())
  }

  deinit {
    curl.pointee.curl_easy_cleanup(handle)
    body.deallocate()
    errorText.deallocate()
  }

  /// libcurl's version, as it says it (`curl_version`).
  public static func version() throws(HTTPClientError) -> String {
    text(try library().pointee.curl_version())
  }

  /// An HTTP date (RFC 9110's three forms, and the others libcurl reads) as Unix seconds; nil
  /// when it is none.
  public static func date(_ text: String) throws(HTTPClientError) -> Int64? {
    let curl = try library()
    let seconds = text.withCString { curl.pointee.curl_getdate($0, nil) }
    return seconds == -1 ? nil : Int64(seconds)
  }

  private static func library() throws(HTTPClientError) -> UnsafePointer<TWCurl> {
    switch opened {
    case .success(let table): return table.pointer
    case .failure(let error): throw error
    }
  }

  private struct Table: @unchecked Sendable {
    // @unchecked: filled once, then only read.
    let pointer: UnsafePointer<TWCurl>
  }

  private static let opened: Result<Table, HTTPClientError> = {
    var error = [CChar](repeating: 0, count: 512)
    guard let table = tw_curl_open(&error, error.count) else {
      return .failure(.unavailable(text(error)))
    }
    return .success(Table(pointer: table))
  }()

  /// Makes the request and waits for its answer, at most the request's timeout.
  public func post(_ request: HTTPRequest) -> HTTPOutcome {
    let easy = handle
    curl.pointee.curl_easy_reset(easy)
    var headers: UnsafeMutablePointer<curl_slist>?
    defer { curl.pointee.curl_slist_free_all(headers) }
    for (name, value) in request.headers {
      guard let appended = curl.pointee.curl_slist_append(headers, "\(name): \(value)") else {
        return .failed(error: "out of memory for the request's headers", seconds: 0)
      }
      headers = appended
    }
    errorText[0] = 0
    let milliseconds = max(
      1,
      Int(
        request.timeout.components.seconds * 1000
          + request.timeout.components.attoseconds / 1_000_000_000_000_000))
    return request.body.withUnsafeBytes { bytes -> HTTPOutcome in
      var code = CURLE_OK
      func set(_ option: CURLoption, _ value: Int) {
        if code == CURLE_OK { code = tw_curl_setopt_long(curl, easy, option, value) }
      }
      func set(_ option: CURLoption, pointer: UnsafeRawPointer?) {
        if code == CURLE_OK { code = tw_curl_setopt_pointer(curl, easy, option, pointer) }
      }
      func set(_ option: CURLoption, _ text: String) {
        if code == CURLE_OK { code = text.withCString { tw_curl_setopt_pointer(curl, easy, option, $0) } }
      }
      set(CURLOPT_NOSIGNAL, 1)
      set(CURLOPT_URL, request.url)
      set(CURLOPT_PROTOCOLS_STR, "http,https")
      set(CURLOPT_FOLLOWLOCATION, 0)
      set(CURLOPT_POST, 1)
      set(CURLOPT_POSTFIELDSIZE, bytes.count)
      set(CURLOPT_POSTFIELDS, pointer: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
      set(CURLOPT_HTTPHEADER, pointer: headers.map { UnsafeRawPointer($0) })
      set(CURLOPT_USERAGENT, request.userAgent)
      set(CURLOPT_TIMEOUT_MS, milliseconds)
      set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds)
      if let caFile = request.caFile { set(CURLOPT_CAINFO, caFile) }
      set(CURLOPT_ERRORBUFFER, pointer: errorText)
      if code == CURLE_OK { code = tw_curl_keep_body(curl, easy, body) }
      guard code == CURLE_OK else {
        return .failed(
          error: "cannot set up the request: \(Self.text(curl.pointee.curl_easy_strerror(code)))",
          seconds: 0)
      }
      let performed = curl.pointee.curl_easy_perform(easy)
      var microseconds: curl_off_t = 0
      _ = tw_curl_getinfo_off(curl, easy, CURLINFO_TOTAL_TIME_T, &microseconds)
      let seconds = Double(microseconds) / 1e6
      guard performed == CURLE_OK else {
        let detail = String(cString: errorText)
        let reason = Self.text(curl.pointee.curl_easy_strerror(performed))
        return .failed(error: detail.isEmpty ? reason : "\(reason): \(detail)", seconds: seconds)
      }
      var status = 0
      _ = tw_curl_getinfo_long(curl, easy, CURLINFO_RESPONSE_CODE, &status)
      let retryAfter = tw_curl_header(curl, easy, "Retry-After").map { String(cString: $0) }
      let kept = withUnsafeBytes(of: &body.pointee.bytes) { Array($0.prefix(body.pointee.count)) }
      return .answered(
        HTTPAnswer(
          status: status, retryAfter: retryAfter, body: String(decoding: kept, as: UTF8.self),
          seconds: seconds))
    }
  }

  private static func text(_ characters: UnsafePointer<CChar>?) -> String {
    characters.map { String(cString: $0) } ?? ""
  }

  private static func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// A POST to make: its address and body, then what differs from the defaults.
public struct HTTPRequest: Sendable {
  public var url: String
  public var body: [UInt8]
  public var headers: [(String, String)] = []
  /// The whole request's limit: connecting, sending and the answer.
  public var timeout = Duration.seconds(15)
  public var userAgent = "trialwatch"
  /// A file of CA certificates to check the peer against instead of the system's.
  public var caFile: String?

  public init(url: String, body: [UInt8]) {
    self.url = url
    self.body = body
  }
}

/// An answer from the server.
public struct HTTPAnswer: Hashable, Sendable {
  public var status: Int
  /// The `Retry-After` header as sent, if it was.
  public var retryAfter: String?
  /// The start of the answer's body (libcurl's write callback keeps `TW_CURL_BODY_KEPT` bytes).
  public var body: String
  public var seconds: Double
}

/// How a request went: answered with a status, or failed before an answer (no connection, a
/// timeout, TLS refused), in libcurl's words.
public enum HTTPOutcome: Hashable, Sendable {
  case answered(HTTPAnswer)
  case failed(error: String, seconds: Double)
}

/// libcurl cannot be used.
public enum HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
  case unavailable(String)

  public var description: String {
    switch self {
    case .unavailable(let reason): "libcurl cannot be used (Debian: libcurl4): \(reason)"
    }
  }
}
