import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialTesting

@testable import TrialCtl

/// Calendar days and sizes against the Foundation code: "ends today" and "expired N days
/// ago" from the civil dates in the reader's zone, across DST changes; one decimal as
/// `String(format: "%.1f")` wrote it.
@Suite struct DaysAndSizesComparisonTests {
  /// Ends and ends ago around `now`: whole days, a day give or take an hour or a minute.
  static let deltas: [TimeInterval] =
    [
      -49, -30, -25, -24.02, -24, -23.98, -23, -13, -5, -1, -0.02, 0.02, 1, 5, 13, 23, 23.98, 24, 24.02, 25,
      30, 49,
      24 * 9 + 0.5,
    ].map { $0 * 3600 } + [-0.000_4, 0.000_4, -0.000_6, 0.000_6]

  @Test(arguments: ComparedZones.named)
  func daysLeftAndAgo_AcrossDSTChanges_MatchTheCalendarCode(zone name: String) throws {
    let zone = try #require(ReaderTimeZone(named: name))
    let old = FoundationDates(zone: TimeZone(identifier: name)!, locale: Locale(identifier: "en_US_POSIX"))
    var mismatches: [String] = []
    let nows = stride(
      from: ComparedZones.seconds(2025), to: ComparedZones.seconds(2028), by: 29 * 3600 + 7 * 60)
    // Beside midnight too: the instants just before and after each local midnight.
    let midnights = ComparedZones.grid.prefix(30_000).filter { (zone.localSeconds(at: $0) % 86_400) == 0 }
    for seconds in nows + midnights + [ComparedZones.seconds(2038, 1, 19), ComparedZones.seconds(1970, 1, 2)]
    {
      let now = Date(timeIntervalSince1970: TimeInterval(seconds))
      let presenter = TrialPresenter(
        output: SpyOutput(), clock: StaticWallClock(now), timeZone: zone, locale: .posix)
      for delta in Self.deltas {
        let end = now.addingTimeInterval(delta)
        for state in [TrialState.active, .expired] {
          let trial = PresenterTests.trial(ends: end, state: state)
          let expected = old.timeLeft(trial, now: now)
          let actual = presenter.timeLeft(trial)
          if expected != actual {
            mismatches.append("now \(seconds) end \(delta) \(state): \(expected), now \(actual)")
          }
        }
      }
    }
    #expect(mismatches.isEmpty, "\(name): \(mismatches.count), \(mismatches.prefix(10))")
  }

  @Test func byteCounts_MatchStringFormat() {
    let presenter = LocaleComparisonTests.presenter(.utc, .posix)
    var counts = Array(0..<3000) + Array(stride(from: 3000, to: 5_000_000, by: 997))
    var generator = SeededGenerator(seed: 42)
    for scale in 10..<63 {
      for _ in 0..<400 { counts.append(Int(generator.next() >> UInt64(64 - scale))) }
    }
    counts += [Int.max, Int.max - 1, 1 << 53, (1 << 53) + 1, 1_099_511_627_776 * 1023 + 1]
    for count in counts {
      let expected = FoundationDates.byteCount(count)
      let actual = presenter.byteCount(count)
      if expected != actual {
        Issue.record("\(count): \(expected), now \(actual)")
        return
      }
    }
  }

  /// Ties (an exact half tenth, to the even tenth), values just beside them, and values from
  /// tiny to 2⁵³.
  @Test func oneDecimal_MatchesPercentPointOneF() {
    var values: [Double] = [
      0, 0.04, 0.05, 0.06, 0.15, 0.25, 0.35, 0.45, 1, 1.05, 1.25, 1.35, 2.5, 1023.95, 1023.96,
    ]
    for denominator in [4.0, 8, 16, 32, 64, 1024] {
      for numerator in 0..<5000 { values.append(Double(numerator) / denominator) }
    }
    var generator = SeededGenerator(seed: 7)
    for _ in 0..<100_000 {
      let exponent = Double(Int(generator.next() % 70) - 20)
      let value = Double(generator.next() >> 11) / Double(1 << 53) * pow(2, exponent)
      values += [value, value.nextUp, value.nextDown]
    }
    values += [
      0x1p52, 0x1p52 + 1, 0x1p53, 0x1p53 - 1, Double(Int.max) / 1024 / 1024 / 1024 / 1024, 1e-300,
      .leastNonzeroMagnitude,
    ]
    for value in values where value >= 0 && value <= 0x1p53 {
      let expected = String(format: "%.1f", value)
      if decimal(value, digits: 1) != expected {
        Issue.record("\(value.debugDescription): \(expected), now \(decimal(value, digits: 1))")
        return
      }
    }
  }
}
