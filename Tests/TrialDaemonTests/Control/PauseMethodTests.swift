import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// PauseTrial and ResumeTrial through a real socket, on every store, in virtual time: the
/// replies, the events delivered (as the journal gets them), the refusals, and a pause that runs
/// out.
@Suite struct PauseMethodTests {
  static let day: TimeInterval = 86_400

  private func pause(_ client: VarlinkClient, _ target: TrialTarget) throws -> TrialObject {
    try client.call(Trials.pauseTrial, TrialTargetParameters(target)).trial
  }

  private func resume(_ client: VarlinkClient, _ target: TrialTarget) throws -> TrialObject {
    try client.call(Trials.resumeTrial, TrialTargetParameters(target)).trial
  }

  @Test(arguments: StoreKind.allCases)
  func pauseAndResume_FreezeTheTimeLeft_AndNothingFiresTwice(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x50])
    let client = try fixture.client()
    let trial = try client.startTrial("acme-50", days: 10, reminders: [3, 1])
    fixture.advance(by: 8 * Self.day)
    #expect(fixture.fireDue().map(\.kind) == [.reminder])

    let paused = try pause(client, .subject("acme-50"))
    #expect(paused.state == .paused && paused.pausedAt == fixture.now && paused.resumesAt == nil)
    #expect(paused.timeLeft?.duration == .days(2) && paused.daysLeft == 2 && paused.revision == 1)
    let pauseEvent = fixture.fireDue()
    #expect(pauseEvent.map(\.id.description) == ["0000000000000050-r1-paused-172800000ms"])
    #expect(pauseEvent.first?.kind == .paused && pauseEvent.first?.left?.duration == .days(2))
    #expect(pauseEvent.first?.endsAt == ControlFixture.start.addingTimeInterval(10 * Self.day))
    let status = try client.getStatus()
    #expect(status.trials.paused == 1 && status.trials.active == 0 && status.pendingEvents == 0)

    let extend = remoteError {
      _ = try client.extendTrial(ExtendTrialParameters(id: trial.id, change: .by(.days(1))))
    }
    #expect(extend?.name == "io.trialwatch.TrialNotActive" && extend?.parameters.state == "paused")
    let again = remoteError { _ = try pause(client, .id(trial.id)) }
    #expect(again?.name == "io.trialwatch.TrialNotActive" && again?.parameters.state == "paused")

    // A month paused: nothing fires, and the time left stays.
    fixture.advance(by: 30 * Self.day)
    #expect(fixture.fireDue().isEmpty)
    #expect(try client.getTrial(GetTrialParameters(id: trial.id)).daysLeft == 2)

    let resumed = try resume(client, .id(trial.id))
    #expect(resumed.state == .active && resumed.revision == 2 && resumed.pausedAt == nil)
    #expect(resumed.endsAt == fixture.now.addingTimeInterval(2 * Self.day))
    let resumeEvent = fixture.fireDue()
    #expect(resumeEvent.map(\.kind) == [.resumed] && resumeEvent.first?.endsAt == resumed.endsAt)
    let notPaused = remoteError { _ = try resume(client, .subject("acme-50")) }
    #expect(notPaused?.name == "io.trialwatch.TrialNotPaused" && notPaused?.parameters.state == "active")

    let plan = try client.getPlan(GetPlanParameters(id: trial.id))
    #expect(
      plan.map { "\($0.id.revision) \($0.kind.rawValue) \($0.state.rawValue)" } == [
        "1 reminder delivered", "1 paused delivered", "2 reminder skipped", "1 resumed delivered",
        "2 reminder pending", "2 expiry pending",
      ])
    #expect(plan[2].reason == "already-due-at-resume")
    fixture.advance(by: 2 * Self.day)
    #expect(
      fixture.fireDue().map(\.id.description) == [
        "0000000000000050-r2-reminder-86400000ms", "0000000000000050-r2-expiry",
      ])
  }

  @Test(arguments: StoreKind.allCases)
  func pauseOfAPlanWithMaxPause_ResumesByItself(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0x51])
    let pro = TrialPlan(name: "pro", length: .days(14), reminders: .none, maxPause: .days(3))
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["pro": pro])) }
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme-51", plan: "pro"))
    fixture.advance(by: Self.day)
    let paused = try pause(client, .id(trial.id))
    #expect(paused.resumesAt == fixture.now.addingTimeInterval(3 * Self.day))
    _ = fixture.fireDue()
    let status = try client.getStatus()
    #expect(status.pendingEvents == 1 && status.nextEvent?.kind == .resumed)
    #expect(status.nextEvent?.due == paused.resumesAt)

    fixture.advance(by: 3 * Self.day)
    let resumed = fixture.fireDue()
    #expect(resumed.map(\.id.description) == ["0000000000000051-r1-resumed-1123200000ms"])
    let now = try client.getTrial(GetTrialParameters(id: trial.id))
    #expect(now.state == .active && now.revision == 2)
    #expect(now.endsAt == ControlFixture.start.addingTimeInterval(17 * Self.day))
    fixture.advance(by: 14 * Self.day)
    #expect(fixture.fireDue().map(\.kind) == [.expiry])
  }

  @Test func pauseAndResume_WithBadParameters_AreRefusedNamingThem() throws {
    let fixture = try ControlFixture(ids: [0x52])
    let client = try fixture.client()
    for method in ["io.trialwatch.Trials.PauseTrial", "io.trialwatch.Trials.ResumeTrial"] {
      let none = remoteError { _ = try client.call(method, "{}") }
      #expect(none?.name == "org.varlink.service.InvalidParameter" && none?.parameters.parameter == "id")
      let both = remoteError { _ = try client.call(method, #"{"id":"0000000000000052","subject":"x"}"#) }
      #expect(both?.name == "org.varlink.service.InvalidParameter" && both?.parameters.parameter == "subject")
      let missing = remoteError { _ = try client.call(method, #"{"subject":"nobody"}"#) }
      #expect(missing?.name == "io.trialwatch.TrialNotFound" && missing?.parameters.subject == "nobody")
    }
  }
}
