import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// GetStats with byVariant through a real socket, on every store: 400 trials of a plan with two
/// variants, assigned by the subject, converted or cancelled by the test; each variant's figures,
/// interval and the z-test as the test computes them from what it did; the refusals.
@Suite struct VariantStatsMethodTests {
  static let plans = [
    "pro": TrialPlan(
      name: "pro", length: .days(14), reminders: .none,
      variants: [
        TrialVariant(name: "short", weight: 1), TrialVariant(name: "long", weight: 3, length: .days(30)),
      ]),
    "basic": TrialPlan(name: "basic", length: .days(7), reminders: .none),
  ]

  @Test(arguments: StoreKind.allCases)
  func getStatsByVariant_EqualsWhatTheTestComputed(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: Self.plans)) }
    let client = try fixture.client()
    var tally: [String: (started: Int64, converted: Int64, cancelled: Int64)] = [:]
    for index in 0..<400 {
      let trial = try client.startTrial(StartTrialParameters(subject: "s-\(index)", plan: "pro"))
      let variant = try #require(trial.named["variant"])
      // One in 10 of short converts, one in 5 of long; a fourth of the others is cancelled.
      let converts = index % (variant == "short" ? 10 : 5) == 0
      tally[variant, default: (0, 0, 0)].started += 1
      if converts {
        _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .converted))
        tally[variant, default: (0, 0, 0)].converted += 1
      } else if index % 4 == 1 {
        _ = try client.endTrial(EndTrialParameters(id: trial.id, outcome: .cancelled))
        tally[variant, default: (0, 0, 0)].cancelled += 1
      }
      fixture.advance(by: 600)
    }
    _ = try client.startTrial(StartTrialParameters(subject: "other", plan: "basic"))
    let reply = try client.call(
      Trials.getStats,
      GetStatsParameters(
        from: CalendarDay(ControlFixture.start), to: CalendarDay(fixture.now), plan: "pro", byVariant: true))
    let variants = try #require(reply.variants)
    #expect(variants.map(\.variant) == ["short", "long"] && variants.map(\.weight) == [1, 3])
    for object in variants {
      let mine = try #require(tally[object.variant])
      let ended = mine.converted + mine.cancelled
      #expect(object.started == mine.started && object.converted == mine.converted)
      #expect(object.cancelled == mine.cancelled && object.active == mine.started - ended)
      let interval = try #require(Proportions.wilsonInterval(successes: mine.converted, trials: ended))
      #expect(abs(try #require(object.conversionRate) - Double(mine.converted) / Double(ended)) < 1e-6)
      #expect(abs(try #require(object.conversionLow) - interval.lowerBound) < 1e-6)
      #expect(abs(try #require(object.conversionHigh) - interval.upperBound) < 1e-6)
      #expect(object.medianTimeToConversion?.duration == .zero)
    }
    #expect(variants.map(\.started).reduce(0, +) == reply.total.started)
    let (short, long) = (tally["short"]!, tally["long"]!)
    let test = try #require(
      Proportions.twoProportionTest(
        successes: short.converted, of: short.converted + short.cancelled, against: long.converted,
        of: long.converted + long.cancelled))
    let comparison = try #require(reply.comparison)
    #expect(comparison.first == "short" && comparison.second == "long")
    #expect(comparison.z == test.z && comparison.pValue == test.pValue)
    // Without it, the reply is as before.
    let plain = try client.call(
      Trials.getStats, GetStatsParameters(from: CalendarDay(ControlFixture.start), plan: "pro"))
    #expect(plain.variants == nil && plain.comparison == nil)
  }

  @Test func getStatsByVariant_WithoutPlanOrVariants_IsRefusedNamingIt() throws {
    let fixture = try ControlFixture()
    let engine = fixture.engine
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: Self.plans)) }
    let client = try fixture.client()
    _ = try client.startTrial(StartTrialParameters(subject: "s", plan: "basic"))
    for (parameters, name, words) in [
      (#"{"from":"2026-11-27","byVariant":true}"#, "byVariant", "needs plan"),
      (#"{"from":"2025-06-01","plan":"basic","byVariant":true}"#, "plan", "plan \"basic\" has no variants"),
      (#"{"from":"2025-06-01","plan":"gone","byVariant":true}"#, "plan", "plan \"gone\" has no variants"),
    ] {
      let error = remoteError { _ = try client.call("io.trialwatch.Trials.GetStats", parameters) }
      #expect(error?.name == "org.varlink.service.InvalidParameter", "\(parameters)")
      #expect(error?.parameters.parameter == name, "\(parameters)")
      #expect(error?.parameters.problem?.contains(words) == true, "\(String(describing: error?.parameters))")
    }
    // A plan with variants but no trials yet: each with zeros, no comparison.
    let reply = try client.call(
      Trials.getStats,
      GetStatsParameters(from: CalendarDay(ControlFixture.start), plan: "pro", byVariant: true))
    #expect(reply.variants?.map(\.started) == [0, 0] && reply.variants?.first?.conversionLow == nil)
    #expect(reply.comparison == nil)
  }
}
