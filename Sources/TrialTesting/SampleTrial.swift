import Foundation
import TrialCore

extension Trial {
  /// A trial for tests: `acme-42` (id 0xABC), five days from `start`, with reminders 3 days and
  /// 90 seconds before its end.
  public static func sample(start: Date) throws -> Trial {
    Trial(
      id: TrialID(0xABC), subject: "acme-42",
      period: TrialPeriod(startDate: start, endDate: start.addingTimeInterval(5 * 86_400)),
      reminders: try ReminderSchedule([.days(3), .seconds(90)]))
  }
}
