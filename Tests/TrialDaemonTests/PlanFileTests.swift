import Foundation
import Testing
import TrialCore

@testable import TrialConfiguration

/// Plan files, read as the daemon reads them: `plans/NAME.conf` beside the main file.
@Suite struct PlanFileTests {
  @Test func planFile_WithEveryKey_IsThePlan() throws {
    // 9 days with the default reminders (3d, 1d) would miss the card networks' rule.
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=9d\nComplianceWarnings=no\n")
    fixture.write(
      "plans/pro.conf",
      """
      # The pro plan.
      [Plan]
      Description=Pro, two weeks
      Length=14d
      Reminders=7d, 1d
      Labels=tier=pro "team=growth team"
      Labels=region=eu
      MaxPause=30d
      """)
    fixture.write("plans/basic.conf", "[Plan]\n")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
    #expect(
      loaded.files.suffix(2) == [
        fixture.directory + "/plans/basic.conf", fixture.directory + "/plans/pro.conf",
      ])
    let pro = try #require(loaded.configuration.plans["pro"])
    #expect(pro.description == "Pro, two weeks")
    #expect(pro.length == .days(14))
    #expect(pro.reminders.offsets == [.days(7), .days(1)])
    #expect(pro.labels == (try TrialLabels(["tier": "pro", "team": "growth team", "region": "eu"])))
    #expect(pro.maxPause == .days(30))
    // What a plan leaves out is the main file's.
    let basic = try #require(loaded.configuration.plans["basic"])
    #expect(basic.length == .days(9))
    #expect(basic.reminders == ReminderSchedule.default)
    #expect(basic.labels == .none && basic.description == nil && basic.maxPause == nil)
  }

  @Test func planFile_WithProblems_IsLeftOutNamingFileAndLine() {
    let fixture = ConfigurationFixture()
    let bad = fixture.write(
      "plans/bad.conf",
      """
      [Plan]
      Length=forever
      Lenght=3d
      Labels=Tier=x
      [Other]
      """)
    let pause = fixture.write("plans/pause.conf", "[Plan]\nMaxPause=0\n")
    let unknown = fixture.write("plans/odd.conf", "[Plan]\nColour=blue\n[Extra]\nA=b\n")
    let misnamed = fixture.write("plans/Pro Plan.conf", "[Plan]\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description).sorted()
        == [
          "\(bad):2: error: invalid value \"forever\" for Length= in [Plan]: not a time span (like 5d, 36h, 90s "
            + "or 1d 12h): expected a number at \"forever\"",
          "\(bad):3: warning: unknown key \"Lenght\" in [Plan], ignored",
          "\(bad):4: error: invalid Labels= in [Plan]: label \"Tier\" must start with a lower-case letter a-z",
          "\(bad):5: warning: unknown section [Other] in a plan file, its assignments are ignored (a plan file "
            + "has [Plan])",
          "\(unknown):2: warning: unknown key \"Colour\" in [Plan], ignored",
          "\(unknown):3: warning: unknown section [Extra] in a plan file, its assignments are ignored (a plan "
            + "file has [Plan])",
          "\(misnamed): error: \"Pro Plan\" cannot name a plan: it must start with a lower-case letter or a digit",
          "\(pause):2: error: invalid value \"0\" for MaxPause= in [Plan]: must be longer than 0",
        ].sorted())
    #expect(Set(loaded.configuration.plans.keys) == ["odd"])
    #expect(loaded.checkReport.exitCode == 1)
  }

  /// "\u{600}" is a prepended mark, one Character with the dot after it: the name is still
  /// "x\u{600}", which cannot name a plan, and the file is still a plan file.
  @Test func planFile_NamedWithAMarkBeforeTheDot_IsReportedByItsWholeName() {
    let fixture = ConfigurationFixture()
    let file = fixture.write("plans/x\u{600}.conf", "[Plan]\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description)
        == ["\(file): error: \"x\u{600}\" cannot name a plan: it may hold only a-z, 0-9, _, - and ."])
    #expect(loaded.configuration.plans.isEmpty)
  }

  @Test func planFile_LinkedToDevNull_IsMasked() throws {
    let fixture = ConfigurationFixture()
    try FileManager.default.createDirectory(
      atPath: fixture.directory + "/plans", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(
      atPath: fixture.directory + "/plans/pro.conf", withDestinationPath: "/dev/null")
    let loaded = fixture.load()
    #expect(loaded.diagnostics.isEmpty)
    #expect(loaded.configuration.plans.isEmpty)
  }

  @Test func planFile_RemindersNotShorterThanItsLength_IsAWarningOnItsLine() throws {
    let fixture = ConfigurationFixture()
    let file = fixture.write("plans/short.conf", "[Plan]\nLength=2d\nReminders=3d, 1d\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description) == [
        "\(file):3: warning: reminders 3d not shorter than the plan's length 2d: its trials start with them "
          + "already due, and they are skipped"
      ])
    #expect(loaded.configuration.plans["short"]?.length == .days(2))
  }

  @Test func labelsValue_QuotedOrNot_IsSplitIntoPairs() throws {
    #expect(
      try PlanFiles.labelPairs("a=1  b=\"two words\" \"c=x y\"").map { "\($0.0)|\($0.1)" } == [
        "a|1", "b|two words", "c|x y",
      ])
    #expect(throws: InvalidValue.self) { try PlanFiles.labelPairs("a=\"open") }
    #expect(throws: InvalidValue.self) { try PlanFiles.labelPairs("novalue") }
    #expect(throws: InvalidValue.self) { try PlanFiles.labelPairs("=x") }
  }
}

