import Foundation
import Synchronization
import TestSupport
import Testing
import TrialConfiguration
import TrialControl
import TrialCore
import TrialWebhooks

@testable import TrialWebhookSender

/// A request as the daemon hands one over.
func request(
  token: UInt64 = 1, url: String = "https://127.0.0.1:1/hooks", secretFile: String = "/nonexistent/secret",
  body: String = #"{"type":"trial.paused"}"#
) -> WebhookRequestObject {
  WebhookRequestObject(
    token: token,
    endpoint: WebhookEndpoint(name: "billing", url: url, secretFile: secretFile),
    messageId: "evt_\(token)", number: 1, body: body)
}

/// A clock that always reads the same instant.
struct FixedClock: WallClock {
  var date = Date(timeIntervalSince1970: 1_800_000_000)
  func now() -> Date { date }
}

@Suite struct SecretCacheTests {
  @Test func secretFile_ChangedOrReplaced_IsReadAgain() throws {
    let scratch = try TemporaryDirectory("secrets")
    let path = scratch.appending("billing.secret")
    let crypto = try Crypto.shared()
    let (first, second, third) = (try crypto.newSecret(), try crypto.newSecret(), try crypto.newSecret())
    try "\(first.text)\n".write(toFile: path, atomically: false, encoding: .utf8)
    let cache = SecretCache()
    #expect(try cache.secrets(path) == [first])
    #expect(try cache.secrets(path) == [first])
    #expect(cache.reads == 1, "an unchanged file is not read again")
    // Rotation: the new secret first, the old one beside it, written in place...
    try "\(second.text)\n\(first.text)\n".write(toFile: path, atomically: false, encoding: .utf8)
    #expect(try cache.secrets(path) == [second, first])
    // ...then the old one gone, by a rename over the file (as editors and tools write).
    try "\(third.text)\n".write(toFile: path, atomically: true, encoding: .utf8)
    #expect(try cache.secrets(path) == [third])
    #expect(cache.reads == 3)
  }

  @Test func secretFile_Unusable_IsAProblemNamingItNotTheSecret() throws {
    let scratch = try TemporaryDirectory("secrets")
    let path = scratch.appending("billing.secret")
    try "whsec_c2VjcmV0LWJ1dC1ub3QtYmFzZTY0ISEhISEhISE$$$\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    let cache = SecretCache()
    let problem = #expect(throws: WebhookSecretFile.Problem.self) { try cache.secrets(path) }
    #expect(problem?.description.hasPrefix("\(path):1: ") == true, "\(String(describing: problem))")
    #expect(problem?.description.contains("c2VjcmV0") == false)
    let missing = #expect(throws: WebhookSecretFile.Problem.self) { try cache.secrets(path + ".gone") }
    #expect(missing?.description.contains("\(path).gone") == true)
    // Mended, it is read at the next attempt.
    let secret = try Crypto.shared().newSecret()
    try "\(secret.text)\n".write(toFile: path, atomically: true, encoding: .utf8)
    #expect(try cache.secrets(path) == [secret])
  }
}

@Suite struct AttemptMakerTests {
  let maker = AttemptMaker(
    settings: AttemptSettings(userAgent: "trialwatch/test", caFile: nil, clock: FixedClock()),
    secrets: SecretCache())

  @Test(arguments: [
    ("", "https://example.com/", "empty"), ("{}", "ftp://example.com/", "http"),
    ("{}", "example.com/hooks", "http"), ("{}", "httpx://example.com/", "http"),
  ])
  func request_NotPostable_FailsInWords(body: String, url: String, word: String) {
    let outcome = maker.outcome(of: request(url: url, body: body))
    #expect(outcome.status == nil)
    #expect(outcome.error?.hasPrefix("not posted: ") == true)
    #expect(outcome.error?.contains(word) == true, "\(outcome.error ?? "")")
    #expect(outcome.at == FixedClock().date && outcome.duration.duration == .zero)
    #expect(outcome.token == 1)
  }

  @Test func request_WithoutItsSecretFile_FailsNamingTheFile() {
    let outcome = maker.outcome(of: request(token: 7, secretFile: "/nonexistent/billing.secret"))
    #expect(outcome.token == 7)
    #expect(outcome.error?.contains("/nonexistent/billing.secret") == true, "\(outcome.error ?? "")")
  }

  @Test func request_HTTPOrHTTPS_IsPostable() {
    for url in ["http://127.0.0.1:8080/", "HTTPS://example.com/hooks"] {
      #expect(AttemptMaker.refusal(request(url: url)) == nil, "\(url)")
    }
  }
}

@Suite struct WorkerPoolTests {
  /// Outcomes the pool reported, with their sessions.
  final class Reports: Sendable {
    let all = Mutex<[(UInt64, WebhookOutcomeObject)]>([])
    var count: Int { all.withLock { $0.count } }
  }

  func pool(_ reports: Reports, workers: Int = 4) -> WorkerPool {
    WorkerPool(
      workers: workers,
      settings: AttemptSettings(userAgent: "trialwatch/test", caFile: nil, clock: FixedClock()),
      secrets: SecretCache(),
      report: { session, outcome in reports.all.withLock { $0.append((session, outcome)) } }
    )
  }

  @Test func pool_StartsNoThreadBeforeWork_AndAtMostItsLimit() {
    let reports = Reports()
    let pool = pool(reports, workers: 3)
    #expect(pool.threads == 0)
    pool.put((1...20).map { request(token: $0, body: "") }, session: 5)
    #expect(pool.threads <= 3)
    pool.waitIdle()
    #expect(reports.count == 20)
    #expect(Set(reports.all.withLock { $0.map(\.1.token) }) == Set(1...20))
    #expect(reports.all.withLock { $0.allSatisfy { $0.0 == 5 } })
    #expect(pool.count == 0)
    pool.stop()
  }

  @Test func pool_Stopped_TakesNoMoreRequests() {
    let reports = Reports()
    let pool = pool(reports)
    pool.stop()
    pool.put([request(body: "")], session: 1)
    #expect(pool.count == 0)
    #expect(pool.threads == 0)
  }
}

@Suite struct BackoffTests {
  @Test func backoff_Doubles_UpToItsMaximum() {
    var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
    let delays = (1...9).map { _ in backoff.next() }
    #expect(
      delays == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000].map { Duration.milliseconds($0) })
    backoff.reset()
    #expect(backoff.next() == .milliseconds(100))
  }
}

/// The release of memory after a quiet spell: once a spell, on a thread of its own.
@Suite struct QuietReleaseTests {
  @Test func eachQuietSpell_IsReleased() {
    let released = DispatchSemaphore(value: 0)
    let release = QuietRelease(delay: .milliseconds(1)) { released.signal() }
    release.start()
    release.quiet()
    #expect(released.wait(timeout: .now() + patience) == .success, "released after the spell")
    release.activity()
    release.quiet()
    #expect(released.wait(timeout: .now() + patience) == .success, "and after the next")
  }
}
