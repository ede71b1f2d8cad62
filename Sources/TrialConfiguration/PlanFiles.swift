import TrialCore

/// The plan files: one per plan, `plans/NAME.conf` beside the main file
/// (`/etc/trialwatch/plans/pro.conf`), in systemd's syntax with one section, `[Plan]`:
///
///     [Plan]
///     Description=Pro, two weeks
///     Length=14d
///     Reminders=7d, 3d, 1d
///     Labels=tier=pro "team=growth team"
///
/// `Length=` and `Reminders=` default to `[Trials] DefaultLength=` and `DefaultReminders=`, and
/// `ComplianceWarnings=` (the card networks' rule, `TrialPlan.meetsCardNetworkRule`) to `[Trials]`'s;
/// `Labels=` takes `key=value` pairs separated by spaces (a pair in double quotes may hold
/// spaces), and more than one line adds to them; an empty assignment resets a key. A file
/// linked to /dev/null is masked. Problems are reported as the main file's are: unknown keys
/// and sections are warnings, invalid values errors naming the file and line.
enum PlanFiles {
  static let section = "Plan"
  static let keys = documentation.keys.map(\.name)

  /// `[Plan]` as the manual describes it.
  static let documentation = ConfigurationDocumentation.Section(
    name: section,
    summary:
      "The one section of a plan file, plans/NAME.conf beside trialwatch.conf: the plan NAME (1 to 64 of "
      + "a-z, 0-9, _, - and ., starting with a letter or digit). StartTrial with plan NAME (trialwatchctl start "
      + "SUBJECT --plan NAME) takes the plan's length, reminders and labels where its own duration, endsAt and "
      + "reminders leave them open; the trial keeps them when the plan changes later. Plan files are read "
      + "at start and at systemctl reload trialwatch, checked by trialwatchd --check-config; a file linked "
      + "to /dev/null is masked.",
    keys: [
      .init(
        name: "Description", valueName: "text", defaultText: "", defaultDescription: "none",
        meaning: "What the plan is, for people: trialwatchctl plans shows it."),
      .init(
        name: "Length", valueName: "span", defaultText: "", defaultDescription: "DefaultLength= of [Trials]",
        meaning: "The length of the plan's trials."),
      .init(
        name: "Reminders", valueName: "span[, span...]", defaultText: "",
        defaultDescription: "DefaultReminders= of [Trials]",
        meaning: "Reminders before the end of the plan's trials, comma-separated; none for none."),
      .init(
        name: "Labels", valueName: "key=value ...", defaultText: "", defaultDescription: "none",
        meaning:
          "Labels each trial of the plan gets, separated by spaces (a pair in double quotes may hold spaces); "
          + "the labels a start gives win over them. More than one Labels= line adds to the labels; an empty "
          + "one removes those before it. The limits of labels apply to the plan's and a trial's together."),
      .init(
        name: "ComplianceWarnings", valueName: "boolean", defaultText: "",
        defaultDescription: "ComplianceWarnings= of [Trials]",
        meaning:
          "Whether trialwatchd --check-config (and the start and reload of the daemon) warns when the plan's "
          + "trials are longer than 7 days and no reminder comes 7 days or more before their end: the rule Visa "
          + "(since April 2020) and Mastercard apply to free trials that convert to paid. Set it to no for a "
          + "plan whose trials do not convert to paid."),
      .init(
        name: "Once", valueName: "no|plan|all", defaultText: "", defaultDescription: "no",
        meaning:
          "Whether a subject gets the plan's trial once: no, as often as it has no active trial; plan, once "
          + "for this plan; all, once across every plan with Once=all. A subject that had it is recorded for "
          + "good (ending the trial, retention, a restore and an import keep the record), and StartTrial then "
          + "fails with io.trialwatch.TrialAlreadyUsed; trialwatchctl grant-again SUBJECT --plan NAME lets it "
          + "start one again; with OnceFor=, it may start one again that long after its last. Plans with "
          + "Once=all must agree on SubjectKey= and OnceFor=."),
      .init(
        name: "OnceFor", valueName: "span", defaultText: "", defaultDescription: "for ever",
        meaning:
          "With Once=plan or Once=all, how long the record of a subject's trial holds: the subject may start "
          + "the plan's trial again when at least this long has passed, on the daemon's clock, since its last "
          + "trial of the plan (with Once=all, of any plan with Once=all) started: OnceFor=270d grants a trial "
          + "again after 270 days. Until then StartTrial fails with "
          + "io.trialwatch.TrialAlreadyUsed naming when it may (availableAt). The record keeps the first "
          + "start and takes each later one as its last; a change of OnceFor= applies to the records "
          + "already kept. Without Once= it has no effect (a warning)."),
      .init(
        name: "SubjectKey", valueName: "exact|casefold|email", defaultText: "", defaultDescription: "exact",
        meaning:
          "How Once= tells subjects apart: exact, as given; casefold, with Unicode NFKC case folding (Alice and "
          + "ALICE are one subject); email, case folded, with the +tag of the local part dropped and, for "
          + "gmail.com and googlemail.com, its dots too (A.Lice+trial@GoogleMail.com is alice@gmail.com)."),
      .init(
        name: "MaxPause", valueName: "span", defaultText: "", defaultDescription: "no limit",
        meaning:
          "How long a trial of the plan stays paused (trialwatchctl pause) before it resumes by itself, with "
          + "the time left it had. The limit is taken when the trial is paused: a change applies to later "
          + "pauses."),
      .init(
        name: "MaxExtensions", valueName: "count", defaultText: "", defaultDescription: "no limit",
        meaning:
          "How many times a trial of the plan may be extended (trialwatchctl extend, ExtendTrial moving its end "
          + "later; a resume is not an extension); 0 allows none. One more is refused with "
          + "io.trialwatch.ExtensionRefused (limit max-extensions) and changes nothing. The limit is read from "
          + "the plan as loaded when the extension is asked for: a change applies to the trials open at once."
      ),
      .init(
        name: "MaxLength", valueName: "span", defaultText: "", defaultDescription: "no limit",
        meaning:
          "The longest a trial of the plan may run, from its start to its end, the time spent paused included; "
          + "not shorter than Length=. An extension that would end it later is refused with "
          + "io.trialwatch.ExtensionRefused (limit max-length, with the latest end allowed), a start whose own "
          + "duration or end passes it with InvalidParameter. A resume is never refused, though it may take "
          + "the end beyond. Read from the plan as loaded when it is checked, like MaxExtensions=."),
      .init(
        name: "RemindAfterCancel", valueName: "boolean", defaultText: "", defaultDescription: "no",
        meaning:
          "Whether a trial of the plan cancelled at its end (trialwatchctl cancel) still gets its reminders "
          + "until its end; with no, each reminder falling due meanwhile is skipped with the reason "
          + "cancel-at-end. Taken when the cancel is asked: a change applies to later cancels."),
      .init(
        name: "Grace", valueName: "span", defaultText: "", defaultDescription: "0 (none)",
        meaning:
          "How long a trial of the plan stays open after its end before it expires, from 0 (none) to 365d, "
          + "whole milliseconds. At its end the trial enters the state grace (the event grace-started) "
          + "instead of expiring, and expires at the end plus the grace (the event expiry); meanwhile it is "
          + "still the subject's open trial: ending it converted counts as converted, extending it makes it "
          + "active again. A trial takes the grace at its start: a change applies to trials started after."),
      .init(
        name: "FollowUps", valueName: "spans", defaultText: "", defaultDescription: "none",
        meaning:
          "Spans after a trial's expiry (its end, plus its grace) at which the event follow-up fires, e.g. "
          + "\"3d, 30d\": win-back messages; at most 32, each positive, whole milliseconds, at most 3650d. "
          + "A trial that expired or was cancelled gets them; a conversion of the trial, or a later trial of "
          + "its subject, calls them off (skipped: called-off-by-conversion, called-off-by-new-trial). A "
          + "trial takes them at its start: a change applies to trials started after."),
      .init(
        name: "Milestones", valueName: "spans", defaultText: "", defaultDescription: "none",
        meaning:
          "Spans after a trial's start at which the event milestone fires, e.g. \"1d, 2d\": still active a "
          + "day after starting; at most 32, each positive, whole milliseconds, at most 3650d. Each fires once, "
          + "while the trial is active; an end (expiry, conversion, cancel) or a pause skips those that have not "
          + "come (skipped: trial-ended, paused), and none fires after. An extension does not fire one again. A "
          + "trial takes them at its start: a change applies to trials started after."),
    ])

