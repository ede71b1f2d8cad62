import Foundation
import Testing
import TrialTesting

@testable import TrialCore

/// A trial's lifecycle (extensions, cancel at the end, grace, follow-ups, milestones) kept out
/// of line: a plain trial carries none, and each property reads and writes as if stored.
struct TrialLifecycleTests {
  static let followUps = try! FollowUpSchedule([.days(3)])
  static let milestones = try! MilestoneSchedule([.days(1)])

  @Test func plainTrial_HasNoLifecycle() {
    let trial = makeTrial(1, start: .day(0), days: 10)
    #expect(trial.lifecycle == nil)
    #expect(trial.extensions == 0 && trial.cancelMark == nil && trial.grace == .zero)
    #expect(trial.followUps.isEmpty && trial.milestones.isEmpty)
    #expect(!trial.entersGrace && trial.eventCount == ReminderSchedule.default.offsets.count + 1)
  }

  @Test(arguments: 0..<5)
  func eachProperty_ReadsBackWhatWasSet(_ which: Int) {
    var trial = makeTrial(1, start: .day(0), days: 10)
    let mark = TrialCancelMark(askedAt: .day(2), remindAfterCancel: true)
    switch which {
    case 0: trial.extensions = 2
    case 1: trial.cancelMark = mark
    case 2: trial.grace = .days(3)
    case 3: trial.followUps = Self.followUps
    default: trial.milestones = Self.milestones
    }
    #expect(trial.lifecycle != nil)
    #expect(trial.extensions == (which == 0 ? 2 : 0))
    #expect(trial.cancelMark == (which == 1 ? mark : nil))
    #expect(trial.grace == (which == 2 ? .days(3) : .zero))
    #expect(trial.followUps == (which == 3 ? Self.followUps : .none))
    #expect(trial.milestones == (which == 4 ? Self.milestones : .none))
    #expect(trial.entersGrace == (which == 2))
  }

  @Test func settingBackToNone_MakesTheTrialPlainAgain_EqualAndHashedAsOne() {
    let plain = makeTrial(1, start: .day(0), days: 10)
    var trial = plain
    trial.grace = .days(3)
    trial.followUps = Self.followUps
    #expect(trial != plain)
    trial.grace = .zero
    #expect(trial.lifecycle?.followUps == Self.followUps)
    trial.followUps = .none
    #expect(trial.lifecycle == nil)
    #expect(trial == plain && trial.hashValue == plain.hashValue)
  }

  @Test func copies_ShareNothingMutable() {
    var first = makeTrial(1, start: .day(0), days: 10)
    first.extensions = 1
    var second = first
    second.extensions = 2
    second.cancelMark = TrialCancelMark(askedAt: .day(1))
    #expect(first.extensions == 1 && first.cancelMark == nil)
    #expect(second.extensions == 2 && second.cancelMark != nil)
  }

  @Test func equalLifecyclesInDifferentBoxes_AreEqual_AndHashAlike() {
    var first = makeTrial(1, start: .day(0), days: 10)
    var second = first
    first.milestones = Self.milestones
    second.milestones = try! MilestoneSchedule([.days(1)])
    #expect(first == second && first.hashValue == second.hashValue)
    second.milestones = try! MilestoneSchedule([.days(2)])
    #expect(first != second)
  }

  @Test func cancelMark_TakesTheGraceAway() {
    var trial = makeTrial(1, start: .day(0), days: 10)
    trial.grace = .days(3)
    #expect(trial.entersGrace && trial.expiresAt == .day(13))
    trial.cancelMark = TrialCancelMark(askedAt: .day(2))
    #expect(!trial.entersGrace && trial.expiresAt == .day(10))
  }

  /// The planner answers a schedule like the last one interned without looking it up, and a
  /// different one after it still gets its own number.
  @Test func planner_InternsEachScheduleOnce_AcrossAlternation() {
    var planner = Planner()
    for raw in 1...6 {
      var trial = makeTrial(UInt64(raw), start: .day(0), days: 10)
      if raw % 2 == 0 { trial.followUps = Self.followUps }
      planner.add(trial, now: .day(0))
    }
    #expect(planner.schedules.count == 2)
    let withFollowUps = makeTrial(8, start: .day(0), days: 10)
    var other = withFollowUps
    other.grace = .days(1)
    planner.add(other, now: .day(0))
    #expect(planner.schedules.count == 3)
    planner.add(makeTrial(9, start: .day(0), days: 10), now: .day(0))
    #expect(planner.schedules.count == 3)
  }
}
