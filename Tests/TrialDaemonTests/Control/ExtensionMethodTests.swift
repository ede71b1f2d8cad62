import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// Extension limits through a real socket, on every store, in virtual time: the count in each
/// reply, ExtensionRefused with its numbers and nothing changed (labels included), the metric
/// of refusals by limit, a start beyond MaxLength=, the limits in ListPlans, and a tightened
/// plan applying at its reload.
@Suite struct ExtensionMethodTests {
  static let day: TimeInterval = 86_400
  /// The Unraid programme: 15 days, extended at most twice, 60 days in all.
  static let unraid = TrialPlan(
    name: "unraid", length: .days(15), reminders: try! ReminderSchedule([.days(3)]), maxExtensions: 2,
    maxLength: .days(60))

  private func extend(
    _ client: VarlinkClient, _ id: TrialID, _ change: TrialEndChange, labels: [String: String?]? = nil
  )
    throws -> TrialObject
  {
    try client.extendTrial(ExtendTrialParameters(id: id, change: change, labels: labels))
  }

  @Test(arguments: StoreKind.allCases)
  func extensions_AreCountedThenRefused_ChangingNothing(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store, ids: [0xE0, 0xE1])
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["unraid": Self.unraid])) }
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme-e0", plan: "unraid"))
    #expect(trial.extensions == 0)
    fixture.advance(by: 10 * Self.day)
    let once = try extend(client, trial.id, .by(.days(15)))
    #expect(once.extensions == 1 && once.revision == 2)
    let twice = try extend(client, trial.id, .by(.days(15)))
    #expect(twice.extensions == 2 && twice.endsAt == ControlFixture.start.addingTimeInterval(45 * Self.day))

    let third = remoteError { _ = try extend(client, trial.id, .by(.days(1)), labels: ["note": "third"]) }
    #expect(third?.name == "io.trialwatch.ExtensionRefused")
    #expect(third?.parameters.limitName == "max-extensions" && third?.parameters.plan == "unraid")
    #expect(third?.parameters.extensions == 2 && third?.parameters.maxExtensions == 2)
    #expect(third?.parameters.maxLength == TimeSpan.format(.days(60)))
    #expect(
      third?.parameters.latestEndsAt == RFC3339.format(ControlFixture.start.addingTimeInterval(60 * Self.day))
    )
    let unchanged = try client.getTrial(GetTrialParameters(id: trial.id))
    #expect(unchanged == TrialObject(twice, asOf: unchanged.daysLeft))

    // Another trial of the plan: beyond 60 days in all, with the latest end allowed.
    let other = try client.startTrial(StartTrialParameters(subject: "acme-e1", plan: "unraid"))
    let beyond = remoteError { _ = try extend(client, other.id, .by(.days(46))) }
    #expect(beyond?.name == "io.trialwatch.ExtensionRefused" && beyond?.parameters.limitName == "max-length")
    #expect(beyond?.parameters.extensions == 0)
    #expect(beyond?.parameters.latestEndsAt == RFC3339.format(fixture.now.addingTimeInterval(60 * Self.day)))
    #expect(beyond?.parameters.endsAt == RFC3339.format(fixture.now.addingTimeInterval(61 * Self.day)))
    #expect(try extend(client, other.id, .by(.days(45))).extensions == 1)

    let metrics = try MetricsMethodTests.list(client, ["io.trialwatch.extensions_refused"])
    #expect(
      metrics.mapValues(MetricsMethodTests.integer) == [
        "io.trialwatch.extensions_refused{limit=max-extensions}": 1,
        "io.trialwatch.extensions_refused{limit=max-length}": 1,
      ])
    // No event came of the refusals: the reminders of the extended revisions only.
    #expect(fixture.fireDue().isEmpty)
  }

  @Test func startBeyondMaxLength_IsInvalidParameter_AndListPlansShowsTheLimits() throws {
    let fixture = try ControlFixture(ids: [0xE2])
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["unraid": Self.unraid])) }
    let client = try fixture.client()
    let long = remoteError {
      _ = try client.startTrial(StartTrialParameters(subject: "acme-e2", duration: .days(61), plan: "unraid"))
    }
    #expect(long?.name == "org.varlink.service.InvalidParameter" && long?.parameters.parameter == "duration")
    #expect(
      long?.parameters.problem?.contains("MaxLength=\(TimeSpan.format(.days(60))) of plan \"unraid\"") == true
    )
    let late = remoteError {
      _ = try client.startTrial(
        StartTrialParameters(
          subject: "acme-e2", endsAt: fixture.now.addingTimeInterval(61 * Self.day), plan: "unraid"))
    }
    #expect(late?.parameters.parameter == "endsAt")
    let plans = try client.call(Trials.listPlans, ListPlansParameters(activeTrials: false)).plans
    #expect(plans.first?.maxExtensions == 2 && plans.first?.maxLength?.duration == .days(60))
  }

  /// The limits are the plan's as loaded now: a reload that sets MaxExtensions=1 refuses the
  /// second extension of a trial started before it.
  @Test func reloadedLimit_AppliesToTheTrialsOpenAlready() throws {
    let fixture = try ControlFixture(ids: [0xE3])
    let engine = fixture.engine
    let open = TrialPlan(name: "unraid", length: .days(15), reminders: .none)
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["unraid": open])) }
    let client = try fixture.client()
    let trial = try client.startTrial(StartTrialParameters(subject: "acme-e3", plan: "unraid"))
    #expect(try extend(client, trial.id, .by(.days(5))).extensions == 1)
    var tightened = open
    tightened.maxExtensions = 1
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: ["unraid": tightened])) }
    let refused = remoteError { _ = try extend(client, trial.id, .by(.days(5))) }
    #expect(refused?.parameters.limitName == "max-extensions" && refused?.parameters.maxLength == nil)
  }
}

extension TrialObject {
  /// `trial` with the days left of a later reply (a read as of another time).
  fileprivate init(_ trial: TrialObject, asOf daysLeft: Double) {
    self = trial
    self.daysLeft = daysLeft
  }
}