  /// The plans of `directory`, by name, each from its file over `defaults`. `unicodeUnavailable`
  /// says why subjects that are not ASCII cannot be case folded on this host, if they cannot
  /// (`ConfigurationLoader.unicodeUnavailable`).
  static func load(
    directory: String, defaults: TrialDefaults, complianceWarnings: Bool = true,
    unicodeUnavailable: () -> String? = { nil }, diagnostics: inout [ConfigurationDiagnostic],
    files: inout [String]
  ) -> [String: TrialPlan] {
    var plans: [String: TrialPlan] = [:]
    SectionFiles.each(
      in: directory, what: "plans", thing: "a plan", validateName: TrialPlan.validateName,
      diagnostics: &diagnostics,
      files: &files
    ) { planName, file, text, diagnostics in
      guard let text else { return }
      let plan = read(
        text, file: file, name: planName, defaults: defaults, complianceWarnings: complianceWarnings,
        diagnostics: &diagnostics)
      if let plan { plans[planName] = plan }
    }
    // Folding subjects that are not ASCII needs libunistring, opened at the first such subject.
    if let reason = unicodeUnavailable() {
      for plan in plans.values.sorted(by: { $0.name < $1.name })
      where plan.once != .no && plan.subjectKey != .exact {
        diagnostics.append(
          .init(
            .warning, file: directory + "/" + plan.name + ".conf", line: nil,
            "SubjectKey=\(plan.subjectKey.rawValue) folds subjects that are not ASCII with libunistring, "
              + "which cannot be opened: \(reason); such subjects will be refused until it is installed"))
      }
    }
    // Plans with Once=all share one record of each subject: they must key it alike.
    let sharing = plans.values.filter { $0.once == .all }.sorted { $0.name < $1.name }
    for plan in sharing where plan.subjectKey != sharing[0].subjectKey {
      diagnostics.append(
        .init(
          .error, file: directory + "/" + plan.name + ".conf", line: nil,
          "SubjectKey=\(plan.subjectKey.rawValue) differs from SubjectKey=\(sharing[0].subjectKey.rawValue) of "
            + "plan \(sharing[0].name): plans with Once=all share one record of each subject, so they must "
            + "tell subjects apart alike"))
    }
    for plan in sharing where plan.onceFor != sharing[0].onceFor {
      func text(_ plan: TrialPlan) -> String {
        plan.onceFor.map(TrialPlan.cooldownText) ?? "(none: for ever)"
      }
      diagnostics.append(
        .init(
          .error, file: directory + "/" + plan.name + ".conf", line: nil,
          "OnceFor=\(text(plan)) differs from OnceFor=\(text(sharing[0])) of plan \(sharing[0].name): plans with "
            + "Once=all share one record of each subject, so they must agree on when it may start again"))
    }
    return plans
  }

