import Testing

@testable import TrialConfiguration
@testable import TrialDaemon
@testable import TrialManual

/// trialwatch.conf(5) against the schema the daemon applies: every key, in its section, with
/// its default.
@Suite struct ConfigurationPageTests {
  /// The keys of `keys` the page does not describe, under its section's heading, with its
  /// default: `[CatchUp] ReminderGrace=` and so on.
  static func undescribed(_ keys: [(section: String, name: String, defaultText: String)], in source: String)
    -> [String]
  {
    let sections = Pages.sections(source)
    return keys.compactMap { key in
      let items = Pages.items(sections["[\(key.section)] SECTION OPTIONS"] ?? [])
      let described = items.contains { item in
        item.tag.hasPrefix(key.name + "=") && Pages.text(item.body).contains("Default: \(key.defaultText).")
      }
      return described ? nil : "[\(key.section)] \(key.name)= (default \(key.defaultText))"
    }
  }

  /// Each key with its default as the page states it: the sample's text, "none" for an empty
  /// one, or the description of a default the sample cannot write.
  static var schemaKeys: [(section: String, name: String, defaultText: String)] {
    ConfigurationSchema.keys.map {
      ($0.section, $0.name, $0.defaultDescription ?? ($0.defaultText.isEmpty ? "none" : $0.defaultText))
    }
  }

  @Test func configurationPage_EveryKeyOfTheSchema_IsDescribedWithItsDefault() throws {
    let page = try Pages.page("trialwatch.conf")
    #expect(page.section == 5)
    #expect(ConfigurationSchema.keys.count >= 16)
    let missing = Self.undescribed(Self.schemaKeys, in: page.source)
    #expect(missing.isEmpty, "not on the page: \(missing)")
  }

  @Test func configurationPage_WithoutAKey_FailsTheCheck() throws {
    var documentation = ConfigurationDocumentation.current
    let removed = documentation.sections[1].keys.remove(at: 1)
    let source = ConfigurationPage(
      documentation: documentation, date: Pages.date, source: TrialwatchManual.source, seeAlso: []
    ).render()
    #expect(
      Self.undescribed(Self.schemaKeys, in: source)
        == ["[\(documentation.sections[1].name)] \(removed.name)= (default \(removed.defaultText))"])
  }

  @Test func configurationPage_DefaultsTheSampleCannotWrite_AreStatedInWords() throws {
    let sections = Pages.sections(try Pages.page("trialwatch.conf").source)
    let items = Pages.items(sections["[PostgreSQL] SECTION OPTIONS"] ?? [])
    let body = { (name: String) in
      items.first { $0.tag.hasPrefix(name + "=") }.map { Pages.text($0.body) } ?? ""
    }
    #expect(body("Connection").contains("Default: none."))
    #expect(body("NodeName").contains("Default: the host name"))
    #expect(body("Shards").contains("Default: 256."))
    #expect(body("Connection").contains("must not hold the password"))
    let store = Pages.text(sections["[Store] SECTION OPTIONS"] ?? [])
    #expect(store.contains("Default: lmdb."))
  }

  @Test func configurationPage_EveryKey_SaysWhatItMeans() throws {
    let sections = Pages.sections(try Pages.page("trialwatch.conf").source)
    for key in ConfigurationSchema.keys {
      #expect(key.meaning.hasSuffix("."), "\(key.name)")
      let item = Pages.items(sections["[\(key.section)] SECTION OPTIONS"] ?? []).first {
        $0.tag == "\(key.name)=\(key.valueName)"
      }
      let firstWords = key.meaning.split(separator: " ").prefix(4).joined(separator: " ")
      #expect(item.map { Pages.text($0.body).contains(firstWords) } == true, "\(key.name): \(firstWords)")
    }
  }

  @Test func configurationDocumentation_EverySection_HasASummaryAndItsKeys() {
    let documentation = ConfigurationDocumentation.current
    #expect(documentation.sections.map(\.name) == ConfigurationSchema.sections)
    for section in documentation.sections {
      #expect(section.summary.hasSuffix("."), "[\(section.name)]")
      #expect(!section.keys.isEmpty)
    }
    #expect(documentation.sections.flatMap(\.keys).count == ConfigurationSchema.keys.count)
  }

  /// The plan files' and the webhook endpoints' files: each key of their one section, with its
  /// default, and where the files are.
  @Test(arguments: [
    ("PLAN FILES", ConfigurationDocumentation.current.plan, "/etc/trialwatch/plans/*.conf"),
    ("WEBHOOK ENDPOINT FILES", ConfigurationDocumentation.current.webhook, "/etc/trialwatch/webhooks/*.conf"),
  ])
  func configurationPage_FilesOfOneSection_DescribeEveryKeyWithItsDefault(
    title: String, section: ConfigurationDocumentation.Section, files: String
  ) throws {
    let sections = Pages.sections(try Pages.page("trialwatch.conf").source)
    let items = Pages.items(sections[title] ?? [])
    #expect(items.first?.tag == "[\(section.name)]")
    #expect(items.first.map { Pages.text($0.body).contains(String(section.summary.prefix(40))) } == true)
    #expect(section.keys.count >= 8)
    for key in section.keys {
      let item = items.first { $0.tag.hasPrefix(key.name + "=") }
      let body = item.map { Pages.text($0.body) } ?? ""
      #expect(body.contains("Default: \(key.defaultDescription ?? key.defaultText)."), "\(key.name): \(body)")
      #expect(
        body.contains(key.meaning.split(separator: " ").prefix(4).joined(separator: " ")), "\(key.name)")
    }
    #expect(Pages.text(sections["FILES"] ?? []).contains(files))
  }

  @Test func configurationPage_Sections_AreThoseOfAFileFormatsPage() throws {
    let page = try Pages.page("trialwatch.conf")
    let sections = Pages.sections(page.source)
    for title in ["NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "FILES", "SEE ALSO"] {
      #expect(sections[title] != nil, "\(title)")
    }
    #expect(page.source.contains(".TH TRIALWATCH.CONF 5 \(Pages.date) \"trialwatch \(Daemon.version)\""))
    let seeAlso = Pages.text(sections["SEE ALSO"] ?? [])
    #expect(seeAlso.contains("trialwatchctl(1)") && seeAlso.contains("trialwatchd(8)"))
  }
}
