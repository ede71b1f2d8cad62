import FoundationEssentials
import TrialCore

/// The `state` column of `trialwatch.webhook_endpoint` (schema version 9): a webhook endpoint's
/// health, its last attempts and a replay's skip, as a JSON object (the name is the row's key).
/// Times are seconds since 2001-01-01 UTC, exactly as the daemon holds them (as the `*_s`
/// columns); spans are whole microseconds (`*_us`); cursors are their sequence:
///
///     {"consecutive_failures": 2, "failing_since_s": 790000001, "last_attempt_s": 790000002,
///      "last_attempt": {"failure": "could not connect: refused"},
///      "disabled": {"reason": "failing", "since_s": 790000001, "at_s": 790000002},
///      "skip": [9, 12],
///      "attempts": [{"at_s": 790000001, "cursor": 3, "message_id": "…", "number": 1,
///        "status": 503, "retry_after_us": 7000000, "duration_us": 12000}]}
///
/// An outcome is `status` (with `retry_after_us` when the server asked for a wait) or
/// `failure`; `disabled`'s reason is `gone` (with `at_s`) or `failing`.
enum WebhookStateJSON {
  private struct State: Codable {
    var consecutiveFailures: Int
    var failingSinceS: Double?
    var lastAttemptS: Double?
    var lastAttempt: Outcome?
    var disabled: Disabled?
    var skip: [UInt64]?
    var attempts: [Attempt]
  }

  private struct Outcome: Codable {
    var status: Int?
    var retryAfterUs: Int64?
    var failure: String?
  }

  private struct Disabled: Codable {
    var reason: String
    var sinceS: Double?
    var atS: Double
  }

  private struct Attempt: Codable {
    var atS: Double
    var cursor: UInt64?
    var messageId: String
    var number: Int
    var status: Int?
    var retryAfterUs: Int64?
    var failure: String?
    var durationUs: Int64
  }

  /// The JSON of `state`.
  /// - Throws: `TrialError` for a time that is not a finite number.
  static func json(_ state: WebhookEndpointState) throws -> String {
    let health = state.health
    let stored = State(
      consecutiveFailures: health.consecutiveFailures,
      failingSinceS: health.failingSince.map(PostgresRecords.seconds),
      lastAttemptS: health.lastAttemptAt.map(PostgresRecords.seconds),
      lastAttempt: health.lastAttempt.map(outcome), disabled: health.disabled.map(disabled),
      skip: state.skip.map { [$0.lowerBound, $0.upperBound] },
      attempts: state.attempts.map { attempt in
        let outcome = outcome(attempt.outcome)
        return Attempt(
          atS: PostgresRecords.seconds(attempt.at), cursor: attempt.cursor?.sequence,
          messageId: attempt.messageID, number: attempt.number, status: outcome.status,
          retryAfterUs: outcome.retryAfterUs, failure: outcome.failure,
          durationUs: attempt.duration.roundedMicroseconds)
      })
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    encoder.outputFormatting = .sortedKeys
    do {
      return String(decoding: try encoder.encode(stored), as: UTF8.self)
    } catch {
      throw TrialError.invalid(.consumer, "the state of webhook endpoint \"\(state.name)\" cannot be stored")
    }
  }

  /// The state of endpoint `name` a column holds.
  /// - Throws: `PostgresStoreError.damaged` naming the endpoint when the column is NULL or not
  ///   such an object.
  static func state(_ json: String?, name: String) throws -> WebhookEndpointState {
    let damaged = PostgresStoreError.damaged("an unreadable state of webhook endpoint \"\(name)\"")
    guard let json else { throw damaged }
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    guard let stored = try? decoder.decode(State.self, from: Data(json.utf8)) else { throw damaged }
    var state = WebhookEndpointState(name: name)
    state.health.consecutiveFailures = stored.consecutiveFailures
    state.health.failingSince = stored.failingSinceS.map(PostgresRecords.date)
    state.health.lastAttemptAt = stored.lastAttemptS.map(PostgresRecords.date)
    if let last = stored.lastAttempt {
      guard let outcome = outcome(status: last.status, retryAfterUs: last.retryAfterUs, failure: last.failure)
      else { throw damaged }
      state.health.lastAttempt = outcome
    }
    if let disabled = stored.disabled {
      switch (disabled.reason, disabled.sinceS) {
      case ("gone", nil): state.health.disabled = .gone(at: PostgresRecords.date(disabled.atS))
      case ("failing", let since?):
        state.health.disabled = .failing(
          since: PostgresRecords.date(since), at: PostgresRecords.date(disabled.atS))
      default: throw damaged
      }
    }
    if let skip = stored.skip {
      guard skip.count == 2, skip[0] <= skip[1] else { throw damaged }
      state.skip = skip[0]...skip[1]
    }
    for attempt in stored.attempts {
      guard
        let outcome = outcome(
          status: attempt.status, retryAfterUs: attempt.retryAfterUs, failure: attempt.failure)
      else { throw damaged }
      state.attempts.append(
        WebhookAttemptRecord(
          at: PostgresRecords.date(attempt.atS), cursor: attempt.cursor.map { EventCursor($0) },
          messageID: attempt.messageId, number: attempt.number, outcome: outcome,
          duration: .microseconds(attempt.durationUs)))
    }
    return state
  }

  private static func outcome(_ attempt: WebhookAttempt) -> Outcome {
    switch attempt {
    case .answered(let status, let retryAfter):
      Outcome(status: status, retryAfterUs: retryAfter?.roundedMicroseconds)
    case .failed(let reason): Outcome(failure: reason)
    }
  }

  private static func outcome(status: Int?, retryAfterUs: Int64?, failure: String?) -> WebhookAttempt? {
    switch (status, failure) {
    case (let status?, nil): .answered(status: status, retryAfter: retryAfterUs.map { .microseconds($0) })
    case (nil, let failure?) where retryAfterUs == nil: .failed(failure)
    default: nil
    }
  }

  private static func disabled(_ disabled: WebhookEndpointHealth.Disabled) -> Disabled {
    switch disabled {
    case .gone(let at): Disabled(reason: "gone", atS: PostgresRecords.seconds(at))
    case .failing(let since, let at):
      Disabled(reason: "failing", sinceS: PostgresRecords.seconds(since), atS: PostgresRecords.seconds(at))
    }
  }
}
