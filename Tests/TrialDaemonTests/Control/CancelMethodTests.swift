import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// CancelTrial and UncancelTrial through a real socket, on every store, in virtual time: the
/// replies (cancelsAt), the events delivered, GetPlan, the refusals, and a cancel now.
@Suite struct CancelMethodTests {
  static let day: TimeInterval = 86_400

  private func cancel(_ client: VarlinkClient, _ target: TrialTarget, atEnd: Bool = true) throws
    -> TrialObject
  {
    try client.call(Trials.cancelTrial, CancelTrialParameters(target, atEnd: atEnd)).trial
  }

  @Test(arguments: StoreKind.allCases)
  func cancelAtEnd_MarksTheTrial_AndItsExpiryCancelsIt(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x60])
    let client = try fixture.client()
    let trial = try client.startTrial("acme-60", days: 10, reminders: [3, 1])
    fixture.advance(by: Self.day)
    let marked = try cancel(client, .subject("acme-60"))
    #expect(
      marked.state == .active && marked.cancelsAt == trial.endsAt && marked.cancelAskedAt == fixture.now)
    #expect(try cancel(client, .id(trial.id)) == marked)
    #expect(try client.getTrial(GetTrialParameters(id: trial.id)).cancelsAt == trial.endsAt)
    let plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(plan.map { $0.reason ?? "-" } == ["cancel-at-end", "cancel-at-end", "-"])
    #expect(plan.last?.named["outcome"] == "cancelled")

    fixture.advance(by: 9 * Self.day)
    let events = fixture.fireDue()
    #expect(events.map(\.state) == [.skipped, .skipped, .fired])
    #expect(events.map { $0.reason ?? "-" } == ["cancel-at-end", "cancel-at-end", "-"])
    #expect(events.last?.kind == .expiry && events.last?.named["outcome"] == "cancelled")
    let ended = try client.getTrial(GetTrialParameters(id: trial.id))
    #expect(
      ended.state == .cancelled && ended.endedAt == trial.endsAt && ended.named["outcome"] == "cancelled")
    let status = try client.getStatus()
    #expect(status.trials.cancelled == 1 && status.trials.expired == 0)

    let late = remoteError { _ = try cancel(client, .id(trial.id)) }
    #expect(late?.name == "io.trialwatch.TrialNotActive" && late?.parameters.state == "cancelled")
    let uncancel = remoteError {
      _ = try client.call(Trials.uncancelTrial, TrialTargetParameters(.id(trial.id)))
    }
    #expect(uncancel?.name == "io.trialwatch.TrialNotActive")
  }

  @Test(arguments: StoreKind.allCases)
  func uncancelAndCancelNow_AnswerAsDocumented(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x61])
    let client = try fixture.client()
    let trial = try client.startTrial("acme-61", days: 10, reminders: [3])
    let notMarked = remoteError {
      _ = try client.call(Trials.uncancelTrial, TrialTargetParameters(.subject("acme-61")))
    }
    #expect(
      notMarked?.name == "io.trialwatch.TrialNotCancelling"
        && notMarked?.parameters.id == trial.id.description)
    _ = try cancel(client, .id(trial.id))
    let unmarked = try client.call(Trials.uncancelTrial, TrialTargetParameters(.subject("acme-61"))).trial
    #expect(unmarked.cancelsAt == nil && unmarked.cancelAskedAt == nil && unmarked.state == .active)
    fixture.advance(by: 7 * Self.day)
    #expect(fixture.fireDue().map(\.state) == [.fired])

    let now = try cancel(client, .id(trial.id), atEnd: false)
    #expect(now.state == .cancelled && now.endedAt == fixture.now && now.cancelsAt == nil)
    fixture.advance(by: 3 * Self.day)
    #expect(fixture.fireDue().isEmpty)
  }

  @Test func cancel_WithBadParameters_IsRefusedNamingThem() throws {
    let fixture = try ControlFixture(ids: [0x62])
    let client = try fixture.client()
    let method = "io.trialwatch.Trials.CancelTrial"
    let none = remoteError { _ = try client.call(method, #"{"atEnd":true}"#) }
    #expect(none?.name == "org.varlink.service.InvalidParameter" && none?.parameters.parameter == "id")
    let both = remoteError {
      _ = try client.call(method, #"{"id":"0000000000000062","subject":"x","atEnd":true}"#)
    }
    #expect(both?.name == "org.varlink.service.InvalidParameter" && both?.parameters.parameter == "subject")
    let noAtEnd = remoteError { _ = try client.call(method, #"{"subject":"x"}"#) }
    #expect(
      noAtEnd?.name == "org.varlink.service.InvalidParameter" && noAtEnd?.parameters.parameter == "atEnd")
    let missing = remoteError { _ = try client.call(method, #"{"subject":"nobody","atEnd":false}"#) }
    #expect(missing?.name == "io.trialwatch.TrialNotFound" && missing?.parameters.subject == "nobody")
  }
}
