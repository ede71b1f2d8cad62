import FoundationEssentials
import Testing
import TrialCore

private let epoch = Date(timeIntervalSince1970: 1_800_000_000)

@Suite struct WebhookSecretTests {
  @Test func secret_WrittenAndReadAgain_IsTheSame() throws {
    let secret = try WebhookSecret(key: Array(0..<32))
    #expect(secret.text == "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    #expect(try WebhookSecret(secret.text) == secret)
    #expect(!secret.description.contains("AAEC"), "a secret's description never shows its key")
  }

  @Test func secretText_WithoutPrefixOrBase64OrOfAWrongLength_IsRefusedSayingWhy() {
    #expect(throws: WebhookSecretError.prefix) { try WebhookSecret("AAECAwQFBgcICQoLDA0ODxAREhMUFRYX") }
    #expect(throws: WebhookSecretError.base64) { try WebhookSecret("whsec_not base64!") }
    #expect(throws: WebhookSecretError.length(16)) { try WebhookSecret("whsec_AAECAwQFBgcICQoLDA0ODw==") }
    #expect(throws: WebhookSecretError.length(65)) { try WebhookSecret(key: Array(repeating: 1, count: 65)) }
    #expect("\(WebhookSecretError.length(16))".contains("24 to 64 bytes"))
  }

  @Test func signatureHeader_OfTwoMACs_IsEachVersionedAndSpaceSeparated() {
    #expect(WebhookSignature.header(macs: [[0, 1, 2], [255]]) == "v1,AAEC v1,/w==")
    #expect(
      WebhookSignature.signedContent(id: "msg_1", timestamp: 1_800_000_000, body: Array("{}".utf8))
        == Array("msg_1.1800000000.{}".utf8))
  }
}

@Suite struct WebhookRetryScheduleTests {
  @Test func standardSchedule_CountsEachStepFromTheFailureBefore_AndRepeatsItsLast() {
    let schedule = WebhookRetrySchedule.standard
    #expect(schedule.attempt(1, after: epoch) == epoch)
    #expect(schedule.attempt(2, after: epoch) == epoch.addingTimeInterval(5))
    #expect(schedule.attempt(3, after: epoch) == epoch.addingTimeInterval(300))
    #expect(schedule.attempt(10, after: epoch) == epoch.addingTimeInterval(86_400))
    #expect(schedule.attempt(25, after: epoch) == epoch.addingTimeInterval(86_400), "the last step repeats")
  }

  @Test func retryAfter_WinsOverTheStep_UpToTwoHoursPastIt() {
    let schedule = WebhookRetrySchedule.standard
    #expect(schedule.attempt(3, after: epoch, asked: .seconds(7)) == epoch.addingTimeInterval(7))
    #expect(schedule.attempt(3, after: epoch, asked: .hours(10)) == epoch.addingTimeInterval(300 + 7_200))
    #expect(schedule.attempt(3, after: epoch, asked: .seconds(-5)) == epoch, "a wait in the past is none")
  }

  @Test func schedule_EmptyOrWithANegativeStep_IsRefused() {
    #expect(throws: WebhookScheduleError.empty) { try WebhookRetrySchedule([]) }
    #expect(throws: WebhookScheduleError.negative(.seconds(-1))) {
      try WebhookRetrySchedule([.zero, .seconds(-1)])
    }
  }
}

@Suite struct WebhookAttemptTests {
  @Test func attempt_AnsweredWith2xxDeliversAndWith410IsGone_ARedirectFails() {
    #expect(WebhookAttempt.answered(status: 204, retryAfter: nil).delivered)
    #expect(!WebhookAttempt.answered(status: 301, retryAfter: nil).delivered)
    #expect(!WebhookAttempt.failed("Couldn't connect to server").delivered)
    #expect(WebhookAttempt.answered(status: 410, retryAfter: nil).gone)
  }

  @Test func retryAfter_IsTakenOnThrottlingStatusesOnly() {
    for status in [429, 502, 503, 504] {
      #expect(WebhookAttempt.answered(status: status, retryAfter: .seconds(7)).askedWait == .seconds(7))
    }
    #expect(WebhookAttempt.answered(status: 500, retryAfter: .seconds(7)).askedWait == nil)
  }
}

@Suite struct WebhookEndpointHealthTests {
  let fiveDays = Duration.days(5)

  @Test func failures_ForLongerThanDisableAfter_DisableTheEndpointUnlessADeliveryClearedThem() {
    var health = WebhookEndpointHealth()
    var disabled: Bool
    let failure = WebhookAttempt.answered(status: 500, retryAfter: nil)
    disabled = health.record(failure, at: epoch, disableAfter: fiveDays)
    #expect(!disabled)
    disabled = health.record(failure, at: epoch.addingTimeInterval(86_400), disableAfter: fiveDays)
    #expect(!disabled)
    #expect(health.consecutiveFailures == 2)
    #expect(health.failingSince == epoch)
    disabled = health.record(
      .answered(status: 200, retryAfter: nil), at: epoch.addingTimeInterval(2 * 86_400),
      disableAfter: fiveDays)
    #expect(!disabled)
    #expect(health.consecutiveFailures == 0)
    #expect(health.failingSince == nil)

    let start = epoch.addingTimeInterval(3 * 86_400)
    disabled = health.record(failure, at: start, disableAfter: fiveDays)
    #expect(!disabled)
    disabled = health.record(failure, at: start.addingTimeInterval(5 * 86_400 - 1), disableAfter: fiveDays)
    #expect(!disabled)
    disabled = health.record(failure, at: start.addingTimeInterval(5 * 86_400), disableAfter: fiveDays)
    #expect(disabled)
    #expect(health.disabled == .failing(since: start, at: start.addingTimeInterval(5 * 86_400)))
    #expect(
      health.disabled?.description.contains("5d of failures") == true, "\(health.disabled!.description)")
  }

  @Test func gone_DisablesAtOnce_EnableClearsIt() {
    var health = WebhookEndpointHealth()
    var disabled: Bool
    disabled = health.record(.answered(status: 410, retryAfter: nil), at: epoch, disableAfter: fiveDays)
    #expect(disabled)
    #expect(health.disabled == .gone(at: epoch))
    #expect(health.lastAttempt == .answered(status: 410, retryAfter: nil))
    health.enable()
    #expect(health.disabled == nil)
    #expect(health.consecutiveFailures == 0)
  }
}
