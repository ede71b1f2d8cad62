import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// GetOutlook through a real socket, in virtual time: the trials whose next event falls due
/// within each span, as the engine's planner holds them, and the spans refused.
@Suite struct OutlookMethodTests {
  static let day: TimeInterval = 86_400

  static func outlook(_ client: VarlinkClient, _ spans: String...) throws -> [DueWithin] {
    try client.call(Trials.getOutlook, GetOutlookParameters(within: spans.map { try GivenSpan(parsing: $0) }))
      .windows
  }

  @Test(arguments: StoreKind.allCases)
  func getOutlook_CountsOpenTrialsByTheirNextEvent(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3, 4, 5])
    let engine = fixture.engine
    let plans = ["pro": TrialPlan(name: "pro", length: .days(10), reminders: .none, maxPause: .days(3))]
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: plans)) }
    let client = try fixture.client()
    _ = try client.startTrial("a", days: 2, reminders: [])  // its expiry at day 2
    _ = try client.startTrial("b", days: 5, reminders: [3, 1])  // next: a reminder at day 2
    _ = try client.startTrial("c", days: 10, reminders: [1])  // next: a reminder at day 9
    let paused = try client.startTrial(StartTrialParameters(subject: "d", plan: "pro"))
    _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(paused.id)))  // resumes at day 3
    let ended = try client.startTrial("e", days: 1, reminders: [])
    _ = try client.endTrial(EndTrialParameters(id: ended.id, outcome: .cancelled))

    #expect(
      try Self.outlook(client, "24h", "2d", "3d", "10d", "1s") == [
        DueWithin(within: "24h", trials: 0), DueWithin(within: "2d", trials: 2),
        DueWithin(within: "3d", trials: 3), DueWithin(within: "10d", trials: 4),
        DueWithin(within: "1s", trials: 0),
      ])

    // Two days on: a expired, b's first reminder fired (its next at day 4).
    fixture.advance(by: 2 * Self.day)
    fixture.fireDue()
    #expect(
      try Self.outlook(client, "1d", "2d", "7d").map(\.trials) == [1, 2, 3],
      "d's resume at day 3, b's reminder at day 4, c's at day 9")
  }

  @Test func getOutlook_WithBadSpans_IsAnInvalidParameterNamingWithin() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    let method = Trials.getOutlook.qualifiedName
    let seventeen = "[" + Array(repeating: #""1d""#, count: 17).joined(separator: ",") + "]"
    for parameters in [
      "{}", #"{"within":[]}"#, #"{"within":\#(seventeen)}"#, #"{"within":["1d","0"]}"#,
      #"{"within":["500ms"]}"#, #"{"within":["soon"]}"#, #"{"within":"1d"}"#,
    ] {
      let error = remoteError { _ = try client.call(method, parameters) }
      #expect(error?.name == ControlError.Name.invalidParameter, "\(parameters)")
      #expect(error?.parameters.parameter == "within", "\(parameters)")
    }
    let zero = remoteError { _ = try client.call(method, #"{"within":["1d","0"]}"#) }
    #expect(zero?.parameters.problem == #"within[1]: must be at least 1s, got "0""#)
    let many = remoteError { _ = try client.call(method, #"{"within":\#(seventeen)}"#) }
    #expect(many?.parameters.problem == "within: give 1 to 16 spans, got 17")
    #expect(
      try Self.outlook(
        client, "1s", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s", "10s", "11s", "12s", "13s", "14s",
        "15s", "16s"
      ).count == 16)
  }

  /// A fleet node's planner holds the trials of the shards it owns: it counts those alone.
  @Test func getOutlook_OfAFleetNode_CountsTheTrialsOfItsShards() throws {
    let fixture = try ControlFixture(store: .postgres, ids: [1, 2, 3, 4])
    let engine = fixture.engine
    engine.queue.sync { engine.engine.fleet = FleetRole(owns: { $0.rawValue % 2 == 1 }) }
    let client = try fixture.client()
    for subject in ["a", "b", "c", "d"] { _ = try client.startTrial(subject, days: 5, reminders: []) }
    #expect(try Self.outlook(client, "5d").map(\.trials) == [2])
  }
}
