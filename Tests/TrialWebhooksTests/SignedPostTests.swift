import Foundation
import TestSupport
import Testing
import TrialCore
import TrialWebhooks

@Suite struct CryptoTests {
  @Test func hmacSHA256_OfRFC4231sSecondCase_IsThatCasesMAC() throws {
    let mac = try Crypto.shared().hmacSHA256(
      key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
    #expect(
      mac.map { String(format: "%02x", $0) }.joined()
        == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
  }

  @Test func newSecret_ReadAgain_IsTheSameAndDiffersFromTheNext() throws {
    let crypto = try Crypto.shared()
    let first = try crypto.newSecret()
    let second = try crypto.newSecret()
    #expect(try WebhookSecret(first.text) == first)
    #expect(first.key.count == WebhookSecret.newKeyBytes)
    #expect(first != second)
    #expect(!first.description.contains(first.text.dropFirst(WebhookSecret.prefix.count)))
  }

  @Test func equalInConstantTime_TellsEqualFromUnequal() throws {
    let crypto = try Crypto.shared()
    #expect(crypto.equalInConstantTime([1, 2, 3], [1, 2, 3]))
    #expect(!crypto.equalInConstantTime([1, 2, 3], [1, 2, 4]))
    #expect(!crypto.equalInConstantTime([1, 2, 3], [1, 2]))
  }
}

/// The Python receiver (`Tests/webhooks/receiver.py`, run by TestSupport's `WebhookReceiver`),
/// checking each message against the texts of `secrets`.
typealias Receiver = WebhookReceiver

extension WebhookReceiver {
  convenience init(secrets: [WebhookSecret], tls: Bool) throws {
    try self.init(secrets: secrets.map(\.text), tls: tls)
  }
}

@Suite(.serialized) struct SignedPostTests {
  static let id = "msg_2AbCdEfGhIjKlMnOpQrStUvWxYz"
  static let body = Array(
    #"{"type":"trial.expiry","timestamp":"2026-12-02T10:00:00Z","data":{"subject":"acme"}}"#.utf8)

  /// Posts `body`, signed with `signing` for `id` at `timestamp` (now, by default).
  func post(
    to receiver: Receiver, signing: [WebhookSecret], body: [UInt8] = body, signedBody: [UInt8]? = nil,
    timestamp: Int64? = nil
  ) throws -> HTTPOutcome {
    let crypto = try Crypto.shared()
    let time = timestamp ?? Int64(SystemWallClock().now().timeIntervalSince1970)
    let signature = crypto.signatureHeader(
      secrets: signing, id: Self.id, timestamp: time, body: signedBody ?? body)
    var request = HTTPRequest(url: receiver.url, body: body)
    request.headers = [
      ("Content-Type", "application/json"), ("webhook-id", Self.id), ("webhook-timestamp", "\(time)"),
      ("webhook-signature", signature),
    ]
    request.userAgent = "trialwatch/test"
    request.caFile = receiver.caFile
    // A wait for the receiver that only something broken reaches.
    request.timeout = .seconds(patience)
    return try HTTPClient().post(request)
  }

  func status(_ outcome: HTTPOutcome) -> Int? {
    if case .answered(let answer) = outcome { return answer.status }
    return nil
  }

  /// While a secret is rotated both sign: each verifier accepts the message under each secret.
  @Test(arguments: [false, true])
  func messageSignedWithTwoSecrets_IsAcceptedUnderEach_ByBothVerifiers(tls: Bool) throws {
    let crypto = try Crypto.shared()
    let secrets = [try crypto.newSecret(), try crypto.newSecret()]
    let receiver = try Receiver(secrets: secrets, tls: tls)
    let outcome = try post(to: receiver, signing: secrets)
    let checks = try receiver.nextChecks()
    #expect(
      checks == [
        "0": ["standardwebhooks": "ok", "svix": "ok"], "1": ["standardwebhooks": "ok", "svix": "ok"],
      ])
    #expect(status(outcome) == 204)
  }

  @Test func messageTamperedOldOrWronglySigned_IsRefusedByBothVerifiers() throws {
    let crypto = try Crypto.shared()
    let secret = try crypto.newSecret()
    let receiver = try Receiver(secrets: [secret], tls: false)
    let now = Int64(SystemWallClock().now().timeIntervalSince1970)
    let cases: [(String, HTTPOutcome)] = [
      ("tampered body", try post(to: receiver, signing: [secret], signedBody: Array("{}".utf8))),
      ("ten minutes old", try post(to: receiver, signing: [secret], timestamp: now - 600)),
      ("wrong secret", try post(to: receiver, signing: [try crypto.newSecret()])),
    ]
    for (name, outcome) in cases {
      let checks = try receiver.nextChecks()
      #expect(checks["0"]?["standardwebhooks"] != "ok", "\(name): standardwebhooks accepted it")
      #expect(checks["0"]?["svix"] != "ok", "\(name): svix accepted it")
      #expect(status(outcome) == 400, "\(name)")
    }
  }

  @Test func https_WithACANotTrusted_FailsInTLS() throws {
    let secret = try Crypto.shared().newSecret()
    let receiver = try Receiver(secrets: [secret], tls: true)
    let request = HTTPRequest(url: receiver.url, body: Self.body)
    guard case .failed(let error, _) = try HTTPClient().post(request) else {
      Issue.record("a certificate of an unknown CA was accepted")
      return
    }
    #expect(error.contains("certificate"), "\(error)")
  }

  @Test func portWithNoListener_FailsInLibcurlsWords() throws {
    let request = HTTPRequest(url: "http://127.0.0.1:1/", body: Self.body)
    guard case .failed(let error, _) = try HTTPClient().post(request) else {
      Issue.record("a post to a closed port was answered")
      return
    }
    #expect(error.contains("connect"), "\(error)")
  }
}

@Suite struct RetryAfterTests {
  static let now = Date(timeIntervalSince1970: 1_445_412_420)  // Wed, 21 Oct 2015 07:27:00 GMT

  @Test func seconds_AreTheWait() {
    #expect(RetryAfter.wait("7", now: Self.now) == .seconds(7))
    #expect(RetryAfter.wait(" 120 ", now: Self.now) == .seconds(120))
    #expect(RetryAfter.wait("0", now: Self.now) == .zero)
  }

  @Test func httpDate_InEachOfItsThreeForms_IsCountedFromNow() {
    #expect(RetryAfter.wait("Wed, 21 Oct 2015 07:28:00 GMT", now: Self.now) == .seconds(60))
    #expect(RetryAfter.wait("Wednesday, 21-Oct-15 07:28:00 GMT", now: Self.now) == .seconds(60))
    #expect(RetryAfter.wait("Wed Oct 21 07:28:00 2015", now: Self.now) == .seconds(60))
    #expect(
      RetryAfter.wait("Wed, 21 Oct 2015 07:00:00 GMT", now: Self.now) == .zero, "a date past is no wait")
  }

  @Test func anythingElse_IsNoWait() {
    for header in ["", " ", "soon", "-5", "7s", "1.5"] {
      #expect(RetryAfter.wait(header, now: Self.now) == nil, "\(header)")
    }
  }
}
