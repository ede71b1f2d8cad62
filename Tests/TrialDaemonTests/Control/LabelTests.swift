import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// Labels through the socket: set at the start, changed as a trial is extended or ended, on
/// every event as it was when taken, and a filter of ListTrials.
@Suite struct LabelTests {
  static let labels = ["customer": "c-991", "email": "ada@example.com", "tier": "pro"]

  @Test(arguments: StoreKind.allCases)
  func labels_SetAtStartAndChangedByExtendOrEnd_ReadBack(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0xA1, 0xA2])
    let client = try fixture.client()
    let started = try client.startTrial(
      StartTrialParameters(subject: "acme-42", duration: .days(5), labels: Self.labels))
    #expect(started.labels == Self.labels)
    #expect(try client.getTrial(GetTrialParameters(subject: "acme-42")).labels == Self.labels)

    let extended = try client.extendTrial(
      ExtendTrialParameters(
        id: started.id, change: .by(.days(2)), labels: ["tier": "enterprise", "email": nil]))
    #expect(extended.labels == ["customer": "c-991", "tier": "enterprise"])
    let ended = try client.endTrial(
      EndTrialParameters(id: started.id, outcome: .converted, labels: ["converted_by": "sales"]))
    #expect(ended.labels == ["customer": "c-991", "tier": "enterprise", "converted_by": "sales"])
    #expect(try client.getTrial(GetTrialParameters(id: started.id)).labels == ended.labels)

    // Without labels: an empty object, and changes that leave them as they are.
    let plain = try client.startTrial(StartTrialParameters(subject: "plain", duration: .days(5)))
    #expect(plain.labels == [:])
    #expect(try client.extendTrial(ExtendTrialParameters(id: plain.id, change: .by(.days(1)))).labels == [:])
  }

  @Test(arguments: StoreKind.allCases)
  func events_CarryTheLabelsOfTheirTime_InWatchAndThePlan(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0xB1])
    let client = try fixture.client()
    let trial = try client.startTrial(
      StartTrialParameters(
        subject: "b", duration: .days(3), reminders: try ReminderSchedule([.days(1)]), labels: ["tier": "pro"]
      )
    )
    let watcher = try fixture.client()
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()

    fixture.advance(by: 2 * 86_400)  // the reminder, labelled tier=pro
    _ = try client.extendTrial(
      ExtendTrialParameters(id: trial.id, change: .by(.days(1)), labels: ["tier": "max", "region": "eu"]))
    // The new revision's reminder, then the expiry, labelled as the trial is then.
    fixture.advance(by: 2 * 86_400)
    var events: [EventObject] = []
    while events.count < 3 {
      if let event = try watcher.receive().parameters(as: WatchReply.self).event { events.append(event) }
    }
    #expect(events.map(\.kind) == [.reminder, .reminder, .expiry])
    #expect(
      events.map(\.labels) == [
        ["tier": "pro"], ["tier": "max", "region": "eu"], ["tier": "max", "region": "eu"],
      ])
    let plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.allSatisfy { $0.labels == ["tier": "max", "region": "eu"] })
  }

  @Test(arguments: StoreKind.allCases)
  func listTrials_ByLabel_ReturnsOnlyThoseWithIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [1, 2, 3, 4])
    let client = try fixture.client()
    for (subject, tier) in [("a", "pro"), ("b", "free"), ("c", "pro"), ("d", "pro=x")] {
      _ = try client.startTrial(
        StartTrialParameters(subject: subject, duration: .days(5), labels: ["tier": tier]))
    }
    func subjects(_ label: String) throws -> [String] {
      try client.listTrials(ListTrialsParameters(label: label)).trials.map(\.subject)
    }
    #expect(try subjects("tier=pro") == ["a", "c"])
    #expect(try subjects("tier=pro=x") == ["d"])
    #expect(try subjects("tier=") == [])
    #expect(try subjects("region=eu") == [])
  }

  @Test(arguments: [
    (#"{"subject":"s","labels":{"Tier":"x"}}"#, "label \"Tier\" must start with a lower-case letter a-z"),
    (#"{"subject":"s","labels":{"note":"a\nb"}}"#, "label \"note\" has a value with a control character"),
    (
      #"{"subject":"s","labels":{"note":"\#(String(repeating: "v", count: 513))"}}"#,
      "label \"note\" has a value longer than 512 bytes"
    ),
    (#"{"subject":"s","labels":{"tier":1}}"#, "tier"),
  ])
  func startTrial_WithALabelOutOfBounds_IsInvalidParameterNamingIt(parameters: String, problem: String) throws
  {
    let fixture = try ControlFixture()
    let error = remoteError { _ = try fixture.client().call("io.trialwatch.Trials.StartTrial", parameters) }
    #expect(error?.name == "org.varlink.service.InvalidParameter")
    #expect(error?.parameters.parameter?.hasPrefix("labels") == true)
    let said = "\(error?.parameters.problem ?? "") \(error?.parameters.parameter ?? "")"
    #expect(said.contains(problem), "\(said)")
  }

  @Test(arguments: StoreKind.allCases)
  func extendTrial_PastTheLimitsOfTheWhole_IsRefusedAndChangesNothing(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [7])
    let client = try fixture.client()
    let full = Dictionary(uniqueKeysWithValues: (0..<32).map { ("k\($0)", "v") })
    let trial = try client.startTrial(StartTrialParameters(subject: "s", duration: .days(5), labels: full))
    let error = remoteError {
      _ = try client.extendTrial(
        ExtendTrialParameters(id: trial.id, change: .by(.days(1)), labels: ["k99": "v"]))
    }
    #expect(error?.name == "org.varlink.service.InvalidParameter")
    #expect(error?.parameters.parameter == "labels")
    #expect(error?.parameters.problem?.contains("labels are 33, more than 32") == true)
    let after = try client.getTrial(GetTrialParameters(id: trial.id))
    #expect(after.labels == full && after.revision == 1)
    // Removing one makes room.
    let changed = try client.extendTrial(
      ExtendTrialParameters(id: trial.id, change: .by(.days(1)), labels: ["k0": nil, "k99": "v"]))
    #expect(changed.labels?.count == 32 && changed.labels?["k99"] == "v" && changed.labels?["k0"] == nil)
  }
}
