import Testing

@testable import TrialManual

@Suite struct RoffTests {
  @Test func escape_OfBackslashesAndOtherScripts_IsRoff() {
    #expect(Roff.escape("a\\b") == "a\\eb")
    #expect(Roff.escape("5d \u{2014} or more") == "5d \\[u2014] or more")
    #expect(Roff.escape("--json", code: true) == "\\-\\-json")
    #expect(Roff.escape("comma-separated") == "comma-separated")
  }

  @Test func words_OfProse_MarkOptionsCodeAndPages() {
    #expect(Roff.words("use --socket, else") == ["use", "\\fB\\-\\-socket\\fR,", "else"])
    #expect(Roff.words("`none` for none.") == ["\\fBnone\\fR", "for", "none."])
    #expect(
      Roff.words("an empty one (`Key=`) restores") == ["an", "empty", "one", "(\\fBKey=\\fR)", "restores"])
    #expect(Roff.words("see trialwatch.conf(5).") == ["see", "\\fBtrialwatch.conf\\fR(5)."])
    #expect(Roff.words("under LateReminders=skip.", keys: true) == ["under", "\\fBLateReminders=\\fRskip."])
    #expect(Roff.words("under LateReminders=skip.") == ["under", "LateReminders=skip."])
    #expect(Roff.words("in /run/trialwatch") == ["in", "\\%/run/trialwatch"])
  }

  @Test func fill_OfManyWords_KeepsEveryLineWithin80Bytes() {
    let words = Array(repeating: "trialwatch", count: 40) + [".starts", "'quoted"]
    let lines = Roff.fill(words)
    #expect(lines.count > 4)
    #expect(lines.allSatisfy { $0.utf8.count <= 80 })
    #expect(
      lines.joined(separator: " ").replacingOccurrences(of: "\\&", with: "") == words.joined(separator: " "))
    #expect(lines.allSatisfy { !$0.hasPrefix(".") && !$0.hasPrefix("'") })
  }

  @Test func discussion_WithAnExitStatusBlock_GivesThatSectionAsAList() {
    let discussion = Discussion(
      """
      Talks to the daemon. Example: trialwatchctl status acme-42

      EXIT STATUS
        0  success
        5  daemon unreachable (check: systemctl status trialwatch)
      """)
    #expect(
      discussion.description == [.text("Talks to the daemon."), .example("trialwatchctl status acme-42")])
    #expect(
      discussion.sections["EXIT STATUS"] == [
        .list([
          .init(tag: "0", text: "success"),
          .init(tag: "5", text: "daemon unreachable (check: systemctl status trialwatch)"),
        ])
      ])
  }

  @Test func discussion_WithAnExitStatusSentence_GivesThatSectionAsAList() {
    let discussion = Discussion(
      "Runs.\n\nExit status: 0 on a clean stop, 1 on a failure to start or an invalid\nconfiguration, 64 on a usage error."
    )
    #expect(discussion.description == [.text("Runs.")])
    #expect(
      discussion.sections["EXIT STATUS"] == [
        .list([
          .init(tag: "0", text: "On a clean stop."),
          .init(tag: "1", text: "On a failure to start or an invalid configuration."),
          .init(tag: "64", text: "On a usage error."),
        ])
      ])
    #expect(
      Discussion("Exit status: as the command says.").sections["EXIT STATUS"] == [
        .text("as the command says.")
      ])
  }

  @Test func summary_OfAnAbstract_IsLowerCaseWithoutAPeriod() {
    #expect(CommandPage.summary("Keeps trial periods.") == "keeps trial periods")
    #expect(CommandPage.summary("RFC 3339 times.") == "RFC 3339 times")
  }
}
