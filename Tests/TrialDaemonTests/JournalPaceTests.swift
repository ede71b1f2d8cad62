import Foundation
import TestSupport
import Testing
import TrialCore

@testable import TrialDaemon

/// The most entries any closed window of `interval` seconds holds, as journald would count
/// them: a window begins at an entry and takes every entry up to `interval` later.
func busiestWindow(_ times: [TimeInterval], interval: TimeInterval) -> Int {
  var busiest = 0
  var first = 0
  for last in times.indices {
    while times[last] - times[first] > interval + 1e-9 { first += 1 }
    busiest = max(busiest, last - first + 1)
  }
  return busiest
}

@Suite struct JournalPaceTests {
  let limit = JournalPace.Limit(interval: .seconds(30), burst: 3)

  @Test func nextSlot_UnderTheBurst_IsNow() {
    var pace = JournalPace(limit)
    for time in [0.0, 1, 2] {
      #expect(pace.nextSlot(at: time) == nil)
      pace.record(at: time)
    }
    #expect(pace.count(at: 2) == 3)
  }

  @Test func nextSlot_AtTheBurst_OpensJustAfterTheWindowOfTheOldest() {
    var pace = JournalPace(limit)
    for time in [10.0, 11, 12] { pace.record(at: time) }
    #expect(pace.nextSlot(at: 12) == 40.000_001)
    #expect(
      pace.nextSlot(at: 40) == 40.000_001, "a window is closed: an entry 30 s after the oldest is in it")
    #expect(pace.nextSlot(at: 40.000_001) == nil)
    pace.record(at: 40.000_001)
    #expect(pace.nextSlot(at: 40.000_001) == 41.000_001, "then the second oldest decides")
  }

  @Test func pace_WithoutALimit_NeverDefers() {
    var pace = JournalPace(nil)
    for time in 0..<100_000 { pace.record(at: TimeInterval(time) / 1000) }
    #expect(pace.nextSlot(at: 100) == nil)
    #expect(pace.count(at: 100) == 0)
  }

  /// The property journald needs: whenever entries come and however they are sent, no window
  /// of the interval's length, wherever it begins, holds more than the burst.
  @Test func sentEntries_AtRandomTimes_NeverExceedTheBurstInAnyWindow() {
    var random = SeededGenerator(seed: 42)
    for _ in 0..<50 {
      let interval = TimeInterval(Int.random(in: 1...60, using: &random))
      let burst = Int.random(in: 1...40, using: &random)
      var pace = JournalPace(JournalPace.Limit(interval: .seconds(interval), burst: burst))
      var now: TimeInterval = 0
      var sent: [TimeInterval] = []
      for _ in 0..<2_000 {
        // Arrivals in bursts and lulls; a deferred sender comes back exactly when told.
        now += Bool.random(using: &random) ? 0 : Double.random(in: 0...(interval / 4), using: &random)
        if let next = pace.nextSlot(at: now) {
          #expect(next > now)
          if Bool.random(using: &random) { now = next } else { continue }
          #expect(pace.nextSlot(at: now) == nil)
        }
        pace.record(at: now)
        sent.append(now)
      }
      #expect(busiestWindow(sent, interval: interval) <= burst, "interval \(interval), burst \(burst)")
    }
  }

  @Test func reconfigure_ToALowerBurst_CountsTheMostRecent() {
    var pace = JournalPace(JournalPace.Limit(interval: .seconds(30), burst: 5))
    for time in [0.0, 1, 2, 3, 4] { pace.record(at: time) }
    pace.reconfigure(JournalPace.Limit(interval: .seconds(30), burst: 2))
    #expect(pace.nextSlot(at: 5) == 33.000_001)
  }

  @Test func reconfigure_ToAHigherBurst_TakesOlderEntriesAsSentWithTheOldestKept() {
    var pace = JournalPace(limit)
    for time in [0.0, 1, 2] { pace.record(at: time) }
    pace.reconfigure(JournalPace.Limit(interval: .seconds(30), burst: 5))
    #expect(pace.nextSlot(at: 3) == 30.000_001, "entries before the three kept may have been sent at 0")
    var fresh = JournalPace(limit)
    fresh.record(at: 0)
    fresh.reconfigure(JournalPace.Limit(interval: .seconds(30), burst: 5))
    #expect(fresh.nextSlot(at: 1) == nil, "all it sent is known: room for four more")
  }

  @Test func reconfigure_ToALongerInterval_KeepsWhatWasSent() {
    var pace = JournalPace(limit)
    for time in [0.0, 1, 2] { pace.record(at: time) }
    pace.reconfigure(JournalPace.Limit(interval: .seconds(60), burst: 3))
    #expect(pace.nextSlot(at: 31) == 60.000_001)
    pace.reconfigure(nil)
    #expect(pace.nextSlot(at: 31) == nil)
  }

  @Test func limit_Description_NamesBurstAndInterval() {
    #expect("\(JournalPace.Limit(interval: .seconds(30), burst: 9000))" == "9000 entries per 30s")
  }
}
