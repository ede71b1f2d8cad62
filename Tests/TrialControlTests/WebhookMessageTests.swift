import Foundation
import Testing
import TrialControl
import TrialCore

@Suite struct WebhookMessageTests {
  static let due = Date(timeIntervalSince1970: 1_800_000_000)

  func object(_ message: WebhookMessage) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(message.body())) as? [String: Any])
  }

  @Test func expiry_IsTypedAndTimedAsTaken_WithTheEventAsWatchGivesIt() throws {
    let id = EventID(trialID: TrialID(0x1A7E), revision: 1, kind: .expiry)
    var event = EventObject(
      id: id, subject: "acme", labels: try TrialLabels(["tier": "pro"]), state: .fired, due: Self.due,
      takenAt: Self.due.addingTimeInterval(0.25))
    event.cursor = EventCursor(7)
    let body = try object(WebhookMessage(event: event))
    #expect(body["type"] as? String == "trial.expiry")
    #expect(body["timestamp"] as? String == RFC3339.format(Self.due.addingTimeInterval(0.25)))
    let data = try #require(body["data"] as? [String: Any])
    #expect(data["subject"] as? String == "acme")
    #expect(data["labels"] as? [String: String] == ["tier": "pro"])
    #expect(data["id"] as? String == id.description)
    #expect(data["endsAt"] as? String == RFC3339.format(Self.due))
    #expect(data["cursor"] != nil)
  }

  @Test func eachKind_HasItsType_AndATestMessageHasAnEmptyData() throws {
    #expect(
      EventObject.Kind.allCases.map(WebhookMessage.type(of:)) == [
        "trial.reminder", "trial.expiry", "trial.paused", "trial.resumed", "trial.grace-started",
        "trial.follow-up", "trial.milestone",
      ])
    let test = try object(WebhookMessage.test(at: Self.due))
    #expect(test["type"] as? String == "trialwatch.test")
    #expect((test["data"] as? [String: Any])?.isEmpty == true)
  }
}
