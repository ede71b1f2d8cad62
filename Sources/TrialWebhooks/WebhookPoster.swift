import FoundationEssentials
import TrialCore

/// One message to post to an endpoint: where, signed with which secrets, under which id.
public struct WebhookPost: Sendable {
  public var url: String
  /// Each signs (two while one is rotated).
  public var secrets: [WebhookSecret]
  /// `webhook-id`: the same for every attempt of one message.
  public var messageID: String
  public var body: [UInt8]
  public var timeout: Duration
  /// A CA file to trust instead of the system's store (tests).
  public var caFile: String?

  public init(url: String, secrets: [WebhookSecret], messageID: String, body: [UInt8], timeout: Duration) {
    self.url = url
    self.secrets = secrets
    self.messageID = messageID
    self.body = body
    self.timeout = timeout
  }
}

/// Makes attempts as Standard Webhooks 1.0 says: a POST of the JSON body with `webhook-id`,
/// `webhook-timestamp` (this attempt's, in Unix seconds) and `webhook-signature` (`v1,` and the
/// base64 of HMAC-SHA256 over `id.timestamp.body`, one a secret, separated by spaces); redirects
/// are not followed. One poster makes one attempt at a time (it keeps one libcurl handle, and
/// with it the connection to the last host).
public final class WebhookPoster {
  private let client: HTTPClient
  private let crypto: Crypto
  private let userAgent: String

  /// A poster whose requests say they come from `userAgent` (`trialwatch/VERSION`).
  public init(userAgent: String) throws {
    client = try HTTPClient()
    crypto = try Crypto.shared()
    self.userAgent = userAgent
  }

  /// Posts `post` at `now` (the attempt's timestamp) and tells what came of it, and how long it
  /// took.
  public func attempt(_ post: WebhookPost, now: Date) -> (attempt: WebhookAttempt, duration: Duration) {
    let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
    var request = HTTPRequest(url: post.url, body: post.body)
    request.headers = [
      ("Content-Type", "application/json"), ("webhook-id", post.messageID),
      ("webhook-timestamp", "\(timestamp)"),
      (
        "webhook-signature",
        crypto.signatureHeader(
          secrets: post.secrets, id: post.messageID, timestamp: timestamp, body: post.body)
      ),
    ]
    request.userAgent = userAgent
    request.timeout = post.timeout
    request.caFile = post.caFile
    switch client.post(request) {
    case .answered(let answer):
      let wait = answer.retryAfter.flatMap { RetryAfter.wait($0, now: now) }
      return (.answered(status: answer.status, retryAfter: wait), Self.duration(answer.seconds))
    case .failed(let error, let seconds):
      return (.failed(error), Self.duration(seconds))
    }
  }

  private static func duration(_ seconds: Double) -> Duration { .microseconds(Int64(seconds * 1e6)) }
}
