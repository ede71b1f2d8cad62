import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

struct Plans: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the plans: length, reminders, labels and active trials of each.",
    discussion: """
      A plan is a named kind of trial, one file each: /etc/trialwatch/plans/NAME.conf, read when the daemon \
      starts and at systemctl reload trialwatch. A trial started with --plan takes its length, reminders and \
      labels, and keeps them when the plan changes later. VARIANTS lists its [Variant] sections as NAME:WEIGHT, \
      FOLLOWUPS the spans after a trial's expiry at which its follow-ups fire (FollowUps=), MILESTONES the \
      spans after its start at which its milestones fire (Milestones=). \
      EXTENSIONS shows the plan's limits on extending \
      its trials, MaxExtensions= and MaxLength= (2x/4w 2d: at most twice, 30 days from start to end in all), \
      which apply as the plan is loaded now.

      Example: trialwatchctl plans
      """)

  @OptionGroup var global: GlobalOptions

  func run(_ session: Session) throws {
    try session.show(Trials.listPlans, ListPlansParameters()) { $0.present(plans: $1.plans) }
  }
}

struct GrantAgain: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "grant-again",
    abstract: "Let a subject start the trial of a plan granted once (Once=) again.",
    discussion: """
      A plan with Once=plan or Once=all records every subject that had its trial, for good; a start for that \
      subject is then refused (TrialAlreadyUsed). This removes the record, so that the subject may start one \
      trial more, which is recorded in turn. The subject is matched as the plan's SubjectKey= says. The \
      journal records who did it. Needs the rights of a change.

      Example: trialwatchctl grant-again alice@example.com --plan pro
      """)

  @OptionGroup var global: GlobalOptions
  @Argument(help: "The subject, as a start would give it.") var subject: String
  @Option(help: "The plan granted once.", completion: PlanOption.completion) var plan: String

  func validate() throws {
    if let problem = Trial.validateSubject(subject) { throw ValidationError("SUBJECT: \(problem)") }
    _ = try PlanOption.checked(plan)
  }

  func run(_ session: Session) throws {
    try session.show(Trials.grantAgain, GrantAgainParameters(subject: subject, plan: plan)) {
      $0.presentGrantAgain($1, subject: subject, plan: plan)
    }
  }
}

/// Options that name a plan.
enum PlanOption {
  /// Checks a `--plan` value as the daemon would.
  static func checked(_ plan: String?, option: String = "--plan", what: String = "plan") throws -> String? {
    if let plan, let problem = TrialPlan.validateName(plan) {
      throw ValidationError("\(option): the \(what) name \"\(plan)\" \(problem)")
    }
    return plan
  }

  /// Completion of a plan name from the running daemon (`ListPlans`, without counting
  /// trials): quiet and quick as `TrialCompletion`, with no candidates when the daemon cannot
  /// be reached.
  static let completion = CompletionKind.custom { words, _, prefix in
    candidates(words: words, prefix: prefix, variables: ProcessInfo.processInfo.environment)
  }

  static func candidates(words: [String], prefix: String, variables: [String: String]) -> [String] {
    TrialCompletion.names(words: words, prefix: prefix, variables: variables) { client in
      try client.call(Trials.listPlans, ListPlansParameters(activeTrials: false)).plans.map(\.name)
    }
  }

}

extension TrialPresenter {
  public func present(plans: [PlanObject]) {
    let rows = plans.map { plan -> [String] in
      let spans = { (spans: [Span]?) -> String in
        spans.map { $0.map { TimeSpan.format($0.duration) }.joined(separator: ", ") } ?? "-"
      }
      return [
        plan.name, TimeSpan.format(plan.length.duration), reminders(plan.reminders.map(\.duration)),
        plan.labels.isEmpty ? "-" : labels(plan.labels), Self.once(plan),
        plan.maxPause.map { TimeSpan.format($0.duration) } ?? "-", Self.extensionLimits(plan),
        plan.grace.map { TimeSpan.format($0.duration) } ?? "-", Self.variants(plan),
        spans(plan.followUps), spans(plan.milestones),
        plan.activeTrials.map(String.init) ?? "-", plan.description ?? "",
      ]
    }
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: [
            "NAME", "LENGTH", "REMINDERS", "LABELS", "ONCE", "MAXPAUSE", "EXTENSIONS", "GRACE", "VARIANTS",
            "FOLLOWUPS", "MILESTONES",
            "ACTIVE",
            "DESCRIPTION",
          ],
          rows: rows),
        emptyMessage: "No plans. A plan is a file /etc/trialwatch/plans/NAME.conf (trialwatch.conf(5))."))
  }
}

extension TrialPresenter {
  /// `plan` or `all`, with the subject key when it is not `exact` (`all/email`) and the
  /// cooldown when there is one (`plan/270d`, `all/email/270d`); `-` for no.
  static func once(_ plan: PlanObject) -> String {
    guard let once = plan.once else { return "-" }
    return
      ([once] + [plan.subjectKey, plan.onceFor.map { TrialPlan.cooldownText($0.duration) }].compactMap { $0 })
      .joined(separator: "/")
  }

  /// The plan's variants as `NAME:WEIGHT`, comma-separated (`short:1,long:3`), or `-` for none.
  static func variants(_ plan: PlanObject) -> String {
    guard let variants = plan.variants, !variants.isEmpty else { return "-" }
    return variants.map { "\($0.name):\($0.weight)" }.joined(separator: ",")
  }

  /// The plan's limits on extensions: `2x` (MaxExtensions=), `4w 2d` in all (MaxLength=), both
  /// (`2x/4w 2d`), or `-` for none.
  static func extensionLimits(_ plan: PlanObject) -> String {
    let limits = [plan.maxExtensions.map { "\($0)x" }, plan.maxLength.map { TimeSpan.format($0.duration) }]
      .compactMap { $0 }
    return limits.isEmpty ? "-" : limits.joined(separator: "/")
  }

  public func presentGrantAgain(_ reply: GrantAgainReply, subject: String, plan: String) {
    guard let used = reply.used else {
      output.showMessage(
        "Subject \(subject) had no trial of plan \(plan) recorded: it may start one already.")
      return
    }
    output.showMessage(
      "Subject \(subject) may start a trial of plan \(plan) again (it had trial \(used.id) of plan \(used.plan), "
        + "started \(date(used.firstStartedAt)), as \(used.subject)"
        + (used.lastId.flatMap { last in
          last == used.id ? nil : "; its last, trial \(last), started \(used.lastStartedAt.map(date) ?? "?")"
        } ?? "") + ").")
  }
}
