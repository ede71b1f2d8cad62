import Foundation
import Testing

@testable import TrialCore

/// The assignment of a plan's variants to subjects: stable, in proportion to the weights, and
/// the function docs/lifecycle.md gives (pinned values).
@Suite struct TrialVariantTests {
  static func plan(_ weights: [Int]) -> TrialPlan {
    TrialPlan(
      name: "pro", length: .days(14), reminders: .none,
      variants: weights.enumerated().map { TrialVariant(name: "v\($0.offset)", weight: $0.element) })
  }

  @Test(arguments: [[1, 1], [1, 3], [2, 3, 5], [1, 1, 1, 1]])
  func shares_OfAHundredThousandSubjects_FollowTheWeights(weights: [Int]) {
    let plan = Self.plan(weights)
    var counts: [String: Int] = [:]
    let subjects = 100_000
    // Keys alike but for their last characters too (sequential ids).
    for index in 0..<subjects {
      let key = index.isMultiple(of: 2) ? "user-\(index)@example.com" : "\(index)"
      counts[plan.variant(forKey: key)!.name, default: 0] += 1
    }
    let total = Double(weights.reduce(0, +))
    for (index, weight) in weights.enumerated() {
      let share = Double(counts["v\(index)", default: 0]) / Double(subjects)
      #expect(abs(share - Double(weight) / total) < 0.01, "v\(index): \(share)")
    }
  }

  @Test func assignment_IsPinned() {
    // fmix64 of FNV-1a 64 of "PLAN\0KEY", times the total weight, the high 64 bits (values
    // computed apart from this code, by the function as docs/lifecycle.md gives it).
    #expect(TrialPlan.variantPoint(plan: "", key: "", total: 1 << 32) == 3_104_000_723)
    let plan = Self.plan([1, 3])
    let keys = ["acme-42", "alice@example.com", "bob", "c-991", "user-1", "user-2", "user-3", "ümlaut"]
    #expect(
      keys.map { TrialPlan.variantPoint(plan: "pro", key: $0, total: 1_000_000) } == [
        650_228, 958_264, 603_014, 406_399, 632_394, 391_770, 7_687, 583_922,
      ])
    #expect(keys.map { plan.variant(forKey: $0)!.name } == ["v1", "v1", "v1", "v1", "v1", "v1", "v0", "v1"])
  }

  @Test func startNamingAVariant_ThePlanLacks_IsRefused() throws {
    let defaults = TrialDefaults(
      length: .days(5), reminders: .none,
      plans: [
        "pro": Self.plan([1, 1]), "basic": TrialPlan(name: "basic", length: .days(7), reminders: .none),
      ])
    let now = Date(timeIntervalSinceReferenceDate: 0)
    let none = #expect(throws: TrialError.self) {
      try defaults.resolve(
        try TrialCommand.start(subject: "a", plan: "basic", variant: "v0").startValue, now: now)
    }
    #expect(none?.description.contains("is no variant of plan \"basic\", which has none") == true)
    let noPlan = #expect(throws: TrialError.self) {
      try defaults.resolve(try TrialCommand.start(subject: "a", variant: "v0").startValue, now: now)
    }
    #expect(noPlan?.description.contains("the start names no plan") == true)
    let named = try defaults.resolve(
      try TrialCommand.start(subject: "a", plan: "pro", variant: "v1").startValue, now: now)
    #expect(named.attributes.variant == "v1")
    #expect(throws: TrialError.self) { try TrialCommand.start(subject: "a", plan: "pro", variant: "V 1") }
  }
}

extension TrialCommand {
  fileprivate var startValue: TrialStart {
    guard case .start(let start) = kind else { preconditionFailure("not a start") }
    return start
  }
}
