import Foundation
import Testing
import TrialControl
import TrialCore

/// Extension limits on the wire: the count in `Trial` and `ExportTrial` (older replies and
/// files read with 0), the plan's limits in `Plan`, and `ExtensionRefused` with its numbers,
/// through a reply and back.
@Suite struct ExtensionWireTests {
  static let start = Date(timeIntervalSince1970: 1_750_000_000)

  static func trial(extensions: Int) -> Trial {
    Trial(
      id: TrialID(0xE1), subject: "acme-1",
      period: TrialPeriod(startDate: start, endDate: start + 30 * 86_400),
      reminders: .none, revision: 3, extensions: extensions)
  }

  /// 60 days, as systemd writes a span (a month is 30.44 days).
  static let sixtyDays = TimeSpan.format(.days(60))

  static let refusal = ExtensionRefusal(
    limit: .maxLength, trial: TrialID(0xE1), plan: "unraid", extensions: 1, maxExtensions: 2,
    maxLength: .days(60), latestEnd: start + 60 * 86_400, requestedEnd: start + 61 * 86_400)

  @Test func trialObject_CarriesTheCount_AndAnOlderReplyReadsWithNone() throws {
    let object = TrialObject(Self.trial(extensions: 2), now: Self.start)
    let text = WireCoding.text(object)
    #expect(text.contains(#""extensions":2"#))
    let decoded = try WireCoding.makeDecoder().decode(TrialObject.self, from: Data(text.utf8))
    #expect(decoded == object && decoded.extensions == 2)
    let older = text.replacingOccurrences(of: #""extensions":2,"#, with: "")
    #expect(!older.contains("extensions"))
    #expect(try WireCoding.makeDecoder().decode(TrialObject.self, from: Data(older.utf8)).extensions == 0)
  }

  @Test func exportTrialWithTheCount_ReadsBack_AndAFileFromBeforeImportsWithNone() throws {
    let extended = Self.trial(extensions: 3)
    let line = ExportRecord(extended).jsonLine
    #expect(line.contains(#""extensions":3"#))
    #expect(try ExportRecord.read(line: line.utf8) == .trial(extended))
    // None is written as absent, as a file from before the count has it.
    let none = ExportRecord(Self.trial(extensions: 0)).jsonLine
    #expect(!none.contains("extensions"))
    #expect(try ExportRecord.read(line: none.utf8) == .trial(Self.trial(extensions: 0)))
    let negative = line.replacingOccurrences(of: #""extensions":3"#, with: #""extensions":-1"#)
    let problem = #expect(throws: WireProblem.self) { try ExportRecord.read(line: negative.utf8) }
    #expect(problem?.path == ["trial", "extensions"])
  }

  @Test func planObject_CarriesItsLimits_OnlyWhereSet() {
    let limited = TrialPlan(
      name: "unraid", length: .days(15), reminders: .none, maxExtensions: 2, maxLength: .days(60))
    let text = WireCoding.text(PlanObject(limited, activeTrials: nil))
    #expect(text.contains(#""maxExtensions":2"#) && text.contains(#""maxLength":"\#(Self.sixtyDays)""#))
    let open = WireCoding.text(
      PlanObject(TrialPlan(name: "open", length: .days(15), reminders: .none), activeTrials: nil))
    #expect(!open.contains("maxExtensions") && !open.contains("maxLength"))
  }

  @Test func extensionRefused_ThroughAReply_KeepsItsNumbers() throws {
    let error = ControlError(TrialError(.extensionRefused(Self.refusal)))
    #expect(error.name == "io.trialwatch.ExtensionRefused")
    let text = WireCoding.text(error.parameters)
    #expect(
      text
        == #"{"endsAt":"2025-08-15T15:06:40Z","extensions":1,"id":"00000000000000e1","latestEndsAt":"#
        + #""2025-08-14T15:06:40Z","limit":"max-length","maxExtensions":2,"maxLength":"\#(Self.sixtyDays)","#
        + #""plan":"unraid"}"#)
    let reply = try VarlinkReply(
      Array(#"{"error":"io.trialwatch.ExtensionRefused","parameters":\#(text)}"#.utf8))
    #expect(reply.controlError == error)
    #expect(reply.controlError?.parameters.limitName == "max-length")
    #expect(reply.controlError?.parameters.limit == nil)
    #expect(
      error.description
        == "extension refused: the new end 2025-08-15T15:06:40Z of trial 00000000000000e1 lies beyond the latest "
        + "its plan \"unraid\" allows, 2025-08-14T15:06:40Z (MaxLength=\(Self.sixtyDays) from its start)")
    var count = Self.refusal
    count.limit = .maxExtensions
    count.extensions = 2
    #expect(
      ControlError(TrialError(.extensionRefused(count))).description
        == "extension refused: trial 00000000000000e1 had 2 extensions, as many as its plan \"unraid\" allows "
        + "(MaxExtensions=2)")
    // A number limit still reads as one.
    let large = try VarlinkReply(
      Array(#"{"error":"io.trialwatch.MessageTooLarge","parameters":{"limit":9}}"#.utf8))
    #expect(large.controlError == .messageTooLarge(limit: 9))
  }
}
