import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// A second trial after a cooldown (`OnceFor=`) through a real socket, on every store, on the
/// daemon's clock in virtual time: refused with `availableAt` until the last start plus the
/// cooldown, granted then, refused again until the next window; GrantAgain names the last trial.
@Suite struct CooldownMethodTests {
  static let day: TimeInterval = 86_400

  @Test(arguments: StoreKind.allCases)
  func startsOfAPlanWithOnceFor_FollowTheDaemonsClock(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x61, 0x62, 0x63, 0x64])
    let ddg = TrialPlan(name: "ddg", length: .days(14), reminders: .none, once: .plan, onceFor: .days(270))
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["ddg": ddg])) }
    let client = try fixture.client()
    let start = StartTrialParameters(subject: "hal", plan: "ddg")
    func refusal() -> ControlError? { remoteError { _ = try client.startTrial(start) } }

    let first = try client.startTrial(start)
    let firstStart = fixture.now
    _ = try client.endTrial(EndTrialParameters(id: first.id, outcome: .cancelled))
    fixture.advance(by: 100 * Self.day)
    let refused = refusal()
    #expect(refused?.name == "io.trialwatch.TrialAlreadyUsed")
    #expect(refused?.parameters.availableAt == RFC3339.format(firstStart.addingTimeInterval(270 * Self.day)))
    #expect(refused?.parameters.lastStartedAt == RFC3339.format(firstStart))
    #expect(
      refused?.parameters.lastId == first.id.description && refused?.parameters.id == first.id.description)
    #expect(refused?.description.contains("it may start again at") == true)

    fixture.advance(by: 170 * Self.day)
    let second = try client.startTrial(start)
    #expect(second.id == TrialID(0x62))
    let secondStart = fixture.now
    _ = try client.endTrial(EndTrialParameters(id: second.id, outcome: .converted))
    fixture.advance(by: 269 * Self.day)
    let again = refusal()
    #expect(again?.parameters.availableAt == RFC3339.format(secondStart.addingTimeInterval(270 * Self.day)))
    #expect(again?.parameters.id == first.id.description && again?.parameters.lastId == second.id.description)
    #expect(again?.description.contains("its last, trial \(second.id)") == true)

    // GrantAgain removes the record, naming its first and last trials.
    let granted = try client.call(Trials.grantAgain, GrantAgainParameters(subject: "hal", plan: "ddg")).used
    #expect(granted?.id == first.id && granted?.lastId == second.id && granted?.lastStartedAt == secondStart)
    let third = try client.startTrial(start)
    #expect(third.id == TrialID(0x63))
  }
}
