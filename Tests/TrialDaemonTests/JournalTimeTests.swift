import Foundation
import Testing

@testable import TrialDaemon

@Suite struct JournalTimeTests {
  @Test(arguments: [
    (0.0, "1970-01-01T00:00:00Z", "1970-01-01 00:00:00 UTC"),
    (-1.0, "1969-12-31T23:59:59Z", "1969-12-31 23:59:59 UTC"),
    (951_782_400.0, "2000-02-29T00:00:00Z", "2000-02-29 00:00:00 UTC"),
    (1_709_251_199.25, "2024-02-29T23:59:59.250Z", "2024-02-29 23:59:59 UTC"),
    (1_795_788_000.0, "2026-11-27T14:00:00Z", "2026-11-27 14:00:00 UTC"),
    (4_107_542_400.0, "2100-03-01T00:00:00Z", "2100-03-01 00:00:00 UTC"),
  ])
  func knownDates(seconds: Double, rfc3339: String, readable: String) {
    let date = Date(timeIntervalSince1970: seconds)
    #expect(JournalTime.rfc3339(date) == rfc3339)
    #expect(JournalTime.readable(date) == readable)
  }

  /// Checked against Foundation's own formatter over dates from 1900 to 2400.
  @Test func agreesWithFoundationOverManyDates() {
    let formatter = ISO8601DateFormatter()
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.formatOptions = [.withInternetDateTime]
    var generator = SplitMix64(seed: 0x7472_6961_6c77_6174)
    for _ in 0..<5_000 {
      let seconds = Double(Int64(bitPattern: generator.next() % 16_725_225_600) - 2_208_988_800)
      let date = Date(timeIntervalSince1970: seconds)
      #expect(JournalTime.rfc3339(date) == formatter.string(from: date), "\(seconds)")
    }
  }

  @Test(arguments: [
    (0.0, "0ms"), (0.25, "250ms"), (0.9996, "1s"), (1.0, "1s"), (59.9, "59s"), (60.0, "1min"),
    (90.0, "1min 30s"), (3600.0, "1h"), (3605.0, "1h"), (7985.0, "2h 13min"), (86_400.0, "1d"),
    (90_061.0, "1d 1h"), (-5.0, "0ms"),
  ])
  func approximateSpans(seconds: Double, text: String) {
    #expect(JournalTime.approximate(seconds) == text)
  }

  @Test(arguments: [
    (86_400.0, "1 day"), (86_401.0, "2 days"), (2.5 * 86_400, "3 days"), (43_200.0, "12h"),
    (86_399.0, "1 day"), (86_399.995, "1 day"), (84_600.0, "23h 30min"), (84_600.5, "23h 31min"),
    (29.997, "30s"), (1.5, "2s"), (0.25, "250ms"), (3_599.2, "1h"),
  ])
  func timeLeft(seconds: Double, text: String) {
    #expect(JournalTime.left(seconds) == text)
  }

  @Test func secondsAndMicroseconds() {
    #expect(JournalTime.seconds(259_200) == "259200")
    #expect(JournalTime.seconds(1.5) == "1.5")
    #expect(JournalTime.seconds(0.001) == "0.001")
    #expect(JournalTime.seconds(-0.25) == "-0.25")
    #expect(JournalTime.microseconds(1.000_000_4) == 1_000_000)
    #expect(JournalTime.microseconds(-3) == 0)
    #expect(JournalTime.realtimeMicroseconds(Date(timeIntervalSince1970: -1.5)) == -1_500_000)
  }
}

/// A small deterministic generator, so that the date sample is the same on every run.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64

  init(seed: UInt64) {
    state = seed
  }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
