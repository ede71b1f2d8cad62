import FoundationEssentials
import TrialCore

/// The body of a webhook (Standard Webhooks 1.0's payload): the event's type, when it happened,
/// and the event as `Watch` gives it (subject, plan and the other named attributes, labels,
/// `endsAt`, `cursor`, ...).
public struct WebhookMessage: Encodable, Sendable {
  /// `trial.reminder`, `trial.expiry`, `trial.paused`, `trial.resumed`, `trial.grace-started`;
  /// `trialwatch.test` for `webhooks test`.
  public var type: String
  /// When the event was taken (fired), else when it was due.
  public var timestamp: Date
  public var data: EventObject?

  /// The message of `event`.
  public init(event: EventObject) {
    type = Self.type(of: event.kind)
    timestamp = event.takenAt ?? event.due
    data = event
  }

  /// A message of type `trialwatch.test`, with no event.
  public static func test(at time: Date) -> WebhookMessage {
    WebhookMessage(type: testType, timestamp: time, data: nil)
  }

  private init(type: String, timestamp: Date, data: EventObject?) {
    self.type = type
    self.timestamp = timestamp
    self.data = data
  }

  public static let testType = "trialwatch.test"

  public static func type(of kind: EventObject.Kind) -> String { "trial.\(kind.name)" }

  private enum CodingKeys: String, CodingKey {
    case type, timestamp, data
  }

  /// `data` is always an object (the specification's payload has one): empty in a test message.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(type, forKey: .type)
    try container.encode(timestamp, forKey: .timestamp)
    if let data {
      try container.encode(data, forKey: .data)
    } else {
      try container.encode([String: String](), forKey: .data)
    }
  }

  /// The body, as sent: JSON, encoded as every reply of the control socket is.
  public func body() throws -> [UInt8] {
    Array(try WireCoding.makeEncoder().encode(self))
  }
}
