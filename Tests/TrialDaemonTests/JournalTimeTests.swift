import Foundation
import Testing

@testable import TrialDaemon

@Suite struct JournalTimeTests {
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
    #expect(JournalTime.seconds(.days(3)) == "259200")
    #expect(JournalTime.seconds(.milliseconds(1_500)) == "1.5")
    #expect(JournalTime.seconds(.milliseconds(1)) == "0.001")
    #expect(JournalTime.seconds(.milliseconds(-250)) == "-0.25")
    #expect(JournalTime.microseconds(.nanoseconds(1_000_000_400)) == 1_000_000)
    #expect(JournalTime.microseconds(.seconds(-3)) == 0)
    #expect(JournalTime.realtimeMicroseconds(Date(timeIntervalSince1970: -1.5)) == -1_500_000)
  }
}
