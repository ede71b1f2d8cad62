import Foundation
import TestSupport
import Testing
import TrialCore
import TrialWebhooks

/// `WebhookPoster` against the Python receiver: signed as the reference verifiers want, and each
/// answer read into the attempt the retry rules act on.
@Suite(.serialized) struct WebhookPosterTests {
  private func post(
    _ receiver: Receiver, _ secrets: [WebhookSecret], query: String = "", id: String = "evt_1"
  )
    -> WebhookPost
  {
    var post = WebhookPost(
      url: receiver.url + query, secrets: secrets, messageID: id,
      body: Array(#"{"type":"trial.expiry"}"#.utf8),
      timeout: .seconds(patience))
    post.caFile = receiver.caFile
    return post
  }

  private func now() -> Date { SystemWallClock().now() }

  @Test(arguments: [false, true])
  func attempt_IsVerifiedByBothVerifiers_AndDelivers(tls: Bool) throws {
    let secret = try Crypto.shared().newSecret()
    let receiver = try Receiver(secrets: [secret], tls: tls)
    let poster = try WebhookPoster(userAgent: "trialwatch/test")
    let (attempt, duration) = poster.attempt(post(receiver, [secret]), now: now())
    #expect(try receiver.nextChecks() == ["0": ["standardwebhooks": "ok", "svix": "ok"]])
    #expect(attempt == .answered(status: 204, retryAfter: nil))
    #expect(attempt.delivered)
    #expect(duration > .zero)
  }

  @Test func aReceiverFailingThreeTimes_GetsTheMessageFourTimes_UnderOneID() throws {
    let secret = try Crypto.shared().newSecret()
    let receiver = try Receiver(secrets: [secret], tls: false)
    let poster = try WebhookPoster(userAgent: "trialwatch/test")
    let message = post(receiver, [secret], query: "?status=500&fail=3", id: "evt_flaky")
    var outcomes: [WebhookAttempt] = []
    for _ in 1...4 { outcomes.append(poster.attempt(message, now: now()).attempt) }
    #expect(outcomes.map(\.delivered) == [false, false, false, true])
    for _ in 1...4 { #expect(try receiver.nextChecks()["0"] == ["standardwebhooks": "ok", "svix": "ok"]) }
  }

  @Test func answersGoneThrottledOrRedirected_AreReadForTheRetryRules() throws {
    let secret = try Crypto.shared().newSecret()
    let receiver = try Receiver(secrets: [secret], tls: false)
    let poster = try WebhookPoster(userAgent: "trialwatch/test")
    let gone = poster.attempt(post(receiver, [secret], query: "?status=410"), now: now()).attempt
    #expect(gone.gone)
    let throttled = poster.attempt(post(receiver, [secret], query: "?status=429&retry-after=7"), now: now())
      .attempt
    #expect(throttled == .answered(status: 429, retryAfter: .seconds(7)))
    #expect(throttled.askedWait == .seconds(7))
    let moved = poster.attempt(post(receiver, [secret], query: "?status=302"), now: now()).attempt
    #expect(moved == .answered(status: 302, retryAfter: nil))
    #expect(!moved.delivered, "a redirect is not followed, and fails")
    let closed = poster.attempt(
      WebhookPost(
        url: "http://127.0.0.1:1/", secrets: [secret], messageID: "x", body: [], timeout: .seconds(5)),
      now: now()
    ).attempt
    #expect(!closed.delivered)
    #expect(closed.summary.contains("connect"), "\(closed.summary)")
  }
}
