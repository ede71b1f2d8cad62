import Testing
import TrialCore

@Suite struct TrialLabelsTests {
  @Test func labels_AreKeptInKeyOrder() throws {
    let labels = try TrialLabels(["tier": "pro", "customer": "c-991", "region": "eu"])
    #expect(labels.pairs.map(\.key) == ["customer", "region", "tier"])
    #expect(labels["tier"] == "pro" && labels["absent"] == nil && labels.count == 3)
    #expect(labels.description == "customer=c-991, region=eu, tier=pro")
  }

  @Test(arguments: [
    ("Tier", "must start with a lower-case letter"), ("1st", "must start with a lower-case letter"),
    ("", "must start with a lower-case letter"), ("tier-2", "may only contain a-z, 0-9 and _"),
    ("é", "must start with a lower-case letter"), (String(repeating: "k", count: 33), "longer than 32"),
  ])
  func key_Refused_NamingTheLabel(key: String, problem: String) {
    let error = #expect(throws: TrialLabels.Invalid.self) { try TrialLabels([key: "v"]) }
    #expect(error?.key == key && error?.description.contains(problem) == true, "\(String(describing: error))")
  }

  /// Found by the configuration fuzz target (FuzzTesting/Regressions/configuration/
  /// invalid-label-named-at-random): of several invalid labels, the one named followed the
  /// dictionary's order, which differs from one dictionary to the next.
  @Test func labels_WithSeveralInvalid_NameTheFirstInKeyOrder() throws {
    for count in 1...20 {
      var labels: [String: String] = ["team": "growth\u{1}", "Tier": "pro", "zone": "\u{7}"]
      for extra in 0..<count { labels["ok\(extra)"] = "fine" }
      let error = #expect(throws: TrialLabels.Invalid.self) { try TrialLabels(labels) }
      #expect(error?.key == "Tier", "\(String(describing: error))")
      let changed = #expect(throws: TrialLabels.Invalid.self) {
        try TrialLabels.none.applying(labels.mapValues { $0 })
      }
      #expect(changed?.key == "Tier", "\(String(describing: changed))")
    }
  }

  @Test func keys_AtTheirLimits_AreTaken() throws {
    let longest = "k" + String(repeating: "_9", count: 15) + "z"
    #expect(longest.utf8.count == 32)
    #expect(
      try TrialLabels([longest: "", "a": "ü ✓ 漢字", "b_2": String(repeating: "v", count: 512)]).count == 3)
  }

  @Test(arguments: [
    (String(repeating: "v", count: 513), "longer than 512 bytes"), ("line\nbreak", "control character"),
    ("tab\there", "control character"), ("del\u{7F}", "control character"), ("nul\u{0}", "control character"),
    ("c1 \u{85}", "control character"),
  ])
  func value_Refused_NamingTheLabel(value: String, problem: String) {
    let error = #expect(throws: TrialLabels.Invalid.self) { try TrialLabels(["note": value]) }
    #expect(
      error?.key == "note" && error?.description.contains(problem) == true, "\(String(describing: error))")
  }

  @Test func theWhole_IsLimitedInCountAndSize() throws {
    let thirtyTwo = Dictionary(uniqueKeysWithValues: (0..<32).map { ("k\($0)", "v") })
    #expect(try TrialLabels(thirtyTwo).count == 32)
    let tooMany = #expect(throws: TrialLabels.Invalid.self) {
      try TrialLabels(thirtyTwo.merging(["k99": "v"]) { $1 })
    }
    #expect(tooMany?.key == nil && tooMany?.description == "labels are 33, more than 32")
    // Eight values of 500 bytes and their keys: 4,016 bytes; a ninth of 100 passes 4 KiB.
    let eight = Dictionary(
      uniqueKeysWithValues: (0..<8).map { ("k\($0)", String(repeating: "v", count: 500)) })
    #expect(try TrialLabels(eight).count == 8)
    let tooLarge = #expect(throws: TrialLabels.Invalid.self) {
      try TrialLabels(eight.merging(["k8": String(repeating: "v", count: 100)]) { $1 })
    }
    #expect(tooLarge?.description == "labels take 4118 bytes, more than 4096")
  }

  @Test func ascendingPairs_AreCheckedLikeAnyLabels() throws {
    let pairs = [(key: "a", value: "1"), (key: "b", value: "2")]
    #expect(try TrialLabels(ascending: pairs) == TrialLabels(["b": "2", "a": "1"]))
    let reversed = #expect(throws: TrialLabels.Invalid.self) { try TrialLabels(ascending: pairs.reversed()) }
    #expect(reversed?.key == "a" && reversed?.problem == "is out of order or repeated")
    let refused = #expect(throws: TrialLabels.Invalid.self) {
      try TrialLabels(ascending: [(key: "B", value: "")])
    }
    #expect(refused?.key == "B")
  }

  @Test func applying_SetsReplacesAndRemoves() throws {
    let labels = try TrialLabels(["tier": "pro", "customer": "c-991"])
    let changed = try labels.applying(["tier": "enterprise", "customer": nil, "region": "eu"])
    #expect(changed == (try TrialLabels(["tier": "enterprise", "region": "eu"])))
    #expect(try labels.applying([:]) == labels)
    #expect(try labels.applying(["absent": nil]) == labels)
    let error = #expect(throws: TrialLabels.Invalid.self) { try labels.applying(["Bad": nil]) }
    #expect(error?.key == "Bad")
  }

  @Test func storedFields_ReadBack_KeepWhatThisVersionDoesNotKnow() throws {
    let attributes = TrialAttributes(
      subject: "acme-42", labels: try TrialLabels(["tier": "pro", "customer": "c-991"]),
      unknown: ["future": "value", "zeta": "z"])
    #expect(
      attributes.storedFields.map(\.name) == ["future", "label.customer", "label.tier", "zeta"])
    #expect(try TrialAttributes(subject: "acme-42", storedFields: attributes.storedFields) == attributes)
    #expect(TrialAttributes(subject: "plain").storedFields.isEmpty)
  }

  @Test func variables_OfAttributes_NameTheSubjectThenEachLabel() throws {
    let attributes = TrialAttributes(
      subject: "acme-42", labels: try TrialLabels(["tier": "pro", "customer": "c"]))
    #expect(
      attributes.variables.map { "\($0.name)=\($0.value)" } == [
        "TRIAL_SUBJECT=acme-42", "TRIAL_LABEL_CUSTOMER=c", "TRIAL_LABEL_TIER=pro",
      ])
  }

  @Test func hasOnlyLabels_FollowsTheTableOfNamedAttributes() throws {
    let labels = try TrialLabels(["tier": "pro"])
    #expect(TrialAttributes(subject: "acme-42").hasOnlyLabels)
    #expect(TrialAttributes(subject: "acme-42", labels: labels).hasOnlyLabels)
    #expect(!TrialAttributes(subject: "acme-42", unknown: ["future": "x"]).hasOnlyLabels)
    // Every named attribute but the subject, set, makes the stored form more than labels.
    for named in TrialAttributes.named where named.name != "subject" {
      let attributes = try TrialAttributes(
        subject: "acme-42", storedFields: [(named.name, "x"), ("label.tier", "pro")])
      #expect(!attributes.hasOnlyLabels, "\(named.name)")
      #expect(attributes.storedFields.map(\.name) == [named.name, "label.tier"].sorted())
    }
  }

  /// Found by the text fuzz target (FuzzTesting/Regressions/text/
  /// export-label-key-with-a-combining-mark): a label key starting with a combining mark hid
  /// the `label.` prefix from a comparison of text, and the label was kept, unchecked, as an
  /// attribute of another name, which an export then wrote and an import refused.
  @Test func storedFields_WithACombiningMarkAfterTheLabelPrefix_AreALabelAndChecked() {
    let name = TrialAttributes.labelPrefix + "\u{313}tier"
    #expect(TrialAttributes.labelKey(storedName: name) == "\u{313}tier")
    let error = #expect(throws: TrialLabels.Invalid.self) {
      try TrialAttributes(subject: "a", storedFields: [(name: name, value: "pro")])
    }
    #expect(error?.key == "\u{313}tier")
    #expect(TrialAttributes.labelKey(storedName: "plan") == nil)
  }

  @Test func attributes_BuiltInAnyOrder_AreEqualAndHashAlike() throws {
    var built = TrialAttributes(subject: "acme-42")
    built.plan = "pro"
    built.labels = try TrialLabels(["tier": "pro"])
    let direct = TrialAttributes(subject: "acme-42", plan: "pro", labels: try TrialLabels(["tier": "pro"]))
    #expect(built == direct)
    #expect(built.hashValue == direct.hashValue)
    built.plan = nil
    built.labels = .none
    #expect(built == TrialAttributes(subject: "acme-42"))
    #expect(built != TrialAttributes(subject: "acme-43"))
    #expect(built.hashValue == TrialAttributes(subject: "acme-42").hashValue)
  }
}