  /// The plan one file describes; nil when a value in it is invalid (reported).
  static func read(
    _ text: String, file: String, name: String, defaults: TrialDefaults, complianceWarnings: Bool = true,
    diagnostics: inout [ConfigurationDiagnostic]
  ) -> TrialPlan? {
    var plan = TrialPlan(name: name, length: defaults.length, reminders: defaults.reminders)
    var labels: [String: String] = [:]
    var labelsLine: Int?
    var complianceWarnings = complianceWarnings
    var (valid, assigned) = SectionFiles.read(
      text, file: file, section: section, keys: keys, kind: "a plan file", others: [VariantSections.section],
      diagnostics: &diagnostics
    ) { key, value, line throws(InvalidValue) in
      switch key {
      case "Description": plan.description = value.isEmpty ? nil : value
      case "Length":
        plan.length = value.isEmpty ? defaults.length : try ConfigurationSchema.positiveSpan(value)
      case "Reminders":
        plan.reminders = value.isEmpty ? defaults.reminders : try ConfigurationSchema.reminders(value)
      case "ComplianceWarnings": complianceWarnings = try ConfigurationSchema.boolean(value)
      case "Once":
        plan.once = value.isEmpty ? .no : try ConfigurationSchema.choice(value, of: TrialOnce.self)
      case "SubjectKey":
        plan.subjectKey =
          value.isEmpty ? .exact : try ConfigurationSchema.choice(value, of: SubjectKeyRule.self)
      case "MaxPause":
        plan.maxPause = value.isEmpty ? nil : try ConfigurationSchema.positiveSpan(value)
      case "OnceFor":
        plan.onceFor = value.isEmpty ? nil : try ConfigurationSchema.positiveSpan(value)
      case "MaxExtensions":
        plan.maxExtensions = value.isEmpty ? nil : try extensionCount(value)
      case "MaxLength":
        plan.maxLength = value.isEmpty ? nil : try ConfigurationSchema.positiveSpan(value)
      case "RemindAfterCancel":
        plan.remindAfterCancel = value.isEmpty ? false : try ConfigurationSchema.boolean(value)
      case "Grace":
        plan.grace = value.isEmpty ? .zero : try ConfigurationSchema.grace(value)
      case "FollowUps":
        plan.followUps = value.isEmpty || value == "none" ? .none : try ConfigurationSchema.followUps(value)
      case "Milestones":
        plan.milestones = value.isEmpty || value == "none" ? .none : try ConfigurationSchema.milestones(value)
      default:
        if value.isEmpty { labels = [:] }
        for (key, text) in try labelPairs(value) { labels[key] = text }
        labelsLine = line
      }
    }
    do {
      plan.labels = try TrialLabels(labels)
    } catch {
      valid = false
      diagnostics.append(
        .init(.error, file: file, line: labelsLine, "invalid Labels= in [\(section)]: \(error)"))
    }
    let variants = VariantSections.read(text, file: file, diagnostics: &diagnostics)
    plan.variants = variants.variants
    valid = valid && variants.valid
    if valid, plan.once == .no, let onceFor = plan.onceFor {
      diagnostics.append(
        .init(
          .warning, file: file, line: assigned["OnceFor"],
          "OnceFor=\(TrialPlan.cooldownText(onceFor)) has no effect without Once=plan or Once=all: the plan grants "
            + "its trial as often as a subject has none active"))
    }
    if valid, let maxLength = plan.maxLength, maxLength < plan.length {
      valid = false
      diagnostics.append(
        .init(
          .error, file: file, line: assigned["MaxLength"],
          "MaxLength=\(TimeSpan.format(maxLength)) in [\(section)] is shorter than the plan's length "
            + "\(TimeSpan.format(plan.length))"
            + (assigned["Length"] == nil ? " (DefaultLength= of [Trials])" : "")
            + ": its trials would start beyond it"))
    }
    for variant in plan.variants where valid {
      if let maxLength = plan.maxLength, let length = variant.length, length > maxLength {
        valid = false
        diagnostics.append(
          .init(
            .error, file: file, line: assigned["MaxLength"],
            "the length \(TimeSpan.format(length)) of variant \"\(variant.name)\" is longer than MaxLength="
              + "\(TimeSpan.format(maxLength)) of [\(section)]: its trials would start beyond it"))
      }
    }
    let tooLong = plan.reminders.offsets.filter { $0 >= plan.length }
    if valid, !tooLong.isEmpty {
      diagnostics.append(
        .init(
          .warning, file: file, line: assigned["Reminders"] ?? assigned["Length"],
          "reminders \(tooLong.map(TimeSpan.format).joined(separator: ", ")) not shorter than the plan's "
            + "length \(TimeSpan.format(plan.length)): its trials start with them already due, and they are skipped"
        ))
    }
    if valid, complianceWarnings,
      let warning = ConfigurationDiagnostic.cardNetworkRule(
        "trials of plan \(name)", length: plan.length, reminders: plan.reminders,
        keys: ("Reminders", "ComplianceWarnings=no"), file: file,
        line: assigned["Reminders"] ?? assigned["Length"])
    {
      diagnostics.append(warning)
    }
    return valid ? plan : nil
  }