/// What a start takes from its plan, and what it keeps of its own.
@Suite struct PlanResolutionTests {
  static let now = Date(timeIntervalSince1970: 1_795_788_000)
  static let pro = TrialPlan(
    name: "pro", length: .days(14), reminders: try! ReminderSchedule([.days(7)]),
    labels: try! TrialLabels(["tier": "pro", "region": "eu"]))
  static let defaults = TrialDefaults(length: .days(5), reminders: .default, plans: ["pro": pro])

  static func start(_ command: TrialCommand) -> TrialStart {
    guard case .start(let start) = command.kind else { fatalError("not a start") }
    return start
  }

  @Test func startWithAPlan_TakesItsValues_UnderItsOwn() throws {
    let start = Self.start(
      try .start(subject: "a", plan: "pro", labels: ["tier": "gold", "customer": "c-1"]))
    let resolved = try Self.defaults.resolve(start, now: Self.now)
    #expect(resolved.end == Self.now.adding(.days(14)))
    #expect(resolved.reminders.offsets == [.days(7)])
    #expect(resolved.attributes.plan == "pro")
    #expect(
      resolved.attributes.labels == (try TrialLabels(["tier": "gold", "region": "eu", "customer": "c-1"])))
  }

  @Test func startWithAPlan_AndItsOwnLengthAndReminders_KeepsThem() throws {
    let start = Self.start(try .start(subject: "a", plan: "pro", end: .after(.days(3)), reminders: []))
    let resolved = try Self.defaults.resolve(start, now: Self.now)
    #expect(resolved.end == Self.now.adding(.days(3)))
    #expect(resolved.reminders == ReminderSchedule.none)
    let at = Self.now.adding(.days(30))
    #expect(
      try Self.defaults.resolve(
        Self.start(try .start(subject: "a", plan: "pro", end: .at(at))), now: Self.now
      ).end == at)
  }

  @Test func startWithAnUnknownPlan_IsPlanNotFound() throws {
    let start = Self.start(try .start(subject: "a", plan: "team"))
    #expect(throws: TrialError(.planNotFound(name: "team"))) {
      try Self.defaults.resolve(start, now: Self.now)
    }
    #expect(throws: TrialError.invalid(.plan, "must start with a lower-case letter or a digit")) {
      try TrialCommand.start(subject: "a", plan: "_x")
    }
  }

  @Test func labelsOfPlanAndTrial_OverTheLimitTogether_AreRefusedNamingThePlan() throws {
    let own = Dictionary(uniqueKeysWithValues: (1...31).map { ("k\($0)", "v") })
    let start = Self.start(try .start(subject: "a", plan: "pro", labels: own))
    let error = #expect(throws: TrialError.self) { try Self.defaults.resolve(start, now: Self.now) }
    #expect(error?.description.contains("with those of plan \"pro\"") == true)
  }

}

