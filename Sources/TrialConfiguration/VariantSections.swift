import TrialCore

/// The `[Variant]` sections of a plan file, each a variant of the plan (`TrialVariant`):
///
///     [Variant]
///     Name=short
///     Weight=1
///     Length=14d
///
/// A plan file may have none or several, after or before its `[Plan]`; each needs `Name=`,
/// unique within the file. Their problems are reported as `[Plan]`'s are: unknown keys are
/// warnings, invalid values, a missing or repeated name errors naming the file and line.
enum VariantSections {
  static let section = "Variant"
  static let keys = documentation.keys.map(\.name)

  /// `[Variant]` as the manual describes it.
  static let documentation = ConfigurationDocumentation.Section(
    name: section,
    summary:
      "A variant of the plan (none or several sections, up to \(TrialVariant.maximumCount)): a share of its new "
      + "trials, by weight, with its own length, reminders, grace or labels. A start of the plan that names no "
      + "variant (StartTrial's variant, trialwatchctl start --variant) gets one by a stable hash of the subject's "
      + "key (SubjectKey=) and the plan's name: the same subject always gets the same variant (docs/lifecycle.md, "
      + "Variants, gives the function). The trial keeps its variant (the attribute variant, TRIAL_VARIANT in "
      + "the journal) and what it took from it; a change of the variants applies to trials started after.",
    keys: [
      .init(
        name: "Name", valueName: "name", defaultText: "", defaultDescription: "none: required",
        meaning: "The variant's name, unique within the plan: 1 to 64 of a-z, 0-9, _, - and ., as a plan's."),
      .init(
        name: "Weight", valueName: "count", defaultText: "1", defaultDescription: nil,
        meaning:
          "Its share of the starts that name no variant: its weight of the sum of the weights, a whole number "
          + "from 1 to \(TrialVariant.maximumWeight)."),
      .init(
        name: "Length", valueName: "span", defaultText: "", defaultDescription: "the plan's",
        meaning: "The length of the variant's trials."),
      .init(
        name: "Reminders", valueName: "span[, span...]", defaultText: "", defaultDescription: "the plan's",
        meaning: "Reminders before the end of the variant's trials; none for none."),
      .init(
        name: "Grace", valueName: "span", defaultText: "", defaultDescription: "the plan's",
        meaning: "The grace of the variant's trials, as the plan's Grace=."),
      .init(
        name: "Labels", valueName: "key=value ...", defaultText: "", defaultDescription: "none",
        meaning: "Labels the variant's trials get over the plan's (a start's own win over both), as Labels=."),
    ])

  /// The variants `text` describes, in its order; `valid` false when any had an error (reported).
  static func read(_ text: String, file: String, diagnostics: inout [ConfigurationDiagnostic]) -> (
    variants: [TrialVariant], valid: Bool
  ) {
    let parsed = ConfigurationSyntax.parse(text, file: file)
    let headers = parsed.sections.filter { $0.name == section }.map(\.line)
    var variants = headers.map { _ in TrialVariant(name: "") }
    var labels = headers.map { _ in [String: String]() }
    var named = headers.map { _ in Int?.none }
    var valid = true
    for assignment in parsed.assignments where assignment.section == section {
      guard let index = headers.lastIndex(where: { $0 < assignment.line }) else { continue }
      let (key, value, line) = (assignment.key, assignment.value, assignment.line)
      guard keys.contains(key) else {
        diagnostics.append(
          .init(.warning, file: file, line: line, "unknown key \"\(key)\" in [\(section)], ignored"))
        continue
      }
      do throws(InvalidValue) {
        switch key {
        case "Name":
          if let problem = TrialPlan.validateName(value) { throw InvalidValue(reason: "the name \(problem)") }
          variants[index].name = value
          named[index] = line
        case "Weight": variants[index].weight = try weight(value)
        case "Length":
          variants[index].length = value.isEmpty ? nil : try ConfigurationSchema.positiveSpan(value)
        case "Reminders":
          variants[index].reminders = value.isEmpty ? nil : try ConfigurationSchema.reminders(value)
        case "Grace": variants[index].grace = value.isEmpty ? nil : try ConfigurationSchema.grace(value)
        default:
          if value.isEmpty { labels[index] = [:] }
          for (key, text) in try PlanFiles.labelPairs(value) { labels[index][key] = text }
        }
      } catch {
        valid = false
        diagnostics.append(
          .init(
            .error, file: file, line: line,
            "invalid value \"\(value)\" for \(key)= in [\(section)]: \(error.reason)"))
      }
    }
    var lines: [String: Int] = [:]
    for (index, header) in headers.enumerated() {
      do {
        variants[index].labels = try TrialLabels(labels[index])
      } catch {
        valid = false
        diagnostics.append(
          .init(.error, file: file, line: header, "invalid Labels= in [\(section)]: \(error)"))
      }
      guard let line = named[index] else {
        valid = false
        diagnostics.append(
          .init(.error, file: file, line: header, "[\(section)] without Name=: a variant needs one"))
        continue
      }
      if let first = lines[variants[index].name] {
        valid = false
        diagnostics.append(
          .init(
            .error, file: file, line: line,
            "variant \"\(variants[index].name)\" is named twice in the plan (first on line \(first))"))
      }
      lines[variants[index].name] = lines[variants[index].name] ?? line
    }
    if headers.count > TrialVariant.maximumCount {
      valid = false
      diagnostics.append(
        .init(
          .error, file: file, line: headers[TrialVariant.maximumCount],
          "more than \(TrialVariant.maximumCount) [\(section)] sections: a plan has at most \(TrialVariant.maximumCount) variants"
        ))
    }
    return (variants, valid)
  }

  /// `Weight=`: a whole number, 1 to `TrialVariant.maximumWeight`.
  static func weight(_ value: String) throws(InvalidValue) -> Int {
    guard let weight = Int(value), (1...TrialVariant.maximumWeight).contains(weight) else {
      throw InvalidValue(reason: "not a whole number from 1 to \(TrialVariant.maximumWeight)")
    }
    return weight
  }
}
