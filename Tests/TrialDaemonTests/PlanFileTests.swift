import Foundation
import Testing
import TrialCore

@testable import TrialDaemon

/// Plan files, read as the daemon reads them: `plans/NAME.conf` beside the main file.
@Suite struct PlanFileTests {
  @Test func planFile_WithEveryKey_IsThePlan() throws {
    let fixture = ConfigurationFixture(main: "[Trials]\nDefaultLength=9d\n")
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
    // What a plan leaves out is the main file's.
    let basic = try #require(loaded.configuration.plans["basic"])
    #expect(basic.length == .days(9))
    #expect(basic.reminders == ReminderSchedule.default)
    #expect(basic.labels == .none && basic.description == nil)
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
        ].sorted())
    #expect(Set(loaded.configuration.plans.keys) == ["odd"])
    #expect(loaded.checkReport.exitCode == 1)
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