/// The card networks' rule (`TrialPlan.meetsCardNetworkRule`), checked as plan files and the
/// main file are read.
@Suite struct PlanComplianceTests {
  @Test func plan_LongerThanAWeekWithoutAReminderAWeekBefore_IsWarnedAbout() {
    let fixture = ConfigurationFixture()
    let pro = fixture.write("plans/pro.conf", "[Plan]\nLength=14d\nReminders=3d, 1d\n")
    // The default reminders (3d, 1d) under a length of its own: the warning names Length=.
    let month = fixture.write("plans/month.conf", "[Plan]\nDescription=A month\nLength=30d\n")
    // A reminder as long as the trial is due at its start and skipped: it does not count.
    let long = fixture.write("plans/long.conf", "[Plan]\nLength=10d\nReminders=10d\n")
    // Met, or not asked for.
    fixture.write("plans/met.conf", "[Plan]\nLength=14d\nReminders=7d, 1d\n")
    fixture.write("plans/week.conf", "[Plan]\nLength=7d\nReminders=1d\n")
    fixture.write("plans/keys.conf", "[Plan]\nLength=1y\nReminders=none\nComplianceWarnings=no\n")
    let loaded = fixture.load()
    let rule =
      "Visa (since April 2020) and Mastercard require one for a free trial longer than 7 days that converts "
      + "to paid"
    #expect(
      loaded.diagnostics.map(\.description).sorted() == [
        "\(long):3: warning: reminders 1w 3d not shorter than the plan's length 1w 3d: its trials start with them "
          + "already due, and they are skipped",
        "\(long):3: warning: trials of plan long last 1w 3d and no reminder comes 7 days or more before their end "
          + "(Reminders=1w 3d): \(rule); add one (Reminders=7d), or set ComplianceWarnings=no if these trials do "
          + "not convert to paid",
        "\(month):3: warning: trials of plan month last 4w 2d and no reminder comes 7 days or more before their "
          + "end (Reminders=3d, 1d): \(rule); add one (Reminders=7d, 3d, 1d), or set ComplianceWarnings=no if "
          + "these trials do not convert to paid",
        "\(pro):3: warning: trials of plan pro last 2w and no reminder comes 7 days or more before their end "
          + "(Reminders=3d, 1d): \(rule); add one (Reminders=7d, 3d, 1d), or set ComplianceWarnings=no if these "
          + "trials do not convert to paid",
      ])
    // A warning keeps no plan out.
    #expect(loaded.configuration.plans.count == 6)
  }

  @Test func complianceWarnings_InTrials_IsEachPlansDefaultAndCoversTheDefaultTrial() {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=14d\nComplianceWarnings=no\n")
    fixture.write("plans/quiet.conf", "[Plan]\nLength=30d\n")
    let loud = fixture.write("plans/loud.conf", "[Plan]\nLength=30d\nComplianceWarnings=yes\n")
    let bad = fixture.write("plans/bad.conf", "[Plan]\nComplianceWarnings=maybe\n")
    let loaded = fixture.load()
    #expect(
      loaded.diagnostics.map(\.description).sorted() == [
        "\(bad):2: error: invalid value \"maybe\" for ComplianceWarnings= in [Plan]: not a boolean (yes or no)",
        "\(loud):2: warning: trials of plan loud last 4w 2d and no reminder comes 7 days or more before their end "
          + "(Reminders=3d, 1d): Visa (since April 2020) and Mastercard require one for a free trial longer than "
          + "7 days that converts to paid; add one (Reminders=7d, 3d, 1d), or set ComplianceWarnings=no if these "
          + "trials do not convert to paid",
      ])

    let warned = ConfigurationFixture(main: "[Trials]\nDefaultLength=14d\n").load()
    #expect(
      warned.diagnostics.map(\.description).contains {
        $0.contains(":2: warning: trials of the default length last 2w and no reminder comes 7 days or more")
          && $0.contains("(DefaultReminders=3d, 1d)") && $0.contains("[Trials] ComplianceWarnings=no")
      }, "\(warned.diagnostics)")
  }
}