  /// `MaxExtensions=`: a whole number, 0 to `ExtensionLimits.maximumCount`.
  static func extensionCount(_ value: String) throws(InvalidValue) -> Int {
    guard let count = Int(value), (0...ExtensionLimits.maximumCount).contains(count) else {
      throw InvalidValue(reason: "not a count from 0 to \(ExtensionLimits.maximumCount)")
    }
    return count
  }

  /// `key=value` pairs separated by spaces; a pair (or its value) in double quotes may hold
  /// spaces.
  static func labelPairs(_ value: String) throws(InvalidValue) -> [(String, String)] {
    var items: [String] = []
    var current = ""
    var quoted = false
    var started = false
    for character in value {
      if character == "\"" {
        quoted.toggle()
        started = true
      } else if character.isWhitespace && !quoted {
        if started { items.append(current) }
        current = ""
        started = false
      } else {
        current.append(character)
        started = true
      }
    }
    guard !quoted else { throw InvalidValue(reason: "a double quote is not closed") }
    if started { items.append(current) }
    var pairs: [(String, String)] = []
    for item in items {
      guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
        throw InvalidValue(reason: "\"\(item)\" is not key=value")
      }
      pairs.append((String(item[..<equals]), String(item[item.index(after: equals)...])))
    }
    return pairs
  }
}
