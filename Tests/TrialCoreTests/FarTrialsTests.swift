import Foundation
import PropertyBased
import Testing

@testable import TrialCore

/// The far trials' table (`FarTrials`) against a dictionary: random insertions and removals,
/// one by one and by due time, with ids chosen to collide.
struct FarTrialsTests {
  enum Operation: Sendable, CustomStringConvertible {
    case insert(trial: UInt64, due: Int, events: Int)
    case remove(trial: UInt64)
    case removeThrough(due: Int)

    var description: String {
      switch self {
      case .insert(let trial, let due, let events): "insert(\(trial), due \(due), \(events) events)"
      case .remove(let trial): "remove(\(trial))"
      case .removeThrough(let due): "removeThrough(\(due))"
      }
    }
  }

  /// Ids from a small range, so that removals find what was inserted and probing runs collide;
  /// due times from a smaller one, so that ties are common.
  static let operations = zip(
    Gen.int(in: 0...9), Gen.int(in: 0...400), Gen.int(in: 0...60), Gen.int(in: 1...33)
  )
  .map { kind, trial, due, events -> Operation in
    switch kind {
    case 0...5: .insert(trial: UInt64(trial) &* 0x9E37_79B9_7F4A_7C15, due: due, events: events)
    case 6...8: .remove(trial: UInt64(trial) &* 0x9E37_79B9_7F4A_7C15)
    default: .removeThrough(due: due / 4)
    }
  }.array(of: 1...600)

  /// Due times in quarters of a second: the table holds the whole second at or before each.
  @Test func randomOperations_MatchADictionary() async {
    await propertyCheck(count: 300, input: Self.operations) { operations in
      var table = FarTrials()
      var model: [UInt64: (due: Double, events: Int)] = [:]
      for operation in operations {
        switch operation {
        case .insert(let trial, let due, let events):
          guard model[trial] == nil else { continue }
          table.insert(trial, due: Double(due) / 4, events: events)
          model[trial] = ((Double(due) / 4).rounded(.down), events)
        case .remove(let trial):
          #expect(table.remove(trial) == (model[trial]?.events ?? 0), "\(operation)")
          model[trial] = nil
        case .removeThrough(let due):
          let expected = model.filter { $0.value.due <= Double(due) }
            .sorted { ($0.value.due, $0.key) < ($1.value.due, $1.key) }.map(\.key)
          #expect(table.due(through: Double(due)) == expected, "\(operation)")
          table.remove(table.due(through: Double(due)))
          for trial in expected { model[trial] = nil }
        }
        #expect(table.count == model.count, "count after \(operation)")
        #expect(table.events == model.values.reduce(0) { $0 + $1.events }, "events after \(operation)")
        let earliest = model.min { ($0.value.due, $0.key) < ($1.value.due, $1.key) }
        #expect(table.earliest?.trial == earliest?.key, "earliest after \(operation)")
        #expect(table.earliest?.due == earliest?.value.due, "earliest due after \(operation)")
      }
      #expect(Set(table.ids) == Set(model.keys))
      for (trial, value) in model {
        #expect(table.contains(trial))
        #expect(table.due(of: trial)?.second == value.due)
        #expect(table.due(of: trial)?.events == value.events)
      }
    }
  }

  @Test func dueTimes_HeldToTheWholeSecondBefore_FromTheReferenceDateTo2137() {
    var table = FarTrials()
    table.insert(1, due: 99.75, events: 2)
    table.insert(2, due: -5, events: 1)
    table.insert(3, due: 1e12, events: 1)
    #expect(table.due(of: 1)?.second == 99)
    #expect(table.due(of: 2)?.second == 0)
    #expect(table.due(of: 3)?.second == Double(UInt32.max))
    #expect(table.due(through: 98.9) == [2])
    #expect(table.due(through: 99) == [2, 1])
    #expect(table.earliest?.trial == 2)
  }

  @Test func manyTrials_TheTableStaysAtMostNineTenthsFull_AndShrinksWhenEmptied() {
    var table = FarTrials()
    for trial in 1...100_000 as ClosedRange<UInt64> {
      table.insert(trial, due: Double(trial % 977), events: 1)
    }
    #expect(table.count == 100_000)
    #expect(table.buckets * 9 >= table.count * 10)
    // About 16 bytes a trial: 13 a bucket, three quarters to nine tenths full.
    #expect(table.buckets * 13 <= 100_000 * 18)
    table.remove(table.due(through: 975))
    #expect(table.count == 102)
    #expect(table.buckets < 1_000)
    #expect(table.earliest?.due == 976)
    #expect(table.events == 102)
  }

  /// A lookahead under a second, and due times within a second: the far trial is held to the
  /// second before its due time, so it comes near before it falls due, and fires on time.
  @Test func subSecondLookahead_FarTrialDueWithinASecond_FiresOnTime() {
    let start = Date.day(0)
    let driver = PlannerDriver(now: start, far: .milliseconds(300))
    let trial = makeTrial(
      7, start: start.addingTimeInterval(-1), days: (10.95 + 1) / 86_400, reminders: .none)
    driver.start(trial)
    #expect(driver.planner.farTrialCount == 1)
    #expect(driver.planner.nextEvent == nil)
    #expect(driver.planner.nextHeldEvent == nil)
    #expect(driver.planner.nextEventDue == start.addingTimeInterval(10))
    driver.scheduler.advance(to: start.addingTimeInterval(12))
    #expect(driver.fired.map(\.event.due) == [trial.period.endDate])
    #expect(driver.fired.map(\.takenAt) == [trial.period.endDate])
    #expect(driver.planner.farTrialCount == 0)
  }

  /// The earliest trial's stamp moves with every change of it, a trial planned again in the
  /// same second included, and not with changes behind it.
  @Test func earliestChanges_MoveWithTheEarliestOnly() {
    var table = FarTrials()
    table.insert(1, due: 10.5, events: 1)
    let first = table.earliestChanges
    table.insert(2, due: 20, events: 1)
    table.remove(2)
    #expect(table.earliestChanges == first)
    table.remove(1)
    table.insert(1, due: 10.25, events: 1)
    #expect(table.earliestChanges != first)
  }
}
