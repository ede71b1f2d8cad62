import Foundation
import Testing

@testable import TrialDaemon

@Suite struct JournalTimeTests {
  @Test func journalTime_InSecondsAndMicroseconds_IsWrittenExactly() {
    #expect(JournalTime.seconds(.days(3)) == "259200")
    #expect(JournalTime.seconds(.milliseconds(1_500)) == "1.5")
    #expect(JournalTime.seconds(.milliseconds(1)) == "0.001")
    #expect(JournalTime.seconds(.milliseconds(-250)) == "-0.25")
    #expect(JournalTime.microseconds(.nanoseconds(1_000_000_400)) == 1_000_000)
    #expect(JournalTime.microseconds(.seconds(-3)) == 0)
    #expect(JournalTime.realtimeMicroseconds(Date(timeIntervalSince1970: -1.5)) == -1_500_000)
  }
}
