import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon
@testable import TrialEngine

/// GetStats through a real socket, on every store: 1,000 trials over ten weeks in virtual time,
/// started, converted, cancelled, paused, resumed and expired at random, and figures that equal
/// those the test computes from what it did.
@Suite struct StatsMethodTests {
  static let hour: TimeInterval = 3_600
  static let utc: Calendar = {
    var calendar = Calendar(identifier: .iso8601)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar
  }()

  /// What the test knows of one trial, from what it did to it.
  struct Model {
    var plan: String?
    var start: Date
    var end: Date
    var state: TrialState = .active
    var pausedAt: Date?
    var convertedAt: Date?
  }

  /// The figures of `models` started in `interval`, as the test computes them.
  static func expected(_ models: [Model], in interval: DateInterval) -> (
    counts: [TrialState: Int64], rate: Double?, medianHours: Int64?
  ) {
    let cohort = models.filter { $0.start >= interval.start && $0.start < interval.end }
    var counts: [TrialState: Int64] = [:]
    for model in cohort { counts[model.state, default: 0] += 1 }
    let ended = (counts[.converted] ?? 0) + (counts[.cancelled] ?? 0) + (counts[.expired] ?? 0)
    let rate = ended == 0 ? nil : (Double(counts[.converted] ?? 0) / Double(ended) * 1e6).rounded() / 1e6
    let hours = cohort.compactMap { model in
      model.convertedAt.map { Int64(($0.timeIntervalSince(model.start) / hour).rounded(.down)) }
    }.sorted()
    return (counts, rate, hours.isEmpty ? nil : hours[(hours.count + 1) / 2 - 1])
  }

  @Test(arguments: StoreKind.allCases)
  func getStats_OfTenWeeksOfTrials_EqualsWhatTheTestComputed(store: StoreKind) throws {
    let fixture = try ControlFixture(store: store)
    let engine = fixture.engine
    let plans = [
      "pro": TrialPlan(name: "pro", length: .days(14), reminders: .none),
      "basic": TrialPlan(name: "basic", length: .days(7), reminders: .none),
    ]
    engine.queue.sync { engine.engine.reload(EngineSettings(plans: plans)) }
    let client = try fixture.client()
    var random = SeededGenerator(seed: 0x5747_5354)
    var models: [TrialID: Model] = [:]
    var next = 0
    let steps = 10 * 7 * 12
    for step in 0..<steps {
      let now = fixture.now
      // A trial whose end has come expired in the advance before.
      for (id, model) in models where model.state == .active && model.end <= now {
        models[id]?.state = .expired
      }
      for id in models.keys.sorted() {
        guard let model = models[id] else { continue }
        let roll = Double.random(in: 0..<1, using: &random)
        switch model.state {
        case .active where roll < 0.004:
          _ = try client.endTrial(EndTrialParameters(id: id, outcome: .converted))
          models[id]?.state = .converted
          models[id]?.convertedAt = now
        case .active where roll < 0.006, .paused where roll < 0.002:
          _ = try client.endTrial(EndTrialParameters(id: id, outcome: .cancelled))
          models[id]?.state = .cancelled
        case .active where roll < 0.008:
          _ = try client.call(Trials.pauseTrial, TrialTargetParameters(.id(id)))
          models[id]?.state = .paused
          models[id]?.pausedAt = now
        case .paused where roll < 0.05:
          _ = try client.call(Trials.resumeTrial, TrialTargetParameters(.id(id)))
          models[id]?.end = now + model.end.timeIntervalSince(model.pausedAt!)
          models[id]?.state = .active
        default:
          break
        }
      }
      // About 1,000 starts, spread over the ten weeks.
      while next < 1_000 && Double(next) < Double(step + 1) * 1_000 / Double(steps) {
        let plan = ["pro", "basic", nil][next % 3]
        let trial = try client.startTrial(StartTrialParameters(subject: "s-\(next)", plan: plan))
        models[trial.id] = Model(plan: plan, start: now, end: trial.endsAt)
        next += 1
      }
      fixture.advance(by: 2 * Self.hour)
    }
    for (id, model) in models where model.state == .active && model.end <= fixture.now {
      models[id]?.state = .expired
    }
    // Its plans give no grace (GraceContractTests counts trials in grace): every other state.
    #expect(
      Set(models.values.map(\.state)) == Set(TrialState.allCases).subtracting([.grace]),
      "the scenario reached every state")

    let all = Array(models.values)
    for plan in [nil, "pro"] as [String?] {
      let reply = try client.call(
        Trials.getStats,
        GetStatsParameters(
          from: CalendarDay(ControlFixture.start), to: CalendarDay(fixture.now), by: .week, plan: plan))
      let mine = all.filter { plan == nil || $0.plan == plan }
      #expect(reply.periods.count == 11 && reply.total.started == Int64(mine.count))
      for period in reply.periods {
        let first = Date(timeIntervalSince1970: Double(period.start.day) * 86_400)
        let week = try #require(Self.utc.dateInterval(of: .weekOfYear, for: first))
        #expect(week.start == first, "periods start on Mondays")
        let expected = Self.expected(mine, in: week)
        let found: [TrialState: Int64] = [
          .active: period.active, .paused: period.paused, .converted: period.converted,
          .cancelled: period.cancelled, .expired: period.expired,
        ]
        #expect(found.filter { $0.value != 0 } == expected.counts, "\(period.start), plan \(plan ?? "all")")
        #expect(period.started == expected.counts.values.reduce(0, +))
        #expect(period.conversionRate == expected.rate, "\(period.start)")
        #expect(
          period.medianTimeToConversion?.duration == expected.medianHours.map { .seconds($0 * 3_600) },
          "\(period.start)")
      }
    }
  }

  @Test func getStats_WithBadParameters_IsRefusedNamingThem() throws {
    let fixture = try ControlFixture()
    let client = try fixture.client()
    for (parameters, name) in [
      (#"{}"#, "from"), (#"{"from":"2026-13-01"}"#, "from"),
      (#"{"from":"2026-11-27","to":"2026-11-01"}"#, "to"),
      (#"{"from":"2026-11-27","by":"year"}"#, "by"), (#"{"from":"2026-11-27","plan":"Pro"}"#, "plan"),
      (#"{"from":"1900-01-01","to":"2026-01-01","by":"day"}"#, "from"),
    ] {
      let error = remoteError { _ = try client.call("io.trialwatch.Trials.GetStats", parameters) }
      #expect(error?.name == "org.varlink.service.InvalidParameter", "\(parameters)")
      #expect(error?.parameters.parameter == name, "\(parameters)")
    }
  }
}
