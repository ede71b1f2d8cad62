import FoundationEssentials
import TrialControl
import TrialCore
import TrialWebhooks

/// What every worker makes its attempts with.
struct AttemptSettings: Sendable {
  /// `trialwatch/VERSION`.
  var userAgent: String
  /// A CA bundle to trust instead of the system's (`--ca-file`, for tests).
  var caFile: String?
  /// Where each attempt's time (its `webhook-timestamp`, the outcome's `at`) comes from.
  var clock: any WallClock
}

/// One worker's attempts: its own `WebhookPoster` (one libcurl handle), made at its first
/// request, so that an idle sender never maps libcurl or libcrypto. Not thread-safe: one a
/// worker thread.
final class AttemptMaker {
  private let settings: AttemptSettings
  private let secrets: SecretCache
  private var poster: WebhookPoster?

  init(settings: AttemptSettings, secrets: SecretCache) {
    self.settings = settings
    self.secrets = secrets
  }

  /// Makes the attempt `request` asks for, and tells what came of it. A request that cannot be
  /// posted (no body, not http(s), a secret file that cannot be used, libcurl missing) is a
  /// failed attempt, in words; nothing here throws or stops the sender.
  func outcome(of request: WebhookRequestObject) -> WebhookOutcomeObject {
    let post: WebhookPost
    let poster: WebhookPoster
    do throws(Refusal) {
      post = try self.post(request)
      poster = try self.madePoster()
    } catch {
      return WebhookOutcomeObject(
        token: request.token, attempt: .failed(error.reason), at: settings.clock.now(), duration: .zero)
    }
    let at = settings.clock.now()
    let (attempt, duration) = poster.attempt(post, now: at)
    return WebhookOutcomeObject(token: request.token, attempt: attempt, at: at, duration: duration)
  }

  struct Refusal: Error, Equatable {
    var reason: String
  }

  /// The post `request` asks for, or why it is not posted.
  func post(_ request: WebhookRequestObject) throws(Refusal) -> WebhookPost {
    if let reason = Self.refusal(request) { throw Refusal(reason: reason) }
    let secrets: [WebhookSecret]
    do {
      secrets = try self.secrets.secrets(request.secretFile)
    } catch {
      throw Refusal(reason: "not posted: secret file \(error)")
    }
    var post = WebhookPost(
      url: request.url, secrets: secrets, messageID: request.messageId, body: Array(request.body.utf8),
      timeout: request.timeout.duration)
    post.caFile = settings.caFile
    return post
  }

  /// Why `request` is not posted as it stands: an empty body, a URL that is not http(s).
  static func refusal(_ request: WebhookRequestObject) -> String? {
    if request.body.isEmpty { return "not posted: the message's body is empty" }
    let scheme = request.url.prefix { $0 != ":" }.lowercased()
    guard request.url.contains("://"), scheme == "http" || scheme == "https" else {
      return "not posted: the URL is not http:// or https://"
    }
    return nil
  }

  private func madePoster() throws(Refusal) -> WebhookPoster {
    if let poster { return poster }
    do {
      let made = try WebhookPoster(userAgent: settings.userAgent)
      poster = made
      return made
    } catch {
      throw Refusal(reason: "not posted: \(error)")
    }
  }
}
