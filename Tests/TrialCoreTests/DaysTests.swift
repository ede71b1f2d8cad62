import Foundation
import Testing
import TrialCore

struct DaysTests {
  @Test func testTimeInterval_OneDay_Is86400Seconds() {
    #expect(Days(1).timeInterval == 86_400)
  }
}
