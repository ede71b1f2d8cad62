import Foundation
import Testing
import TrialCore
import TrialTesting

struct TrialIDTests {
  @Test func description_IsSixteenLowerCaseHexDigits() {
    #expect(TrialID(0xAB).description == "00000000000000ab")
    #expect(TrialID(.max).description == "ffffffffffffffff")
    #expect(TrialID(0x0123_4567_89AB_CDEF).description == "0123456789abcdef")
  }

  @Test(arguments: [UInt64(1), 0xAB, 0x8000_0000_0000_0000, .max, 0x0123_4567_89AB_CDEF])
  func text_RoundTrips(raw: UInt64) throws {
    let id = TrialID(raw)
    #expect(TrialID(id.description) == id)
  }

  @Test func parse_ShortAndUpperCaseForms_AreAccepted() {
    #expect(TrialID("7") == TrialID(7))
    #expect(TrialID("ABCdef") == TrialID(0xABCDEF))
  }

  @Test(arguments: ["", "g", "12345678901234567", "-1", "+1", "0x12", " 12", "12 ", "１２"])
  func parse_BadText_IsRejected(text: String) {
    #expect(TrialID(text) == nil)
  }

  @Test func randomGenerator_NeverHandsOutZero_AndVaries() {
    let generator = RandomTrialIDGenerator()
    let ids = (0..<64).map { _ in generator.nextID() }
    #expect(!ids.contains(TrialID(0)))
    #expect(Set(ids).count > 60)
  }

  @Test func randomGenerator_OneInstant_HandsOutAscendingIDs() {
    let generator = RandomTrialIDGenerator(clock: StaticWallClock(Date(timeIntervalSince1970: 1_767_571_200)))
    let ids = (0..<1_000).map { _ in generator.nextID() }
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
    #expect(ids[0].rawValue >> 22 == 1_767_571_200_000)
    #expect(Set(ids.map { $0.rawValue & 0xFFFFF }).count > 900)
  }

  @Test func randomGenerator_LaterInstant_StartsFromTheTime() {
    let start = Date(timeIntervalSince1970: 1_767_571_200)
    let clock = ManualWallClock(start)
    let generator = RandomTrialIDGenerator(clock: clock)
    let first = generator.nextID()
    clock.set(start.addingTimeInterval(60))
    let second = generator.nextID()
    #expect(first < second)
    #expect(second.rawValue >> 22 == 1_767_571_260_000)
    clock.set(start.addingTimeInterval(-60))
    #expect(generator.nextID() > second)
  }
}

struct EventIDTests {
  let trial = TrialID(0x2A)

  @Test func description_NamesTrialRevisionAndKind() {
    #expect(EventID(trialID: trial, revision: 3, kind: .expiry).description == "000000000000002a-r3-expiry")
    let reminder = EventID(trialID: trial, revision: 1, kind: .reminder(before: .days(1)))
    #expect(reminder.description == "000000000000002a-r1-reminder-86400000ms")
  }

  @Test func text_RoundTripsForEveryEventOfATrial() throws {
    let schedule = try ReminderSchedule([.days(7), .days(1), .seconds(90), .seconds(0.001)])
    let period = TrialPeriod(
      startDate: Date(timeIntervalSinceReferenceDate: 0), endDate: Date(timeIntervalSinceReferenceDate: 1e6))
    let trial = Trial(
      id: TrialID(.max), subject: "acme-42", period: period, reminders: schedule, revision: .max)
    #expect(trial.events.count == 5)
    for event in trial.events {
      #expect(EventID(event.id.description) == event.id)
    }
  }

  @Test(arguments: [
    "",
    "000000000000002a",
    "000000000000002a-r1",
    "zz-r1-expiry",
    "000000000000002a-1-expiry",
    "000000000000002a-rx-expiry",
    "000000000000002a-r-1-expiry",
    "000000000000002a-r4294967296-expiry",
    "000000000000002a-r1-expiry-1ms",
    "000000000000002a-r1-expired",
    "000000000000002a-r1-reminder",
    "000000000000002a-r1-reminder-5",
    "000000000000002a-r1-reminder-0ms",
    "000000000000002a-r1-reminder--5ms",
    "000000000000002a-r1-reminder-5s",
  ])
  func parse_BadText_IsRejected(text: String) {
    #expect(EventID(text) == nil)
  }

  @Test func idsOfOneRevision_SortInDueOrder() throws {
    let schedule = try ReminderSchedule([.days(1), .days(3), .days(2)])
    let period = TrialPeriod(
      startDate: Date(timeIntervalSinceReferenceDate: 0), endDate: Date(timeIntervalSinceReferenceDate: 1e6))
    let trial = Trial(id: trial, subject: "s", period: period, reminders: schedule)
    let ids = trial.events.map(\.id)
    #expect(ids.shuffled().sorted() == ids)
    #expect(ids.last?.kind == .expiry)
  }

  @Test func olderRevision_SortsFirst_AndIsADifferentID() {
    let old = EventID(trialID: trial, revision: 1, kind: .expiry)
    let new = EventID(trialID: trial, revision: 2, kind: .reminder(before: .days(3)))
    #expect(old < new)
    #expect(old != EventID(trialID: trial, revision: 2, kind: .expiry))
  }
}
